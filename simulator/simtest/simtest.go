// Package simtest drives a service's classroom through the web package's
// HTTP API, for tests: it serves one, and plays a scenario at a given pace
// to compare what each step told.
package simtest

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/hub"
	"github.com/zklockviz/zklockviz/lockservice"
	"github.com/zklockviz/zklockviz/simulator"
	"github.com/zklockviz/zklockviz/web"
)

// Classroom is svc's classroom served over HTTP, as serve --sim serves it.
type Classroom struct {
	URL     string
	Service string

	// owners are the owner secrets of the runs this client started, sent
	// back with every request as the page does: only a run's starter may
	// delete it.
	mu     sync.Mutex
	owners []string
}

// Serve registers svc (its Classroom set) and serves the web package's
// routes with h until the test ends.
func Serve(t testing.TB, svc lockservice.Service, h *hub.Hub) *Classroom {
	t.Helper()
	reg := &lockservice.Registry{}
	if err := reg.Register(svc); err != nil {
		t.Fatal(err)
	}
	srv, err := web.New(web.Config{Hub: h, Services: reg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return &Classroom{URL: ts.URL, Service: svc.Name}
}

// Call sends one request and fails the test unless the answer's status is
// want; out, when not nil, receives the JSON body.
func (c *Classroom) Call(t testing.TB, method, path, body string, want int, out any) {
	t.Helper()
	if err := c.Do(method, path, body, want, out); err != nil {
		t.Fatal(err)
	}
}

// Do is Call for any goroutine: it answers the error.
func (c *Classroom) Do(method, path, body string, want int, out any) error {
	req, err := http.NewRequest(method, c.URL+path, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	c.mu.Lock()
	if len(c.owners) > 0 {
		req.Header.Set(web.RunOwnerHeader, strings.Join(c.owners, ", "))
	}
	c.mu.Unlock()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if secret := resp.Header.Get(web.RunOwnerHeader); secret != "" {
		c.mu.Lock()
		c.owners = append(c.owners, secret)
		c.mu.Unlock()
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: %d %s, want %d", method, path, resp.StatusCode, b, want)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s %s: %v: %s", method, path, err, b)
		}
	}
	return nil
}

// Told is what a step told, without its times: its events (client and
// kind), the verdict and the violations so far, and the action next.
type Told struct {
	Events     []string
	Verdict    string
	Violations []string
	Next       string
}

// Tell is what state's step told.
func Tell(s simulator.State) Told {
	out := Told{Verdict: s.Verdict.Exclusion + "/" + s.Verdict.StaleWrite}
	for _, e := range s.Events {
		if e.Step == s.Step {
			out.Events = append(out.Events, e.Client+" "+e.Event)
		}
	}
	for _, v := range s.Violations {
		out.Violations = append(out.Violations, fmt.Sprintf("%s %v %v", v.Kind, v.Clients, v.Steps))
	}
	if s.Next != nil {
		out.Next = s.Next.Client + " " + s.Next.Action
	}
	return out
}

// Definition is sc as a POST /runs body.
func Definition(sc *simulator.Scenario) string {
	b, _ := json.Marshal(map[string]any{"definition": sc})
	return string(b)
}

func (c *Classroom) path(p string) string { return "/api/v1/sim/runs" + p + "?service=" + c.Service }

// start starts a run of body (a POST /runs body); stop deletes it.
func (c *Classroom) start(body string) (st simulator.State, stop func(), err error) {
	if err := c.Do("POST", c.path(""), body, 201, &st); err != nil {
		return st, nil, err
	}
	return st, func() { c.Do("DELETE", c.path("/"+st.ID), "", 204, nil) }, nil
}

// Stepped steps a run of body to its end, pausing between steps, and
// tells what each step told.
func (c *Classroom) Stepped(body string, pause time.Duration) ([]Told, error) {
	st, stop, err := c.start(body)
	if err != nil {
		return nil, err
	}
	defer stop()
	var out []Told
	for st.Step < st.Planned {
		if st.Step > 0 {
			time.Sleep(pause)
		}
		if err := c.Do("POST", c.path("/"+st.ID+"/step"), "", 200, &st); err != nil {
			return nil, c.failed(st.ID, err)
		}
		if st.Error != "" {
			return nil, fmt.Errorf("step %d: %s", st.Step, st.Error)
		}
		out = append(out, Tell(st))
	}
	return out, nil
}

// failed adds the run's own error, which a 500 answer does not say, to err.
func (c *Classroom) failed(id string, err error) error {
	var st simulator.State
	if c.Do("GET", c.path("/"+id), "", 200, &st) == nil && st.Error != "" {
		return fmt.Errorf("%w (the run's error: %s)", err, st.Error)
	}
	return err
}

// Played plays a run of body at one step per gap, then scrubs back from
// the end to step 1, as the classroom's back key does, and tells what each
// step told.
func (c *Classroom) Played(body string, gap time.Duration) ([]Told, error) {
	st, stop, err := c.start(body)
	if err != nil {
		return nil, err
	}
	defer stop()
	run := "/" + st.ID
	if err := c.Do("POST", c.path(run+"/speed"), fmt.Sprintf(`{"speed":%.3f}`, 1.2/gap.Seconds()), 200, &st); err != nil {
		return nil, err
	}
	if err := c.Do("POST", c.path(run+"/play"), "", 200, &st); err != nil {
		return nil, err
	}
	bound := time.Duration(st.Planned+2)*(gap+5*time.Second) + 30*time.Second
	for deadline := time.Now().Add(bound); !st.Done && st.Error == ""; {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("play: at step %d of %d after %v", st.Step, st.Planned, bound)
		}
		time.Sleep(100 * time.Millisecond)
		if err := c.Do("GET", c.path(run), "", 200, &st); err != nil {
			return nil, err
		}
	}
	if st.Error != "" {
		return nil, fmt.Errorf("play: step %d: %s", st.Step, st.Error)
	}
	out := make([]Told, st.Planned)
	for k := st.Planned; k >= 1; k-- {
		if k < st.Planned {
			if err := c.Do("POST", c.path(run+"/back"), "", 200, &st); err != nil {
				return nil, err
			}
		}
		out[k-1] = Tell(st)
	}
	return out, nil
}

// SameStory fails the test where got, step by step, tells another story
// than want; steps are the scenario's, for the messages.
func SameStory(t testing.TB, got, want []Told, steps []simulator.Action) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d steps, want %d", len(got), len(want))
	}
	for k, w := range want {
		g := got[k]
		if !slices.Equal(w.Events, g.Events) || w.Verdict != g.Verdict || !slices.Equal(w.Violations, g.Violations) || w.Next != g.Next {
			t.Errorf("step %d (%s %s) tells another story:\n got %+v\nwant %+v", k+1, steps[k].Client, steps[k].Action, g, w)
		}
	}
}

// ExpiresOnlyWhen fails the test where a step of told has an expire event
// but its action is none of actions (the steps that let a lease run out).
func ExpiresOnlyWhen(t testing.TB, told []Told, steps []simulator.Action, actions ...string) {
	t.Helper()
	for k, s := range told {
		for _, e := range s.Events {
			if strings.HasSuffix(e, " "+simulator.EvExpire) && !slices.Contains(actions, steps[k].Action) {
				t.Errorf("step %d (%s %s): an expiry, want one only in a step that %v", k+1, steps[k].Client, steps[k].Action, actions)
			}
		}
	}
}

// Pace is one scenario to tell at different paces: gap is longer than any
// session, lease or key expiry the scenario sets.
type Pace struct {
	Scenario *simulator.Scenario
	Gap      time.Duration
}

// SamePaceStories runs every scenario of paces three ways at once: stepped
// with no pause, stepped with a pause of its gap after every step, and
// played at one step per gap then scrubbed back. Each slow way must tell
// what the fast one told at every step, and the fast one may tell of an
// expiry only in a step whose action is one of expiring. The classroom
// must allow 3 × len(paces) runs at once.
func (c *Classroom) SamePaceStories(t *testing.T, paces []Pace, expiring ...string) {
	t.Helper()
	const modes = 3
	type result struct {
		told []Told
		err  error
	}
	results := make([][modes]result, len(paces))
	var wg sync.WaitGroup
	for i, p := range paces {
		def := Definition(p.Scenario)
		for mode := range modes {
			wg.Go(func() {
				var r result
				switch mode {
				case 0:
					r.told, r.err = c.Stepped(def, 0)
				case 1:
					r.told, r.err = c.Stepped(def, p.Gap)
				case 2:
					r.told, r.err = c.Played(def, p.Gap)
				}
				results[i][mode] = r
			})
		}
	}
	wg.Wait()
	for i, p := range paces {
		t.Run(p.Scenario.Name, func(t *testing.T) {
			steps := p.Scenario.Steps
			fast := results[i][0]
			if fast.err != nil {
				t.Fatalf("stepped without a pause: %v", fast.err)
			}
			ExpiresOnlyWhen(t, fast.told, steps, expiring...)
			for mode, name := range map[int]string{
				1: fmt.Sprintf("stepped every %v", p.Gap),
				2: fmt.Sprintf("played at one step per %v, scrubbed back", p.Gap),
			} {
				t.Run(name, func(t *testing.T) {
					if err := results[i][mode].err; err != nil {
						t.Fatal(err)
					}
					SameStory(t, results[i][mode].told, fast.told, steps)
				})
			}
		})
	}
}

// WithParam is a copy of sc with its params' key set to v (a shorter
// expiry or lease, so a slow run takes seconds).
func WithParam(t testing.TB, sc *simulator.Scenario, key string, v any) *simulator.Scenario {
	t.Helper()
	params := map[string]any{}
	if len(sc.Params) > 0 {
		if err := json.Unmarshal(sc.Params, &params); err != nil {
			t.Fatalf("scenario %s: params: %v", sc.Name, err)
		}
	}
	params[key] = v
	out := *sc
	out.Params, _ = json.Marshal(params)
	return &out
}

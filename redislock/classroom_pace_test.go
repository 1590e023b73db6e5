package redislock

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

// classroomAPI serves a Redis classroom publishing to its own hub over the
// web package's HTTP API, as serve --sim does.
type classroomAPI struct {
	t   *testing.T
	url string
	hub *hub.Hub
}

func newClassroomAPI(t *testing.T, maxRuns int) *classroomAPI {
	t.Helper()
	skipWithoutRedis(t)
	h := hub.New()
	cls, hm, err := NewClassroom(simulator.ManagerConfig{IdleTimeout: -1, MaxRuns: maxRuns, Publish: h.Publish, Remove: h.Remove,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := hm.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	reg := &lockservice.Registry{}
	if err := reg.Register(lockservice.Service{Name: "redis", Title: "Redis", CheckName: func(string) error { return nil }, Classroom: cls}); err != nil {
		t.Fatal(err)
	}
	srv, err := web.New(web.Config{Hub: h, Services: reg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return &classroomAPI{t: t, url: ts.URL, hub: h}
}

// call sends one request and fails the test unless the answer's status is
// want; out, when not nil, receives the JSON body.
func (a *classroomAPI) call(t *testing.T, method, path, body string, want int, out any) {
	t.Helper()
	if err := a.do(method, path, body, want, out); err != nil {
		t.Fatal(err)
	}
}

// do is call for any goroutine: it answers the error.
func (a *classroomAPI) do(method, path, body string, want int, out any) error {
	req, err := http.NewRequest(method, a.url+path, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
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

// told is what a step told, without its times: its events (client and
// kind), the verdict and the violations so far, and the action next.
type told struct {
	Events     []string
	Verdict    string
	Violations []string
	Next       string
}

func tellOf(s simulator.State) told {
	out := told{Verdict: s.Verdict.Exclusion + "/" + s.Verdict.StaleWrite}
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

// TestPaceDoesNotChangeTheStory: every Redis scenario whose key has a real
// PX, stepped through the HTTP API with no pause between steps, stepped
// with a pause longer than the key's expiry after every step, and played at
// a speed as slow as that then scrubbed back step by step, tells the same
// story: the same events, verdicts and violations at the same steps, the
// expiry in the step that pauses or crashes its holder. The expiries are
// scaled down (the story is the same) so the slow runs take seconds; all
// runs go at once, most of their time is spent waiting.
func TestPaceDoesNotChangeTheStory(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: waits out key expiries between steps")
	}
	tests := []struct {
		name     string
		expiryMs int64
	}{
		{"redis-px-pause", 800},
		{"redis-del-third", 800},
		{"redis-token-fencing", 800},
		{"redis-side-by-side", 800},
		{"redis-token-side-by-side", 800},
		// redsync's per-try timeout is 5% of the expiry: 3 s leaves it
		// 150 ms, enough for a busy machine.
		{"redis-redlock-restart", 3000},
		{"redis-redlock-clock", 3000},
		// Renewed by the watchdog, not held: it must not change either.
		{"redis-watchdog", 600},
	}
	const modes = 3 // stepped fast, stepped slowly, played slowly
	api := newClassroomAPI(t, modes*len(tests))
	type result struct {
		told []told
		err  error
	}
	results := make([][modes]result, len(tests))
	scenarios := make([]*simulator.Scenario, len(tests))
	gaps := make([]time.Duration, len(tests))
	var wg sync.WaitGroup
	for i, tt := range tests {
		sc, ok := Catalog.Builtin(tt.name)
		if !ok {
			t.Fatalf("no scenario %s", tt.name)
		}
		var params map[string]any
		if err := json.Unmarshal(sc.Params, &params); err != nil {
			t.Fatal(err)
		}
		params["expiryMs"] = tt.expiryMs
		sc.Params, _ = json.Marshal(params)
		scenarios[i] = sc
		gaps[i] = time.Duration(tt.expiryMs)*time.Millisecond + 300*time.Millisecond
		def, _ := json.Marshal(map[string]any{"definition": sc})
		for mode := range modes {
			wg.Go(func() {
				var r result
				switch mode {
				case 0:
					r.told, r.err = api.stepped(string(def), 0)
				case 1:
					r.told, r.err = api.stepped(string(def), gaps[i])
				case 2:
					r.told, r.err = api.played(string(def), gaps[i])
				}
				results[i][mode] = r
			})
		}
	}
	wg.Wait()
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := scenarios[i]
			fast := results[i][0]
			if fast.err != nil {
				t.Fatalf("stepped without a pause: %v", fast.err)
			}
			for k, s := range fast.told {
				for _, e := range s.Events {
					if strings.HasSuffix(e, " expire") && !slices.Contains([]string{"pause", "crash"}, sc.Steps[k].Action) {
						t.Errorf("step %d (%s %s): an expiry, want one only where a holder pauses or crashes", k+1, sc.Steps[k].Client, sc.Steps[k].Action)
					}
				}
			}
			for mode, name := range map[int]string{
				1: fmt.Sprintf("stepped every %v", gaps[i]),
				2: fmt.Sprintf("played at one step per %v, scrubbed back", gaps[i]),
			} {
				t.Run(name, func(t *testing.T) {
					slow := results[i][mode]
					if slow.err != nil {
						t.Fatal(slow.err)
					}
					if len(slow.told) != len(fast.told) {
						t.Fatalf("%d steps, without a pause %d", len(slow.told), len(fast.told))
					}
					for k, f := range fast.told {
						s := slow.told[k]
						if !slices.Equal(f.Events, s.Events) || f.Verdict != s.Verdict || !slices.Equal(f.Violations, s.Violations) || f.Next != s.Next {
							t.Errorf("step %d (%s %s) tells another story than stepped without a pause:\n got %+v\nwant %+v",
								k+1, sc.Steps[k].Client, sc.Steps[k].Action, s, f)
						}
					}
				})
			}
		})
	}
}

// start starts a run of the definition (a POST /runs body); the returned
// func deletes it.
func (a *classroomAPI) start(def string) (simulator.State, func(), error) {
	var st simulator.State
	if err := a.do("POST", "/api/v1/sim/runs?service=redis", def, 201, &st); err != nil {
		return st, nil, err
	}
	return st, func() { a.do("DELETE", "/api/v1/sim/runs/"+st.ID+"?service=redis", "", 204, nil) }, nil
}

// stepped steps a run of def to its end, pausing between steps, and tells
// what each step told.
func (a *classroomAPI) stepped(def string, pause time.Duration) ([]told, error) {
	st, stop, err := a.start(def)
	if err != nil {
		return nil, err
	}
	defer stop()
	var out []told
	for st.Step < st.Planned {
		if st.Step > 0 {
			time.Sleep(pause)
		}
		if err := a.do("POST", "/api/v1/sim/runs/"+st.ID+"/step?service=redis", "", 200, &st); err != nil {
			return nil, err
		}
		if st.Error != "" {
			return nil, fmt.Errorf("step %d: %s", st.Step, st.Error)
		}
		out = append(out, tellOf(st))
	}
	return out, nil
}

// played plays a run of def at one step per gap, then scrubs back from the
// end to step 1, as the classroom's back key does, and tells what each step
// told.
func (a *classroomAPI) played(def string, gap time.Duration) ([]told, error) {
	st, stop, err := a.start(def)
	if err != nil {
		return nil, err
	}
	defer stop()
	run := "/api/v1/sim/runs/" + st.ID
	if err := a.do("POST", run+"/speed?service=redis", fmt.Sprintf(`{"speed":%.3f}`, 1.2/gap.Seconds()), 200, &st); err != nil {
		return nil, err
	}
	if err := a.do("POST", run+"/play?service=redis", "", 200, &st); err != nil {
		return nil, err
	}
	bound := time.Duration(st.Planned+2)*(gap+5*time.Second) + 30*time.Second
	for deadline := time.Now().Add(bound); !st.Done && st.Error == ""; {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("play: at step %d of %d after %v", st.Step, st.Planned, bound)
		}
		time.Sleep(100 * time.Millisecond)
		if err := a.do("GET", run+"?service=redis", "", 200, &st); err != nil {
			return nil, err
		}
	}
	if st.Error != "" {
		return nil, fmt.Errorf("play: step %d: %s", st.Step, st.Error)
	}
	out := make([]told, st.Planned)
	for k := st.Planned; k >= 1; k-- {
		if k < st.Planned {
			if err := a.do("POST", run+"/back?service=redis", "", 200, &st); err != nil {
				return nil, err
			}
		}
		out[k-1] = tellOf(st)
	}
	return out, nil
}

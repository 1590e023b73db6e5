package web

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lab"
	"github.com/zklockviz/zklockviz/lab/labsvg"
)

// scriptedLab stands in for cmd's runner (which runs real clients on a real
// server: cmd's and e2e's tests): it tells a fixed story, a paused holder
// and a second one writing over it, the server down a moment, then runs
// until it is stopped.
func scriptedLab(req LabRequest) (func(context.Context, LabHooks) []lab.Outcome, error) {
	if req.Service != "redis" {
		return nil, errors.New(`--service "` + req.Service + `": want redis here`)
	}
	return func(ctx context.Context, h LabHooks) []lab.Outcome {
		o := lab.Outcome{Service: "redis", Title: "Redis", Server: "127.0.0.1:1", Path: "k", Replay: "zklockviz lab --service redis --seed 1", Seed: req.Seed}
		h.Started(o, "zklockviz serve --redis 127.0.0.1:1, lock k")
		t0 := time.Now().Add(-time.Second) // told as past events
		at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
		for _, e := range []lab.Event{
			{At: at(0), Client: "c1", Kind: lab.Acquired, Token: 1}, {At: at(1), Client: "c1", Kind: lab.Paused},
			{At: at(2), Client: "c2", Kind: lab.Acquired, Token: 2}, {At: at(3), Client: "c2", Kind: lab.Wrote, From: 0, To: 1, Token: 2},
			{At: at(4), Client: "c1", Kind: lab.Resumed}, {At: at(5), Client: "c1", Kind: lab.Wrote, From: 0, To: 1, Token: 1},
			{At: at(6), Client: lab.Server, Kind: lab.ServerDown}, {At: at(7), Client: lab.Server, Kind: lab.ServerUp},
		} {
			h.Event("redis", e)
			o.Events = append(o.Events, e)
		}
		<-ctx.Done()
		o.Stopped = true
		o.Report = lab.Check(o.Events, 1, time.Now())
		// Drawn where the run ran, as cmd's runner does.
		svg, err := labsvg.Outcome(o)
		if err != nil {
			o.DrawError = err.Error()
		}
		o.SVG = svg
		return []lab.Outcome{o}
	}, nil
}

// The Lab page's API: a request is checked (by the page's bounds and by the
// runner), a run starts and answers its owner secret, at most two go at
// once (429 beyond), only its starter stops it, its live view streams the
// server's lanes and counts, and once stopped the last view has the
// diagram and the report's links, which answer the report.
func TestLabAPI(t *testing.T) {
	env := newEnv(t, Config{Pages: true, Lab: scriptedLab})
	post := func(body string, header http.Header) (int, map[string]string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, env.ts.URL+"/api/v1/lab/runs", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var out map[string]string
		json.NewDecoder(res.Body).Decode(&out)
		return res.StatusCode, out
	}
	for _, tc := range []struct{ body, want string }{
		{`{"service":"redis","clients":3,"duration":"forever"}`, `duration "forever": want a duration`},
		{`{"service":"redis","clients":3,"duration":"6m"}`, "the Lab page runs at most 5m0s"},
		{`{"service":"redis","clients":11,"duration":"5s"}`, "at most 10 per service"},
		{`{"service":"mongo","clients":3,"duration":"5s"}`, `--service "mongo"`},
	} {
		if code, out := post(tc.body, nil); code != http.StatusBadRequest || !strings.Contains(out["error"], tc.want) {
			t.Errorf("POST %s: %d %q, want 400 saying %q", tc.body, code, out["error"], tc.want)
		}
	}
	good := `{"service":"redis","clients":2,"nemesis":"pause","seed":5,"duration":"30s","fencing":false}`
	code, first := post(good, nil)
	if code != http.StatusCreated || first["id"] == "" || first["owner"] == "" {
		t.Fatalf("POST: %d %v, want 201 with an id and an owner", code, first)
	}
	if code, _ := post(good, nil); code != http.StatusCreated {
		t.Fatalf("the second run: %d, want 201", code)
	}
	if code, out := post(good, nil); code != http.StatusTooManyRequests || !strings.Contains(out["error"], "2 lab runs are going") {
		t.Errorf("the third run: %d %q, want 429", code, out["error"])
	}
	base := env.ts.URL + "/api/v1/lab/runs/" + first["id"]

	live, err := http.Get(base + "/live")
	if err != nil {
		t.Fatal(err)
	}
	defer live.Body.Close()
	if ct := live.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("live: Content-Type %q", ct)
	}
	events := sseEvents(live.Body)
	view := until(t, events, func(ev sseEvent) bool { return strings.Contains(ev.data, "lost updates: <b>1</b>") })
	for _, want := range []string{`data-client="c1"`, `data-client="c2"`, "two believers: <b>1</b>", `class="lab-overlap"`, `class="lab-pause"`, `data-client="server"`, `class="lab-down"`, "zklockviz serve --redis 127.0.0.1:1"} {
		if !strings.Contains(view.data, want) {
			t.Errorf("the live view lacks %q:\n%s", want, view.data)
		}
	}
	if res := get(t, base+"/report.json"); res.StatusCode != http.StatusConflict {
		t.Errorf("the report of a run still going: %d, want 409", res.StatusCode)
	}

	stop := func(owner string) int {
		req, _ := http.NewRequest(http.MethodPost, base+"/stop", nil)
		if owner != "" {
			req.Header.Set(RunOwnerHeader, owner)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if code := stop(""); code != http.StatusForbidden {
		t.Errorf("stop without the owner secret: %d, want 403", code)
	}
	if code := stop(first["owner"]); code != http.StatusNoContent {
		t.Fatalf("stop: %d, want 204", code)
	}
	last := until(t, events, func(ev sseEvent) bool { return ev.name == "done" })
	for _, want := range []string{`data-done="true"`, "<svg xmlns", "/report.html", "/report.json", "Stopped before its duration"} {
		if !strings.Contains(last.data, want) {
			t.Errorf("the last view lacks %q", want)
		}
	}
	if res := get(t, base+"/report.html"); res.StatusCode != http.StatusOK || !strings.Contains(readAll(t, res), `data-service="redis"`) {
		t.Errorf("report.html: %d", res.StatusCode)
	}
	var rep struct{ Runs []lab.Outcome }
	if err := json.Unmarshal([]byte(readAll(t, get(t, base+"/report.json"))), &rep); err != nil || len(rep.Runs) != 1 || rep.Runs[0].Report.LostUpdates != 1 || rep.Runs[0].Seed != 5 {
		t.Errorf("report.json: %v %+v", err, rep)
	}
	if page := readAll(t, get(t, env.ts.URL+"/lab")); !strings.Contains(page, `id="lab-form"`) {
		t.Error("the Lab page has no form")
	}
}

// Without a runner the page says the lab is off, and there is no API.
func TestLabOff(t *testing.T) {
	env := newEnv(t, Config{Pages: true})
	if page := readAll(t, get(t, env.ts.URL+"/lab")); !strings.Contains(page, "The lock lab is off on this server") {
		t.Error("the Lab page does not say the lab is off")
	}
	res, err := http.Post(env.ts.URL+"/api/v1/lab/runs", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("POST /api/v1/lab/runs without a lab: %d, want 404", res.StatusCode)
	}
}

type sseEvent struct{ name, data string }

// sseEvents reads server-sent events from r until it ends.
func sseEvents(r io.Reader) <-chan sseEvent {
	ch := make(chan sseEvent)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				ch <- ev
				ev = sseEvent{}
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.data += strings.TrimPrefix(line, "data: ") + "\n"
			}
		}
	}()
	return ch
}

// until is the first event ok accepts, within 10 s.
func until(t *testing.T, events <-chan sseEvent, ok func(sseEvent) bool) sseEvent {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, open := <-events:
			if !open {
				t.Fatal("the live view ended first")
			}
			if ok(ev) {
				return ev
			}
		case <-timeout:
			t.Fatal("no such live view within 10s")
		}
	}
}

func get(t *testing.T, url string) *http.Response {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

func readAll(t *testing.T, res *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The page keeps the reports of its last maxLabKept runs: an older one's
// is gone (404, saying so), and its owner secret with it.
func TestLabKeepsTheLastRuns(t *testing.T) {
	env := newEnv(t, Config{Pages: true, Lab: scriptedLab})
	for range maxLabKept + 1 {
		res, err := http.Post(env.ts.URL+"/api/v1/lab/runs", "application/json", strings.NewReader(`{"service":"redis","clients":2,"duration":"30s"}`))
		if err != nil {
			t.Fatal(err)
		}
		var run map[string]string
		json.NewDecoder(res.Body).Decode(&run)
		res.Body.Close()
		req, _ := http.NewRequest(http.MethodPost, env.ts.URL+"/api/v1/lab/runs/"+run["id"]+"/stop", nil)
		req.Header.Set(RunOwnerHeader, run["owner"])
		if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusNoContent {
			t.Fatalf("stop run %s: %v %v", run["id"], err, res)
		}
		deadline := time.Now().Add(10 * time.Second)
		for get(t, env.ts.URL+"/api/v1/lab/runs/"+run["id"]+"/report.json").StatusCode != http.StatusOK {
			if time.Now().After(deadline) {
				t.Fatalf("run %s did not end once stopped", run["id"])
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if res := get(t, env.ts.URL+"/api/v1/lab/runs/1/report.json"); res.StatusCode != http.StatusNotFound || !strings.Contains(readAll(t, res), "kept for the last 8 runs") {
		t.Errorf("the oldest run's report: %d, want 404", res.StatusCode)
	}
	if res := get(t, env.ts.URL+"/api/v1/lab/runs/2/report.json"); res.StatusCode != http.StatusOK {
		t.Errorf("the second run's report: %d, want 200", res.StatusCode)
	}
	env.srv.owners.mu.Lock()
	defer env.srv.owners.mu.Unlock()
	if _, ok := env.srv.owners.m[ownerKey("lab", "1")]; ok {
		t.Error("the forgotten run's owner secret is still kept")
	}
}

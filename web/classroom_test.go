package web

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/simulator"
	"github.com/zklockviz/zklockviz/zookeeper/zklocal/zktest"
	"github.com/zklockviz/zklockviz/zookeeper/zksim"
)

type apiClient struct {
	t      *testing.T
	url    string
	header http.Header
	// owners, when set, keeps the owner secrets of the runs this client
	// starts and sends them back, as the classroom page does.
	owners *ownerJar
}

// ownerJar is a client's run owner secrets.
type ownerJar struct {
	mu      sync.Mutex
	secrets []string
}

func (j *ownerJar) add(secret string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.secrets = append(j.secrets, secret)
}

// header is the secrets as one RunOwnerHeader's list.
func (j *ownerJar) header() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return strings.Join(j.secrets, ", ")
}

// do sends a request and decodes the answer into out (when not nil),
// failing the test unless the status is want.
func (c apiClient) do(method, path string, body any, want int, out any) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.url+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range c.header {
		req.Header[k] = v
	}
	if c.owners != nil && c.owners.header() != "" {
		req.Header.Set(RunOwnerHeader, c.owners.header())
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	if secret := res.Header.Get(RunOwnerHeader); c.owners != nil && secret != "" {
		c.owners.add(secret)
	}
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		c.t.Fatalf("%s %s: status %d, want %d: %s", method, path, res.StatusCode, want, b)
	}
	if out != nil {
		// Decode into a zero value: a field the answer leaves out must not
		// keep the previous answer's value.
		reflect.ValueOf(out).Elem().SetZero()
		if err := json.Unmarshal(b, out); err != nil {
			c.t.Fatalf("%s %s: decode %s: %v", method, path, b, err)
		}
	}
}

// errorOf sends a request that must fail and returns its error message.
func (c apiClient) errorOf(method, path string, body any, want int) string {
	c.t.Helper()
	var e struct{ Error string }
	c.do(method, path, body, want, &e)
	if e.Error == "" {
		c.t.Errorf("%s %s: no error message", method, path)
	}
	return e.Error
}

// published records what a simulator publishes to the live hub.
type published struct {
	mu   sync.Mutex
	last map[string]lockqueue.Snapshot
	gone []string
}

func (p *published) publish(s lockqueue.Snapshot) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last[s.Path] = s
}

func (p *published) remove(path string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gone = append(p.gone, path)
}

func (p *published) get(path string) (lockqueue.Snapshot, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.last[path]
	return s, ok
}

func clientNamed(s simulator.State, name string) simulator.ClientInfo {
	for _, c := range s.Clients {
		if c.Name == name {
			return c
		}
	}
	return simulator.ClientInfo{}
}

// TestClassroomAPI drives a run through the classroom's HTTP API and its
// websocket, on a real ZooKeeper.
func TestClassroomAPI(t *testing.T) {
	pub := &published{last: map[string]lockqueue.Snapshot{}}
	m := newSim(t, simulator.ManagerConfig{Publish: pub.publish, Remove: pub.remove})
	e := newEnv(t, Config{Services: zkRegistry(nil, m)})
	srv := e.ts
	api := apiClient{t: t, url: srv.URL + "/api/v1/sim", owners: &ownerJar{}}

	var scenarios []simulator.ScenarioInfo
	api.do("GET", "/scenarios", nil, 200, &scenarios)
	if len(scenarios) != len(zksim.Catalog.Names()) || scenarios[0].Name != "lock1-5" || scenarios[1].Clients != 20 {
		t.Errorf("scenarios: %+v", scenarios)
	}

	t.Run("errors", func(t *testing.T) {
		api := apiClient{t: t, url: srv.URL + "/api/v1/sim"}
		tests := []struct {
			method, path string
			body         any
			status       int
			want         string
		}{
			{"POST", "/runs", map[string]any{"scenario": "nope"}, 400, `unknown scenario "nope"`},
			{"POST", "/runs", map[string]any{"scenario": "lock1-5", "strategy": "fast"}, 400, `bad strategy "fast"`},
			{"POST", "/runs", map[string]any{"scenario": "herd", "clients": simulator.MaxClients + 1}, 400, "clients 1001: want 1 to 1000"},
			{"POST", "/runs", map[string]any{"scenario": "lock1-5", "colour": "red"}, 400, `unknown field "colour"`},
			{"POST", "/runs", map[string]any{"definition": map[string]any{"lock": "rw", "steps": []any{map[string]any{"client": "A", "action": "acquire"}}}}, 400, `unknown action "acquire"`},
			// The check before a run says what is wrong with the plan, not
			// whom B waits for (what a student is asked to predict).
			{"POST", "/runs", map[string]any{"definition": map[string]any{"lock": "exclusive", "steps": []any{map[string]any{"client": "A", "action": "add"}, map[string]any{"client": "B", "action": "add"}, map[string]any{"client": "B", "action": "release"}}}}, 400, "step 3: release B: the plan gives B no lock to release at that step"},
			{"POST", "/runs", map[string]any{"scenario": "herd", "clients": 0}, 400, "clients 0: want 1 to 1000"},
			{"POST", "/runs", map[string]any{"scenario": "herd", "clients": -3}, 400, "clients -3: want 1 to 1000"},
			{"POST", "/runs", map[string]any{"scenario": "lock1-5", "clients": 7}, 400, "scenario lock1-5 has a fixed cast"},
			{"POST", "/runs", map[string]any{"scenario": "ha-standby", "clients": 7}, 400, "scenario ha-standby has a fixed cast"},
			{"POST", "/runs", nil, 400, "missing scenario: want one of lock1-5"},
			{"POST", "/runs", map[string]any{"scenario": 5}, 400, "scenario: want a string, got number"},
			{"POST", "/runs", map[string]any{"scenario": "herd", "clients": "many"}, 400, "clients: want a number, got string"},
			{"POST", "/runs", map[string]any{"definition": map[string]any{"lock": 5}}, 400, "definition.lock: want a string, got number"},
			{"POST", "/runs", []int{1}, 400, "want a JSON object, got array"},
			{"GET", "/runs/nope", nil, 404, `no run "nope"`},
			{"POST", "/runs/nope/step", nil, 404, `no run "nope"`},
			{"DELETE", "/runs/nope", nil, 404, `no run "nope"`},
		}
		for _, tt := range tests {
			if msg := api.errorOf(tt.method, tt.path, tt.body, tt.status); !strings.Contains(msg, tt.want) {
				t.Errorf("%s %s: error %q, want %q", tt.method, tt.path, msg, tt.want)
			}
		}
	})

	var s simulator.State
	api.do("POST", "/runs", map[string]any{"scenario": "lock1-5", "strategy": "predecessor"}, 201, &s)
	id := s.ID
	run := "/runs/" + id
	if s.Step != 0 || s.Steps != 0 || s.Planned != 10 || s.Strategy != simulator.Predecessor || !strings.HasPrefix(s.Path, m.Root()+"/lock1-5-") {
		t.Fatalf("new run: %+v", s)
	}
	if len(s.Pseudocode.Lines) == 0 || s.Next == nil || *s.Next != (simulator.Action{Client: "LOCK1", Action: simulator.ActAddReader, Note: "nothing before it: it locks"}) {
		t.Errorf("new run: pseudocode %v, next %+v", s.Pseudocode.Lines, s.Next)
	}
	firstPath := s.Path

	for range 3 {
		api.do("POST", run+"/step", nil, 200, &s)
	}
	if s.Step != 3 || s.Steps != 3 || len(s.Snapshot.Nodes) != 3 {
		t.Fatalf("after 3 steps: step %d of %d, %d nodes", s.Step, s.Steps, len(s.Snapshot.Nodes))
	}
	if c := clientNamed(s, "LOCK3"); c.State != "waiting" || c.WaitsFor != "LOCK2" {
		t.Errorf("LOCK3: %+v", c)
	}
	// The snapshot joins the clients' own watch records: LOCK3's exists
	// watch on LOCK2's node is confirmed.
	if n := s.Snapshot.Nodes[2]; n.Edge != lockqueue.EdgeConfirmed || s.Snapshot.WatchSource != "simulator" {
		t.Errorf("LOCK3's node: edge %q, watch source %q", n.Edge, s.Snapshot.WatchSource)
	}
	if p, ok := pub.get(firstPath); !ok || len(p.Nodes) != 3 {
		t.Errorf("published snapshot of %s: %d nodes (%v)", firstPath, len(p.Nodes), ok)
	}
	if s.Narration == "" || s.Pseudocode.Line == 0 || len(s.Events) != 3 {
		t.Errorf("narration %q, line %d, %d events", s.Narration, s.Pseudocode.Line, len(s.Events))
	}

	// A release by a waiter does not fit.
	if msg := api.errorOf("POST", run+"/act", map[string]string{"client": "LOCK3", "action": "release"}, 409); !strings.Contains(msg, "no lock to release") {
		t.Errorf("release by a waiter: %q", msg)
	}
	if msg := api.errorOf("POST", run+"/act", map[string]string{"client": "LOCK3", "action": "explode"}, 400); !strings.Contains(msg, "unknown action") {
		t.Errorf("unknown action: %q", msg)
	}
	if msg := api.errorOf("POST", run+"/speed", map[string]any{"speed": 0}, 400); !strings.Contains(msg, "speed") {
		t.Errorf("speed 0: %q", msg)
	}
	if msg := api.errorOf("POST", run+"/seek", map[string]any{"step": 99}, 400); !strings.Contains(msg, "want 0 to") {
		t.Errorf("seek 99: %q", msg)
	}
	// An empty or malformed body names the field at fault.
	for _, tc := range []struct {
		path string
		body any
		want string
	}{
		{"/seek", nil, "missing step"},
		{"/seek", map[string]any{"step": "two"}, "step: want a number, got string"},
		{"/speed", nil, "missing speed"},
		{"/act", nil, "missing action: want one of add-reader"},
		{"/act", map[string]any{"action": true}, "action: want a string, got bool"},
	} {
		msg := api.errorOf("POST", run+tc.path, tc.body, 400)
		if !strings.Contains(msg, tc.want) || strings.Contains(msg, "EOF") {
			t.Errorf("%s with %v: %q, want %q", tc.path, tc.body, msg, tc.want)
		}
	}

	// Going back shows the recorded step, without touching ZooKeeper.
	api.do("POST", run+"/back", nil, 200, &s)
	if s.Step != 2 || s.Steps != 3 || len(s.Snapshot.Nodes) != 2 || s.Path != firstPath {
		t.Fatalf("back: step %d of %d, %d nodes, path %s", s.Step, s.Steps, len(s.Snapshot.Nodes), s.Path)
	}
	api.do("POST", run+"/seek", map[string]any{"step": 3}, 200, &s)
	if s.Step != 3 || len(s.Snapshot.Nodes) != 3 {
		t.Fatalf("seek 3: step %d, %d nodes", s.Step, len(s.Snapshot.Nodes))
	}
	api.do("POST", run+"/seek", map[string]any{"step": 1}, 200, &s)

	// Acting in the past replays step 1 on a fresh lock path, drops the
	// recorded future and keeps the rest of the plan, which still fits.
	api.do("POST", run+"/act", map[string]string{"client": "LOCK1", "action": "write"}, 200, &s)
	if s.Path == firstPath || s.Step != 2 || s.Steps != 2 || s.Planned != 11 {
		t.Fatalf("act in the past: path %s (was %s), step %d of %d, planned %d", s.Path, firstPath, s.Step, s.Steps, s.Planned)
	}
	if e := s.Events[len(s.Events)-1]; e.Event != simulator.EvWrite || e.Client != "LOCK1" || e.Token != s.Snapshot.Nodes[0].Czxid {
		t.Errorf("the write: %+v, LOCK1's node czxid %d", e, s.Snapshot.Nodes[0].Czxid)
	}
	if s.Next == nil || s.Next.Client != "LOCK2" || len(s.Snapshot.Nodes) != 1 || s.Snapshot.Path != s.Path {
		t.Errorf("after the act: next %+v, nodes %v on %s", s.Next, s.Snapshot.Nodes, s.Snapshot.Path)
	}
	conn := zktest.Connect(t, zkAddr(t))
	if ok, _, err := conn.Exists(firstPath); err != nil || ok {
		t.Errorf("the replaced path %s still exists (%v)", firstPath, err)
	}
	pub.mu.Lock()
	if len(pub.gone) == 0 || pub.gone[0] != firstPath {
		t.Errorf("removed from the hub: %v", pub.gone)
	}
	pub.mu.Unlock()

	// The websocket streams the state now and after each change.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, strings.Replace(api.url, "http", "ws", 1)+run+"/ws", nil)
	if err != nil {
		t.Fatalf("websocket: %v", err)
	}
	defer ws.CloseNow()
	next := func() simulator.State {
		t.Helper()
		_, b, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("websocket read: %v", err)
		}
		var st simulator.State
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatalf("websocket message: %v", err)
		}
		return st
	}
	if st := next(); st.ID != id || st.Step != 2 {
		t.Fatalf("first websocket state: id %s step %d", st.ID, st.Step)
	}
	api.do("POST", run+"/step", nil, 200, nil)
	for st := next(); st.Step != 3 || st.Busy; st = next() {
	}

	// Play to the end at top speed; the socket tells when it is done.
	api.do("POST", run+"/speed", map[string]any{"speed": 50}, 200, nil)
	api.do("POST", run+"/play", nil, 200, &s)
	if !s.Playing {
		t.Errorf("play: not playing")
	}
	st := next()
	for !st.Done || st.Playing {
		st = next()
	}
	if st.Step != 11 || len(st.Violations) != 0 || len(st.Snapshot.Nodes) != 0 {
		t.Errorf("played to the end: step %d, violations %v, nodes %v", st.Step, st.Violations, st.Snapshot.Nodes)
	}
	if msg := api.errorOf("POST", run+"/step", nil, 409); !strings.Contains(msg, "no more steps") {
		t.Errorf("step past the end: %q", msg)
	}
	// Play at the end starts again from the beginning, as a media player
	// does, instead of refusing.
	api.do("POST", run+"/speed", map[string]any{"speed": 1}, 200, nil)
	api.do("POST", run+"/play", nil, 200, &s)
	if !s.Playing || s.Step >= 11 || s.Steps != 11 {
		t.Errorf("play at the end: playing %v, step %d of %d, want a replay from the start", s.Playing, s.Step, s.Steps)
	}
	api.do("POST", run+"/pause", nil, 200, nil)

	// A reader added after LOCK1 shares its lock, so the rest of the plan
	// (LOCK2 locking when LOCK1 leaves) no longer fits: it is dropped.
	api.do("POST", run+"/seek", map[string]any{"step": 1}, 200, &s)
	api.do("POST", run+"/act", map[string]string{"action": "add-reader"}, 200, &s)
	if c := clientNamed(s, "LOCK6"); c.State != "holding" || c.Mode != lockqueue.Read {
		t.Errorf("the added reader: %+v (clients %+v)", c, s.Clients)
	}
	if len(s.Snapshot.Holders()) != 2 || s.Planned != 2 || !s.Done || s.Next != nil {
		t.Errorf("after adding a reader: holders %v, planned %d, done %v, next %+v", s.Snapshot.Holders(), s.Planned, s.Done, s.Next)
	}

	last := s.Path
	api.do("DELETE", run, nil, 204, nil)
	api.do("GET", run, nil, 404, nil)
	if ok, _, err := conn.Exists(last); err != nil || ok {
		t.Errorf("the deleted run's path %s still exists (%v)", last, err)
	}
	// The socket ends with a normal closure once the states queued before
	// the delete are read.
	for {
		if _, _, err := ws.Read(ctx); err != nil {
			if websocket.CloseStatus(err) != websocket.StatusNormalClosure {
				t.Errorf("websocket after delete: %v", err)
			}
			break
		}
	}
}

// TestClassroomSocketChecks: a run's socket passes the same Host, Origin
// and token checks as a lock's, and is closed on shutdown like one.
func TestClassroomSocketChecks(t *testing.T) {
	m := newSim(t, simulator.ManagerConfig{})
	e := newEnv(t, Config{Services: zkRegistry(nil, m), AllowedOrigins: []string{"viz.example.com", "https://*.corp.example"}})
	authed := newEnv(t, Config{Services: zkRegistry(nil, m), AuthToken: "tok"})
	run, err := m.Start(simulator.Spec{Scenario: "lock1-5"})
	if err != nil {
		t.Fatal(err)
	}
	path := "/api/v1/sim/runs/" + run.ID() + "/ws"

	tests := []struct {
		name   string
		env    *testEnv
		header http.Header
		code   int // 0: the upgrade succeeds
	}{
		{"same host", e, nil, 0},
		{"no origin (not a browser)", e, http.Header{"Origin": nil}, 0},
		{"allowed origin", e, http.Header{"Origin": {"https://viz.example.com"}}, 0},
		{"allowed origin with scheme", e, http.Header{"Origin": {"https://a.corp.example"}}, 0},
		{"allowed host, other scheme", e, http.Header{"Origin": {"http://a.corp.example"}}, 403},
		{"evil origin", e, http.Header{"Origin": {"https://evil.example"}}, 403},
		{"evil host", e, http.Header{"Host": {"evil.example"}}, 403},
		{"no token", authed, nil, 401},
		{"token", authed, http.Header{"Authorization": {"Bearer tok"}}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
			defer cancel()
			hdr := http.Header{"Origin": {tc.env.ts.URL}}
			host := ""
			for k, v := range tc.header {
				if k == "Host" {
					host = v[0]
					continue
				}
				hdr[k] = v
			}
			opts := &websocket.DialOptions{HTTPHeader: hdr}
			if host != "" {
				opts.HTTPHeader.Set("Origin", "http://"+host)
				opts.Host = host
			}
			c, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(tc.env.ts.URL, "http")+path, opts)
			if tc.code == 0 {
				if err != nil {
					t.Fatalf("dial: %v (%s)", err, statusOfResp(resp))
				}
				defer c.CloseNow()
				_, b, err := c.Read(ctx)
				var st simulator.State
				if err != nil || json.Unmarshal(b, &st) != nil || st.ID != run.ID() {
					t.Fatalf("first message: %v %.200s", err, b)
				}
				return
			}
			if err == nil {
				c.CloseNow()
				t.Fatalf("dial succeeded, want HTTP %d", tc.code)
			}
			if resp == nil || resp.StatusCode != tc.code {
				t.Fatalf("dial: %v (%s), want HTTP %d", err, statusOfResp(resp), tc.code)
			}
		})
	}

	// Shutdown closes a run's socket as it does a lock's: going away.
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(e.ts.URL, "http")+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if _, _, err := c.Read(ctx); err != nil {
		t.Fatal(err)
	}
	if e.srv.Viewers() == 0 {
		t.Error("the run's socket is not tracked")
	}
	if err := e.srv.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	for {
		if _, _, err := c.Read(ctx); err != nil {
			if websocket.CloseStatus(err) != websocket.StatusGoingAway {
				t.Errorf("after shutdown: %v, want going away", err)
			}
			break
		}
	}
}

// TestClassroomRunsLifecycle: a run closes a grace period after its last
// viewer leaves (a closed tab), a run that never had a viewer stays, and
// the documented limit holds even for runs started at once.
func TestClassroomRunsLifecycle(t *testing.T) {
	m := newSim(t, simulator.ManagerConfig{ViewerGrace: 300 * time.Millisecond, MaxRuns: 3})
	e := newEnv(t, Config{Services: zkRegistry(nil, m)})
	api := apiClient{t: t, url: e.ts.URL + "/api/v1/sim", owners: &ownerJar{}}
	ids := func() []string {
		var runs []simulator.State
		api.do("GET", "/runs", nil, 200, &runs)
		var out []string
		for _, r := range runs {
			out = append(out, r.ID)
		}
		return out
	}

	var scripted, viewed simulator.State
	api.do("POST", "/runs", map[string]any{"scenario": "lock1-5"}, 201, &scripted)
	api.do("POST", "/runs", map[string]any{"scenario": "herd", "clients": 3}, 201, &viewed)
	if got := ids(); len(got) != 2 || !slices.Contains(got, scripted.ID) || !slices.Contains(got, viewed.ID) {
		t.Fatalf("GET /runs: %v", got)
	}

	// The limit: with two open and a limit of three, of three runs started
	// at once exactly one gets in; the others are told what to do.
	var wg sync.WaitGroup
	codes := make(chan int, 3)
	msgs := make(chan string, 3)
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, h, b := do(t, "POST", api.url+"/runs", `{"scenario":"lock1-5"}`, http.Header{"Content-Type": {"application/json"}})
			if secret := h.Get(RunOwnerHeader); secret != "" {
				api.owners.add(secret)
			}
			codes <- code
			msgs <- string(b)
		}()
	}
	wg.Wait()
	close(codes)
	close(msgs)
	created := 0
	for c := range codes {
		if c == http.StatusCreated {
			created++
		} else if c != http.StatusConflict {
			t.Errorf("a start past the limit: %d", c)
		}
	}
	if created != 1 {
		t.Errorf("%d runs started at the limit, want 1", created)
	}
	for msg := range msgs {
		if strings.Contains(msg, "error") && !strings.Contains(msg, "3 runs are open, the most this server allows: delete one") {
			t.Errorf("refusal: %s", msg)
		}
	}
	for _, id := range ids() {
		if id != scripted.ID && id != viewed.ID {
			api.do("DELETE", "/runs/"+id, nil, 204, nil)
		}
	}

	// A viewer comes and goes: the run closes once the grace period is over.
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(api.url, "http")+"/runs/"+viewed.ID+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Read(ctx); err != nil {
		t.Fatal(err)
	}
	c.Close(websocket.StatusNormalClosure, "tab closed")
	for slices.Contains(ids(), viewed.ID) {
		select {
		case <-ctx.Done():
			t.Fatalf("the run whose viewer left is still open: %v", ids())
		case <-time.After(50 * time.Millisecond):
		}
	}
	api.do("GET", "/runs/"+viewed.ID, nil, 404, nil)
	if got := ids(); !slices.Equal(got, []string{scripted.ID}) {
		t.Errorf("runs after the reap: %v, want only the one that never had a viewer (%s)", got, scripted.ID)
	}
	api.do("DELETE", "/runs/"+scripted.ID, nil, 204, nil)
	if got := ids(); len(got) != 0 {
		t.Errorf("runs after DELETE: %v", got)
	}
}

// TestClassroomOffRoutes: without a simulator the classroom's API is not
// there, with the same JSON error as any unknown endpoint.
func TestClassroomOffRoutes(t *testing.T) {
	e := newEnv(t, Config{})
	code, _, b := do(t, "GET", e.ts.URL+"/api/v1/sim/scenarios", "", nil)
	if code != 404 || !strings.Contains(string(b), `"error":"no such endpoint`) {
		t.Errorf("GET /api/v1/sim/scenarios without the simulator: %d %s", code, b)
	}
	on := newEnv(t, Config{Services: zkRegistry(nil, idleSim(t))})
	code, _, b = do(t, "PUT", on.ts.URL+"/api/v1/sim/runs", "", nil)
	if code != 405 || !strings.Contains(string(b), `"error":"PUT is not allowed`) {
		t.Errorf("PUT /api/v1/sim/runs: %d %s", code, b)
	}
	var scenarios []simulator.ScenarioInfo
	code, _, b = do(t, "GET", on.ts.URL+"/api/v1/sim/scenarios", "", nil)
	if err := json.Unmarshal(b, &scenarios); code != 200 || err != nil || len(scenarios) == 0 {
		t.Errorf("GET /api/v1/sim/scenarios: %d %s", code, b)
	}
}

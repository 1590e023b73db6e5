package simulator

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/go-zookeeper/zk"
	"github.com/zklockviz/zklockviz/lockqueue"
)

type apiClient struct {
	t   *testing.T
	url string
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
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
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

type published struct {
	mu    sync.Mutex
	last  map[string]lockqueue.Snapshot
	gone  []string
	count int
}

func (p *published) publish(s lockqueue.Snapshot) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last[s.Path] = s
	p.count++
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

func clientNamed(s State, name string) ClientInfo {
	for _, c := range s.Clients {
		if c.Name == name {
			return c
		}
	}
	return ClientInfo{}
}

func TestHTTP(t *testing.T) {
	pub := &published{last: map[string]lockqueue.Snapshot{}}
	m := newManager(t, ManagerConfig{Publish: pub.publish, Remove: pub.remove})
	srv := httptest.NewServer(NewHandler(m))
	t.Cleanup(srv.Close)
	api := apiClient{t: t, url: srv.URL}

	var scenarios []ScenarioInfo
	api.do("GET", "/scenarios", nil, 200, &scenarios)
	if len(scenarios) != 5 || scenarios[0].Name != "lock1-5" || scenarios[1].Clients != 20 {
		t.Errorf("scenarios: %+v", scenarios)
	}

	t.Run("errors", func(t *testing.T) {
		api := apiClient{t: t, url: srv.URL}
		tests := []struct {
			method, path string
			body         any
			status       int
			want         string
		}{
			{"POST", "/runs", map[string]any{"scenario": "nope"}, 400, `unknown scenario "nope"`},
			{"POST", "/runs", map[string]any{"scenario": "lock1-5", "strategy": "fast"}, 400, `bad strategy "fast"`},
			{"POST", "/runs", map[string]any{"scenario": "herd", "clients": MaxClients + 1}, 400, "clients"},
			{"POST", "/runs", map[string]any{"scenario": "lock1-5", "colour": "red"}, 400, `unknown field "colour"`},
			{"POST", "/runs", map[string]any{"definition": map[string]any{"lock": "rw", "steps": []any{map[string]any{"client": "A", "action": "acquire"}}}}, 400, `unknown action "acquire"`},
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

	var s State
	api.do("POST", "/runs", map[string]any{"scenario": "lock1-5", "strategy": "predecessor"}, 201, &s)
	id := s.ID
	run := "/runs/" + id
	if s.Step != 0 || s.Steps != 0 || s.Planned != 10 || s.Strategy != Predecessor || !strings.HasPrefix(s.Path, m.Root()+"/lock1-5-") {
		t.Fatalf("new run: %+v", s)
	}
	if len(s.Pseudocode.Lines) == 0 || s.Next == nil || *s.Next != (Action{Client: "LOCK1", Action: ActAddReader, Note: "nothing before it: it locks"}) {
		t.Errorf("new run: pseudocode %v, next %+v", s.Pseudocode.Lines, s.Next)
	}
	firstPath := s.Path

	for range 3 {
		api.do("POST", run+"/step", nil, 200, &s)
	}
	if s.Step != 3 || s.Steps != 3 || len(s.Snapshot.Nodes) != 3 {
		t.Fatalf("after 3 steps: step %d of %d, %d nodes", s.Step, s.Steps, len(s.Snapshot.Nodes))
	}
	if c := clientNamed(s, "LOCK3"); c.State != stWaiting || c.WaitsFor != "LOCK2" {
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
	if msg := api.errorOf("POST", run+"/act", map[string]string{"client": "LOCK3", "action": "release"}, 409); !strings.Contains(msg, "holds nothing") {
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
	if e := s.Events[len(s.Events)-1]; e.Event != EvWrite || e.Client != "LOCK1" || e.Token != s.Snapshot.Nodes[0].Czxid {
		t.Errorf("the write: %+v, LOCK1's node czxid %d", e, s.Snapshot.Nodes[0].Czxid)
	}
	if s.Next == nil || s.Next.Client != "LOCK2" || len(s.Snapshot.Nodes) != 1 || s.Snapshot.Path != s.Path {
		t.Errorf("after the act: next %+v, nodes %v on %s", s.Next, s.Snapshot.Nodes, s.Snapshot.Path)
	}
	conn := observe(t)
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
	ws, _, err := websocket.Dial(ctx, strings.Replace(srv.URL, "http", "ws", 1)+run+"/ws", nil)
	if err != nil {
		t.Fatalf("websocket: %v", err)
	}
	defer ws.CloseNow()
	next := func() State {
		t.Helper()
		_, b, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("websocket read: %v", err)
		}
		var st State
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
	api.do("POST", run+"/speed", map[string]any{"speed": maxSpeed}, 200, nil)
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

	// A page from another origin may not open the socket.
	_, res, err := websocket.Dial(ctx, strings.Replace(srv.URL, "http", "ws", 1)+run+"/ws",
		&websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"https://evil.example"}}})
	if err == nil || res == nil || res.StatusCode != http.StatusForbidden {
		t.Errorf("foreign origin: err %v, response %v", err, res)
	}

	// A reader added after LOCK1 shares its lock, so the rest of the plan
	// (LOCK2 locking when LOCK1 leaves) no longer fits: it is dropped.
	api.do("POST", run+"/seek", map[string]any{"step": 1}, 200, &s)
	api.do("POST", run+"/act", map[string]string{"action": "add-reader"}, 200, &s)
	if c := clientNamed(s, "LOCK6"); c.State != stHolding || c.Mode != lockqueue.Read {
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

// observe opens a plain session to look at the tree.
func observe(t *testing.T) *zk.Conn {
	t.Helper()
	conn, events, err := zk.Connect([]string{zkAddr}, 10*time.Second, zk.WithLogger(zkLogger{log: quietLogger()}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return conn
			}
		case <-timeout:
			t.Fatal("no ZooKeeper session")
		}
	}
}

// TestManagerClose: closing the manager ends every run and removes all it
// created, the sandbox included.
func TestManagerClose(t *testing.T) {
	m, err := New(ManagerConfig{Servers: []string{zkAddr}, Root: "/closetest/sim", SessionTimeout: testSessionTimeout, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	r, err := m.Start(Spec{Scenario: "session-expiry"})
	if err != nil {
		t.Fatal(err)
	}
	// Leave a crashed holder behind: its node outlives its client.
	for range 4 {
		if err := r.Step(); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	conn := observe(t)
	if ok, _, err := conn.Exists("/closetest"); err != nil || ok {
		t.Errorf("/closetest still exists after Close (%v)", err)
	}
	if _, err := m.Start(Spec{Scenario: "lock1-5"}); err == nil {
		t.Error("Start after Close worked")
	}
	if _, err := New(ManagerConfig{Servers: []string{zkAddr}, Root: "/"}); err == nil {
		t.Error(`New with root "/" worked`)
	}
	if _, err := New(ManagerConfig{Servers: []string{zkAddr}, Root: "/zookeeper/x"}); err == nil {
		t.Error("New with a root under /zookeeper worked")
	}
}

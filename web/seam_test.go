package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/zklockviz/zklockviz/hub"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/lockservice"
	"github.com/zklockviz/zklockviz/zookeeper"
)

// The seam's proof: a second lock service, registered beside ZooKeeper,
// reaches the JSON API and the websocket through the real server, with no
// change to web. fixtureService is that second service. It is no lock
// service at all and says so: it serves a fixed queue of three clients,
// declared below, labelled "fixture", so nothing here mimics the semantics
// of Redis, etcd or PostgreSQL.

const fixtureName = "fixture"

// fixtureReader is a lockservice.Reader over fixed data: watching a lock
// publishes the fixture's queue under that name; Release hands it on.
type fixtureReader struct {
	sink lockservice.Sink

	mu      sync.Mutex
	watched []string
	rev     int64
}

var _ lockservice.Reader = (*fixtureReader)(nil)

var fixtureEpoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// fixtureService registers the fixture reader, publishing to h.
func fixtureService(h *hub.Hub) (lockservice.Service, *fixtureReader) {
	r := &fixtureReader{sink: h.Publish}
	return lockservice.Service{
		Name: fixtureName, Title: "Fixture (fixed test data)", Reader: r,
		CheckName: func(name string) error {
			if name == "" || strings.ContainsAny(name, " \t\n") {
				return fmt.Errorf("%w %q: a fixture lock is one word", lockservice.ErrBadName, name)
			}
			return nil
		},
	}, r
}

// queue is the fixture's lock after `released` hand-offs: clients a, b and
// c in order, the first left holding with a lease, each other waiting by
// the rule on the one before it.
func (f *fixtureReader) queue(name string, released int) lockqueue.Snapshot {
	s := lockqueue.Snapshot{
		Service: fixtureName, Path: name, Recipe: "fixture", Revision: int64(released + 1),
		Connection: lockqueue.Connected, WatchSource: "fixture", Exists: true,
		UpdatedAt: fixtureEpoch.Add(time.Duration(released) * time.Second),
	}
	for i, c := range []string{"a", "b", "c"}[released:] {
		n := lockqueue.Node{
			Name: c, Seq: -1, Mode: lockqueue.Exclusive, Recipe: "fixture",
			Rare: &lockqueue.Rare{
				Order: int64(released + i + 1), Client: "client-" + c,
				LeaseID: "lease-" + c, LeaseTTLMs: 10_000, LeaseLeftMs: 8_000,
			},
			Ctime: fixtureEpoch,
		}
		if i == 0 {
			n.Holding = true
		} else {
			n.WaitsFor = s.Nodes[i-1].Name
			n.SetWaitsForSource(lockqueue.ByRule)
		}
		s.Nodes = append(s.Nodes, n)
	}
	return s
}

func (f *fixtureReader) Watch(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !slices.Contains(f.watched, name) {
		f.watched = append(f.watched, name)
	}
	f.sink(f.queue(name, int(f.rev)))
	return nil
}

// Release hands every watched lock on to its next client.
func (f *fixtureReader) Release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rev++
	for _, name := range f.watched {
		f.sink(f.queue(name, int(f.rev)))
	}
}

func (f *fixtureReader) Unwatch(string) error { return lockservice.ErrUnsupported }
func (f *fixtureReader) Err() error           { return nil }

func (f *fixtureReader) Watched() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.watched)
}

func (f *fixtureReader) Connection() lockqueue.Connection { return lockqueue.Connected }
func (f *fixtureReader) Run(ctx context.Context) error    { <-ctx.Done(); return nil }
func (f *fixtureReader) Close()                           {}

// seamEnv serves ZooKeeper (no reader, no classroom) and the fixture.
func seamEnv(t *testing.T) (*testEnv, *fixtureReader) {
	t.Helper()
	reg := zkRegistry(nil, nil)
	e := newEnv(t, Config{Services: reg})
	svc, r := fixtureService(e.hub)
	if err := reg.Register(svc); err != nil {
		t.Fatal(err)
	}
	return e, r
}

func TestSecondServiceThroughAPI(t *testing.T) {
	e, _ := seamEnv(t)
	// The same name under ZooKeeper is another lock: the hub keys them apart.
	e.hub.Publish(gozkFolder("/locks/orders", 2).snapshot())

	code, _, body := do(t, "POST", e.ts.URL+"/api/v1/watch", `{"service":"fixture","path":"/locks/orders"}`,
		http.Header{"Content-Type": {"application/json"}})
	if code != 200 || !strings.Contains(string(body), `"service":"fixture"`) {
		t.Fatalf("POST /api/v1/watch for the fixture = %d %s", code, body)
	}

	code, _, body = do(t, "GET", e.ts.URL+"/api/v1/lock?service=fixture&path=/locks/orders", "", nil)
	if code != 200 {
		t.Fatalf("GET the fixture's lock = %d %s", code, body)
	}
	var got lockqueue.Snapshot
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if got.Service != fixtureName || got.Path != "/locks/orders" || !slices.Equal(got.Holders(), []string{"a"}) ||
		!slices.Equal(got.Waiters(), []string{"b", "c"}) {
		t.Fatalf("fixture lock = service %q path %q holders %v waiters %v", got.Service, got.Path, got.Holders(), got.Waiters())
	}
	if n := got.Nodes[0]; n.Order() != 1 || n.Client() != "client-a" || n.LeaseID() != "lease-a" || n.LeaseTTLMs() != 10_000 || n.LeaseLeftMs() != 8_000 {
		t.Errorf("holder's service-neutral fields lost on the wire: %+v", n)
	}
	if edges := got.Nodes[2].WaitEdges(); !slices.Equal(edges, []lockqueue.WaitEdge{{To: "b", Provenance: lockqueue.ByRule}}) {
		t.Errorf("c's edges = %v, want c→b by rule", edges)
	}

	// The ZooKeeper lock of the same name is untouched, and says no service.
	code, _, body = do(t, "GET", e.ts.URL+"/api/v1/lock?path=/locks/orders", "", nil)
	if code != 200 || strings.Contains(string(body), `"service"`) || !strings.Contains(string(body), `"recipe":"go-zookeeper"`) {
		t.Fatalf("GET the ZooKeeper lock = %d %s", code, body)
	}

	code, _, body = do(t, "GET", e.ts.URL+"/api/v1/locks", "", nil)
	var locks LocksResponse
	if err := json.Unmarshal(body, &locks); err != nil || code != 200 {
		t.Fatalf("GET /api/v1/locks = %d %s (%v)", code, body, err)
	}
	var listed []string
	for _, l := range locks.Locks {
		listed = append(listed, l.Service+":"+l.Path)
	}
	if want := []string{":/locks/orders", "fixture:/locks/orders"}; !slices.Equal(listed, want) {
		t.Errorf("GET /api/v1/locks lists %v, want %v", listed, want)
	}
}

func TestSecondServiceThroughWebsocket(t *testing.T) {
	e, r := seamEnv(t)
	if err := r.Watch("orders"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	url := "ws" + strings.TrimPrefix(e.ts.URL, "http") + "/ws?service=fixture&path=orders"
	c, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	defer c.CloseNow()
	read := func() Frame {
		t.Helper()
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("read a frame: %v", err)
		}
		var f Frame
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatalf("frame %s: %v", b, err)
		}
		return f
	}
	first := read()
	if first.Type != FrameSnapshot || first.Snapshot.Service != fixtureName || !slices.Equal(first.Snapshot.Holders(), []string{"a"}) {
		t.Fatalf("first frame = %+v, want the fixture's snapshot with a holding", first)
	}
	r.Release()
	next := read()
	snap := *first.Snapshot
	switch next.Type {
	case FrameDelta:
		if snap, err = ApplyDelta(snap, next.Delta); err != nil {
			t.Fatal(err)
		}
	case FrameSnapshot:
		snap = *next.Snapshot
	}
	if snap.Service != fixtureName || !slices.Equal(snap.Holders(), []string{"b"}) || !slices.Equal(snap.Waiters(), []string{"c"}) {
		t.Errorf("after the release: service %q holders %v waiters %v, want fixture, [b], [c]", snap.Service, snap.Holders(), snap.Waiters())
	}
}

// A request without ?service= is ZooKeeper's: the same answers as with
// service=zookeeper, and ZooKeeper's path rule.
func TestDefaultServiceIsZooKeeper(t *testing.T) {
	e, _ := seamEnv(t)
	e.hub.Publish(gozkFolder("/locks/a", 2).snapshot())
	for _, tc := range []struct {
		query string
		code  int
		want  string
	}{
		{"path=/locks/a", 200, `"path":"/locks/a"`},
		{"service=zookeeper&path=/locks/a", 200, `"path":"/locks/a"`},
		{"service=&path=/locks/a", 200, `"path":"/locks/a"`},
		{"path=orders", 400, `must start with /`},
		{"service=fixture&path=/locks/a", 404, `is not watched`},
		{"service=fixture&path=two%20words", 400, `a fixture lock is one word`},
	} {
		code, _, body := do(t, "GET", e.ts.URL+"/api/v1/lock?"+tc.query, "", nil)
		if code != tc.code || !strings.Contains(string(body), tc.want) {
			t.Errorf("GET /api/v1/lock?%s = %d %s, want %d with %q", tc.query, code, body, tc.code, tc.want)
		}
	}
}

// An unknown service is refused with a 404 that names the known ones, on
// every route that takes ?service=.
func TestUnknownServiceRefused(t *testing.T) {
	reg := zkRegistry(nil, idleSim(t))
	e := newEnv(t, Config{Services: reg})
	svc, _ := fixtureService(e.hub)
	if err := reg.Register(svc); err != nil {
		t.Fatal(err)
	}
	const want = `unknown service \"redis\": this server knows zookeeper, fixture`
	for _, tc := range []struct{ method, url, body string }{
		{"GET", "/api/v1/lock?service=redis&path=/locks/a", ""},
		{"GET", "/ws?service=redis&path=/locks/a", ""},
		{"POST", "/api/v1/watch?service=redis", `{"path":"/locks/a"}`},
		{"POST", "/api/v1/watch", `{"service":"redis","path":"/locks/a"}`},
		{"GET", "/api/v1/sim/scenarios?service=redis", ""},
		{"GET", "/api/v1/sim/runs?service=redis", ""},
		{"POST", "/api/v1/sim/runs?service=redis", `{"scenario":"herd"}`},
	} {
		code, _, body := do(t, tc.method, e.ts.URL+tc.url, tc.body, http.Header{"Content-Type": {"application/json"}})
		if code != 404 || !strings.Contains(string(body), want) {
			t.Errorf("%s %s = %d %s, want 404 with %s", tc.method, tc.url, code, body, want)
		}
	}
	// A known service without a classroom says so.
	code, _, body := do(t, "GET", e.ts.URL+"/api/v1/sim/scenarios?service=fixture", "", nil)
	if code != 404 || !strings.Contains(string(body), "has no classroom") {
		t.Errorf("GET /api/v1/sim/scenarios?service=fixture = %d %s, want 404: no classroom", code, body)
	}
	// ZooKeeper's classroom is still the default.
	code, _, body = do(t, "GET", e.ts.URL+"/api/v1/sim/scenarios", "", nil)
	if code != 200 || !strings.Contains(string(body), `"herd`) {
		t.Errorf("GET /api/v1/sim/scenarios = %d %s", code, body)
	}
}

// The registry refuses what would make lookups ambiguous.
func TestRegistryRefusesBadServices(t *testing.T) {
	var reg lockservice.Registry
	if err := reg.Register(zookeeper.Service(nil, nil)); err != nil {
		t.Fatal(err)
	}
	for name, svc := range map[string]lockservice.Service{
		"twice":         zookeeper.Service(nil, nil),
		"no name":       {CheckName: zookeeper.CheckName},
		"no name check": {Name: "etcd"},
	} {
		if err := reg.Register(svc); err == nil {
			t.Errorf("%s: registered", name)
		}
	}
	if svc, err := reg.Lookup(""); err != nil || svc.Name != lockqueue.ZooKeeper {
		t.Errorf(`Lookup("") = %q, %v; want zookeeper`, svc.Name, err)
	}
	if _, err := reg.Lookup("etcd"); !errors.Is(err, lockservice.ErrUnknownService) {
		t.Errorf(`Lookup("etcd") = %v, want ErrUnknownService`, err)
	}
	if err := zookeeper.CheckName("locks"); !errors.Is(err, lockservice.ErrBadName) || !strings.Contains(err.Error(), "must start with /") {
		t.Errorf("zookeeper.CheckName(locks) = %v", err)
	}
}

// A watch asked of a service whose reader is not running says which serve
// flag starts it, as the service's words name it (ZooKeeper's --zk), else
// by the service's name.
func TestWatchWithoutReaderNamesItsFlag(t *testing.T) {
	reg := zkRegistry(nil, nil)
	e := newEnv(t, Config{Services: reg})
	svc, _ := fixtureService(e.hub)
	svc.Reader = nil
	if err := reg.Register(svc); err != nil {
		t.Fatal(err)
	}
	jsonHdr := http.Header{"Content-Type": {"application/json"}}
	for _, tc := range []struct{ body, want string }{
		{`{"path":"/locks/a"}`, "no ZooKeeper watcher is running (serve with --zk)"},
		{`{"service":"fixture","path":"a"}`, "no Fixture (fixed test data) watcher is running (serve with --fixture)"},
	} {
		code, _, body := do(t, "POST", e.ts.URL+"/api/v1/watch", tc.body, jsonHdr)
		if code != http.StatusServiceUnavailable || !strings.Contains(string(body), tc.want) {
			t.Errorf("POST /api/v1/watch %s = %d %s, want 503 with %q", tc.body, code, body, tc.want)
		}
	}
}

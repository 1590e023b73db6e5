package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/zklockviz/zklockviz/lockservice"
	"github.com/zklockviz/zklockviz/simulator"
	"github.com/zklockviz/zklockviz/zookeeper"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/zklockviz/zklockviz/hub"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/metrics"
	"github.com/zklockviz/zklockviz/zkwatch"
)

// readTimeout bounds each wait for a frame: a liveness bound for a loaded
// box, not a speed assertion.
const readTimeout = 60 * time.Second

var epoch = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// gozk names a go-zookeeper lock node for client i with sequence seq.
func gozk(i int, seq int64) string {
	return lockqueue.SeqName(fmt.Sprintf("_c_%032x-lock-", i), seq)
}

// folder is a lock parent's children as the watcher would read them.
type folder struct {
	path string
	rev  int64
	conn lockqueue.Connection
	kids []lockqueue.Child
	// watchPred makes every session watch its predecessor, as go-zookeeper's
	// waiters do, and the server's table report it.
	watchPred bool
	// watchNothing has the server's table report every session connected
	// and watching nothing: a queue left behind, whose waiters are gone.
	watchNothing bool
}

// gozkFolder is a go-zookeeper queue of n clients.
func gozkFolder(path string, n int) *folder {
	f := &folder{path: path, rev: 1, conn: lockqueue.Connected}
	for i := range n {
		f.add(i)
	}
	return f
}

func (f *folder) add(i int) {
	f.kids = append(f.kids, lockqueue.Child{
		Name: gozk(i, int64(i)), Czxid: int64(1000 + i), Ctime: epoch.Add(time.Duration(i) * time.Millisecond),
		EphemeralOwner: int64(0x100000000 + i), Data: []byte(fmt.Sprintf("client-%d", i)),
	})
}

func (f *folder) remove(name string) {
	for i, k := range f.kids {
		if k.Name == name {
			f.kids = append(f.kids[:i:i], f.kids[i+1:]...)
			return
		}
	}
	panic("no child " + name)
}

// snapshot runs the domain model over the folder, as zkwatch does.
func (f *folder) snapshot() lockqueue.Snapshot {
	s := lockqueue.Build(f.path, f.kids, lockqueue.Options{})
	s.Revision, s.Connection, s.UpdatedAt = f.rev, f.conn, epoch.Add(time.Duration(f.rev)*time.Second)
	table := lockqueue.NoWatches
	if f.watchPred || f.watchNothing {
		table = lockqueue.WatchTable{Source: "4lw", Watches: map[int64][]string{}, Connected: map[int64]bool{}}
		for i, n := range s.Nodes {
			table.Connected[n.Owner()] = true
			if i > 0 && f.watchPred {
				table.Watches[n.Owner()] = []string{f.path + "/" + s.Nodes[i-1].Name}
			}
		}
	}
	lockqueue.JoinWatches(&s, table, nil, s.UpdatedAt)
	return s
}

// testLogger writes where the test's output goes: shown on failure or -v.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testEnv struct {
	hub *hub.Hub
	srv *Server
	ts  *httptest.Server
}

// newEnv serves a fresh hub. cfg.Hub is filled in.
func newEnv(t testing.TB, cfg Config) *testEnv {
	t.Helper()
	h := hub.New()
	cfg.Hub = h
	if cfg.Services == nil {
		cfg.Services = zkRegistry(nil, nil)
	}
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.Handler(metrics.Config{Hub: h})
	}
	if cfg.Logger == nil {
		cfg.Logger = testLogger(t)
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatalf("web.New: %v", err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		ts.Close()
	})
	return &testEnv{hub: h, srv: srv, ts: ts}
}

// zkRegistry registers ZooKeeper with the given reader and classroom,
// either of which may be nil, as cmd does with zookeeper.Service.
func zkRegistry(r lockservice.Reader, m *simulator.Manager) *lockservice.Registry {
	svc := zookeeper.Service(nil, nil)
	svc.Reader = r
	if m != nil {
		svc.Classroom = zookeeper.NewClassroom(m)
	}
	reg := &lockservice.Registry{}
	if err := reg.Register(svc); err != nil {
		panic(err)
	}
	return reg
}

// testPages are the pages of a server of h's ZooKeeper locks, to call
// without the server's middleware.
func testPages(t testing.TB, h *hub.Hub) *pages {
	t.Helper()
	srv, err := New(Config{Hub: h, Services: zkRegistry(nil, nil), Pages: true, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	return srv.pages
}

// unstartedWatcher is a real zkwatch.Watcher that was never Run: it knows
// its paths and accepts AddPath, and publishes nothing, so the tests decide
// what the hub holds.
func unstartedWatcher(t testing.TB, paths ...string) *zkwatch.Watcher {
	t.Helper()
	w, err := zkwatch.New(zkwatch.Config{Servers: []string{"127.0.0.1:1"}, Paths: paths, Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("zkwatch.New: %v", err)
	}
	t.Cleanup(w.Close)
	return w
}

func (e *testEnv) wsURL(path string) string {
	return "ws" + strings.TrimPrefix(e.ts.URL, "http") + "/ws?path=" + path
}

// countingConn counts the bytes the client reads off the wire.
type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

type viewer struct {
	t    testing.TB
	c    *websocket.Conn
	wire *atomic.Int64
	snap lockqueue.Snapshot
	last []byte // the last frame's payload
	kind string
}

// dial opens a websocket viewer of path; opts may set headers and
// compression.
func (e *testEnv) dial(t testing.TB, path string, opts *websocket.DialOptions) (*viewer, *http.Response, error) {
	t.Helper()
	if opts == nil {
		opts = &websocket.DialOptions{}
	}
	var wire atomic.Int64
	opts.HTTPClient = &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return countingConn{Conn: c, n: &wire}, nil
		},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, e.wsURL(path), opts)
	if err != nil {
		return nil, resp, err
	}
	c.SetReadLimit(64 << 20)
	t.Cleanup(func() { c.CloseNow() })
	return &viewer{t: t, c: c, wire: &wire}, resp, nil
}

func (e *testEnv) mustDial(t testing.TB, path string) *viewer {
	t.Helper()
	v, resp, err := e.dial(t, path, nil)
	if err != nil {
		t.Fatalf("dial %s: %v (response %v)", path, err, statusOfResp(resp))
	}
	return v
}

func statusOfResp(r *http.Response) string {
	if r == nil {
		return "none"
	}
	return r.Status
}

// next reads one frame, applies it to the viewer's state as a browser
// would, and returns the wire bytes it took.
func (v *viewer) next() (wireBytes int64) {
	v.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	before := v.wire.Load()
	typ, b, err := v.c.Read(ctx)
	if err != nil {
		v.t.Fatalf("read frame: %v", err)
	}
	if typ != websocket.MessageText {
		v.t.Fatalf("frame type %v, want text", typ)
	}
	var f Frame
	if err := json.Unmarshal(b, &f); err != nil {
		v.t.Fatalf("decode frame: %v\n%s", err, b)
	}
	switch f.Type {
	case FrameSnapshot:
		if f.Snapshot == nil {
			v.t.Fatalf("snapshot frame without a snapshot: %s", b)
		}
		v.snap = *f.Snapshot
	case FrameDelta:
		if f.Delta == nil {
			v.t.Fatalf("delta frame without fields: %s", b)
		}
		if len(f.At) != len(f.Upsert) {
			v.t.Fatalf("delta with %d positions for %d upserts: %s", len(f.At), len(f.Upsert), b)
		}
		s, err := ApplyDelta(v.snap, f.Delta)
		if err != nil {
			v.t.Fatalf("apply delta: %v", err)
		}
		v.snap = s
	default:
		v.t.Fatalf("frame type %q: %s", f.Type, b)
	}
	v.last, v.kind = b, f.Type
	return v.wire.Load() - before
}

// sameJSON fails the test unless got and want encode identically.
func sameJSON(t testing.TB, what string, got, want any) {
	t.Helper()
	g, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	w, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(g, w) {
		t.Fatalf("%s differs\n got: %.2000s\nwant: %.2000s", what, g, w)
	}
}

// do sends a request and returns the status and body.
func do(t testing.TB, method, url string, body string, header http.Header) (int, http.Header, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

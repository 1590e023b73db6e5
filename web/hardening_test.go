package web

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/zklockviz/zklockviz/lockservice"
	"github.com/zklockviz/zklockviz/zookeeper"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/zklockviz/zklockviz/lockqueue"
)

// stubWatcher stands in for zkwatch.Watcher where a test needs a session
// state an unstarted watcher cannot have.
type stubWatcher struct {
	mu    sync.Mutex
	paths []string
	conn  lockqueue.Connection
}

func (w *stubWatcher) Unwatch(string) error          { return lockservice.ErrUnsupported }
func (w *stubWatcher) Err() error                    { return nil }
func (w *stubWatcher) Run(ctx context.Context) error { <-ctx.Done(); return nil }
func (w *stubWatcher) Close()                        {}

func (w *stubWatcher) Watch(p string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.paths = append(w.paths, p)
	return nil
}

func (w *stubWatcher) Watched() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.paths...)
}

func (w *stubWatcher) Connection() lockqueue.Connection {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.conn
}

// GET /api/v1/locks tells the watcher's own session state at the top level,
// and leaves it out when no watcher runs.
func TestLocksConnection(t *testing.T) {
	get := func(t *testing.T, e *testEnv) (LocksResponse, string) {
		t.Helper()
		code, _, body := do(t, "GET", e.ts.URL+"/api/v1/locks", "", nil)
		if code != 200 {
			t.Fatalf("GET /api/v1/locks = %d %s", code, body)
		}
		var got LocksResponse
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatal(err)
		}
		return got, string(body)
	}

	sw := &stubWatcher{conn: lockqueue.Connected}
	e := newEnv(t, Config{Services: zkRegistry(sw, nil)})
	e.hub.Publish(gozkFolder("/l", 2).snapshot())
	for _, c := range []lockqueue.Connection{lockqueue.Connected, lockqueue.Reconnecting, lockqueue.Expired} {
		sw.mu.Lock()
		sw.conn = c
		sw.mu.Unlock()
		got, body := get(t, e)
		if got.Connection != c || !strings.Contains(body, `"connection":"`+string(c)+`"}`) {
			t.Errorf("watcher %s: body %s, want a top-level connection %q", c, body, c)
		}
	}

	// A real watcher that has not connected yet is reconnecting.
	got, _ := get(t, newEnv(t, Config{Services: zkRegistry(zookeeper.NewReader(unstartedWatcher(t, "/x")), nil)}))
	if got.Connection != lockqueue.Reconnecting {
		t.Errorf("unstarted watcher: connection %q, want reconnecting", got.Connection)
	}

	noWatcher := newEnv(t, Config{})
	noWatcher.hub.Publish(gozkFolder("/l", 2).snapshot())
	got, body := get(t, noWatcher)
	if got.Connection != "" || !strings.HasSuffix(body, "]}\n") {
		t.Errorf("no watcher: body %s, want no top-level connection", body)
	}
}

// hostRequest sends a request with the given Host header.
func hostRequest(t *testing.T, method, url, host, body string, header http.Header) (int, string) {
	t.Helper()
	var rd *strings.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	var req *http.Request
	var err error
	if rd != nil {
		req, err = http.NewRequest(method, url, rd)
	} else {
		req, err = http.NewRequest(method, url, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s (Host %s): %v", method, url, host, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return resp.StatusCode, "" // a websocket: its body never ends
	}
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	if resp.StatusCode != 200 && resp.StatusCode != 101 && !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Errorf("%s %s (Host %s): %d with Content-Type %q, want JSON", method, url, host, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return resp.StatusCode, b.String()
}

// DNS rebinding: without a token, a page on evil.example that rebinds its
// name to 127.0.0.1 reaches the server with Host: evil.example. Every route
// but /healthz must refuse it; loopback names and allowed hosts work.
func TestHostCheck(t *testing.T) {
	e := newEnv(t, Config{Services: zkRegistry(&stubWatcher{}, idleSim(t)), AllowedOrigins: []string{"viz.example.com", "https://*.corp.example"}})
	e.hub.Publish(gozkFolder("/l", 2).snapshot())
	_, port, _ := strings.Cut(strings.TrimPrefix(e.ts.URL, "http://127.0.0.1"), ":")
	upgrade := http.Header{"Connection": {"Upgrade"}, "Upgrade": {"websocket"}, "Sec-Websocket-Version": {"13"},
		"Sec-Websocket-Key": {"dGhlIHNhbXBsZSBub25jZQ=="}}
	evil := http.Header{"Origin": {"http://evil.example:" + port}}

	routes := []struct {
		method, target, body string
		header               http.Header
		ok                   int
	}{
		{"GET", "/api/v1/locks", "", nil, 200},
		{"GET", "/api/v1/lock?path=/l", "", nil, 200},
		{"POST", "/api/v1/watch", `{"path":"/x"}`, nil, 200},
		{"GET", "/ws?path=/l", "", upgrade, 101},
		{"GET", "/api/v1/sim/scenarios", "", nil, 200},
		{"GET", "/metrics", "", nil, 200},
		{"GET", "/", "", nil, 200},
	}
	for _, host := range []string{"evil.example", "evil.example:" + port, "127.0.0.1.evil.example", "localhost.evil.example", "10.1.2.3:" + port, "[::2]:" + port} {
		for _, rt := range routes {
			h := http.Header{}
			for k, v := range rt.header {
				h[k] = v
			}
			for k, v := range evil {
				h[k] = v
			}
			code, body := hostRequest(t, rt.method, e.ts.URL+rt.target, host, rt.body, h)
			if code != http.StatusForbidden || !strings.Contains(body, `"error":"host `) {
				t.Errorf("%s %s with Host %q = %d %s, want 403 and a JSON error", rt.method, rt.target, host, code, body)
			}
		}
	}
	for _, host := range []string{"evil.example", "evil.example:" + port} {
		if code, body := hostRequest(t, "GET", e.ts.URL+"/healthz", host, "", nil); code != 200 || body != "ok" {
			t.Errorf("GET /healthz with Host %q = %d %s, want 200 ok", host, code, body)
		}
	}
	for _, host := range []string{"127.0.0.1:" + port, "127.0.0.1", "127.1.2.3:" + port, "localhost:" + port, "LOCALHOST",
		"localhost.:" + port, "viz.localhost:" + port, "[::1]:" + port, "[::1]", "viz.example.com", "viz.example.com:" + port,
		"a.corp.example:" + port} {
		for _, rt := range routes {
			h := http.Header{}
			for k, v := range rt.header {
				h[k] = v
			}
			code, body := hostRequest(t, rt.method, e.ts.URL+rt.target, host, rt.body, h)
			if code != rt.ok {
				t.Errorf("%s %s with Host %q = %d %s, want %d", rt.method, rt.target, host, code, body, rt.ok)
			}
		}
	}

	// With a token the Host does not matter: a rebinding page has no token.
	authed := newEnv(t, Config{AuthToken: "tok"})
	if code, body := hostRequest(t, "GET", authed.ts.URL+"/api/v1/locks", "evil.example", "", http.Header{"Authorization": {"Bearer tok"}}); code != 200 {
		t.Errorf("with the token, Host evil.example = %d %s, want 200", code, body)
	}
	if code, _ := hostRequest(t, "GET", authed.ts.URL+"/api/v1/locks", "evil.example", "", nil); code != 401 {
		t.Errorf("without the token = %d, want 401", code)
	}
}

// Shutdown returns when its context ends, however the viewers behave: one
// that never answers the close handshake, one whose socket is full because
// it never reads. The well-behaved ones are told StatusGoingAway.
func TestShutdownBounded(t *testing.T) {
	e := newEnv(t, Config{WriteTimeout: 10 * time.Minute})
	e.hub.Publish(bulky(1, 200))
	var good []*viewer
	for range 3 {
		v := e.mustDial(t, "/busy")
		v.next()
		good = append(good, v)
	}
	var silent []*viewer
	for range 5 {
		v := e.mustDial(t, "/busy")
		v.next()
		silent = append(silent, v) // reads no more, so never answers a close
	}
	stuck := e.mustDial(t, "/busy") // never reads at all
	// Fill the stuck viewer's socket: publish until its writes block.
	for rev := int64(2); e.hub.Stats().Coalesced < 5; rev++ {
		if rev > 5000 {
			t.Fatal("the stuck viewer's socket never filled")
		}
		e.hub.Publish(bulky(rev, 200))
		for _, v := range good {
			v.next()
		}
	}
	if n := e.srv.Viewers(); n != 9 {
		t.Fatalf("%d viewers before shutdown, want 9", n)
	}

	// The good viewers read on, to answer the close handshake.
	var wg sync.WaitGroup
	codes := make([]websocket.StatusCode, len(good))
	for i, v := range good {
		wg.Go(func() {
			for {
				if _, _, err := v.c.Read(context.Background()); err != nil {
					codes[i] = websocket.CloseStatus(err)
					return
				}
			}
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	err := e.srv.Shutdown(ctx)
	took := time.Since(start)
	if took > 3*time.Second {
		t.Errorf("Shutdown with a 1s context took %v", took)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown = %v, want the context's deadline (some viewers never said goodbye)", err)
	}
	wg.Wait()
	for i, c := range codes {
		if c != websocket.StatusGoingAway {
			t.Errorf("good viewer %d closed with %v, want StatusGoingAway", i, c)
		}
	}
	// Every handler ends soon after: nothing is left holding a socket.
	deadline := time.Now().Add(5 * time.Second)
	for e.srv.Viewers() > 0 || e.hub.Stats().Viewers > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d sockets and %d subscriptions left after Shutdown", e.srv.Viewers(), e.hub.Stats().Viewers)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("Shutdown returned after %v: %v (%d silent viewers, 1 stuck)", took, err, len(silent))
	_ = stuck
}

// With well-behaved viewers only, Shutdown returns nil as soon as they have
// all said goodbye.
func TestShutdownClean(t *testing.T) {
	e := newEnv(t, Config{})
	e.hub.Publish(gozkFolder("/l", 3).snapshot())
	var wg sync.WaitGroup
	for range 20 {
		v := e.mustDial(t, "/l")
		v.next()
		wg.Go(func() {
			for {
				if _, _, err := v.c.Read(context.Background()); err != nil {
					return
				}
			}
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown = %v, want nil", err)
	}
	wg.Wait()
}

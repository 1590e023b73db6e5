package web

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/hub"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/lockservice"
	"github.com/zklockviz/zklockviz/third_party/zk"
	"github.com/zklockviz/zklockviz/zkwatch"
	"github.com/zklockviz/zklockviz/zookeeper"
	"github.com/zklockviz/zklockviz/zookeeper/zklocal/zktest"
)

// TestUnwatchThroughHTTP: DELETE /api/v1/watch against a real watcher on a
// real ZooKeeper stops following the lock (its viewers' sockets end, the
// API forgets it, a later change publishes nothing), leaves the other lock
// alone, refuses a lock found under a --watch-under prefix (discovery would
// find it again), and a lock watched again is read afresh.
func TestUnwatchThroughHTTP(t *testing.T) {
	addr := zkAddr(t)
	root := "/webtest/" + zktest.NodeName(t)
	a, b, apps := root+"/a", root+"/b", root+"/apps"
	found := apps + "/found"
	c := zktest.Connect(t, addr)
	for _, p := range []string{"/webtest", root, a, b, apps, found} {
		if _, err := c.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
			t.Fatalf("create %s: %v", p, err)
		}
	}
	for _, p := range []string{a, found} {
		if err := zk.NewLock(c, p, zk.WorldACL(zk.PermAll)).Lock(); err != nil {
			t.Fatalf("lock %s: %v", p, err)
		}
	}

	reg := &lockservice.Registry{}
	e := newEnv(t, Config{Services: reg})
	w, err := zkwatch.New(zkwatch.Config{Servers: []string{addr}, SessionTimeout: 10 * time.Second, Prefixes: []string{apps},
		Publish: e.hub.Publish, Forget: e.hub.Remove, Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("zkwatch.New: %v", err)
	}
	if err := reg.Register(zookeeper.Service(w, nil)); err != nil {
		t.Fatal(err)
	}
	go w.Run(context.Background())
	t.Cleanup(w.Close)

	for _, p := range []string{a, b} {
		if code, _, body := do(t, "POST", e.ts.URL+"/api/v1/watch", `{"path":"`+p+`"}`, nil); code != 200 {
			t.Fatalf("watch %s: %d %s", p, code, body)
		}
	}
	waitLock(t, e.hub, a, func(s lockqueue.Snapshot) bool { return s.Live() && len(s.Holders()) == 1 })
	waitLock(t, e.hub, b, func(s lockqueue.Snapshot) bool { return s.Live() })
	waitLock(t, e.hub, found, func(s lockqueue.Snapshot) bool { return s.Live() && len(s.Holders()) == 1 })
	v := e.mustDial(t, url.QueryEscape(a))
	v.next()

	unwatch := e.ts.URL + "/api/v1/watch?path=" + url.QueryEscape(a)
	if code, _, body := do(t, "DELETE", unwatch, "", nil); code != http.StatusNoContent {
		t.Fatalf("DELETE %s: %d %s, want 204", a, code, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	if _, _, err := v.c.Read(ctx); err == nil || ctx.Err() != nil {
		t.Errorf("the viewer of an unwatched lock read %v (context %v), want its socket closed", err, ctx.Err())
	}
	if slices.Contains(w.Paths(), a) {
		t.Errorf("watcher still follows %s: %v", a, w.Paths())
	}

	tests := []struct {
		name, method, url string
		want              int
	}{
		{"lock forgotten", "GET", "/api/v1/lock?path=" + url.QueryEscape(a), 404},
		{"unwatched twice", "DELETE", "/api/v1/watch?path=" + url.QueryEscape(a), 404},
		{"never watched", "DELETE", "/api/v1/watch?path=/nowhere", 404},
		{"bad path", "DELETE", "/api/v1/watch?path=no-slash", 400},
		{"no path", "DELETE", "/api/v1/watch", 400},
		{"unknown service", "DELETE", "/api/v1/watch?service=nope&path=/x", 404},
		{"other lock kept", "GET", "/api/v1/lock?path=" + url.QueryEscape(b), 200},
		{"found under a prefix", "DELETE", "/api/v1/watch?path=" + url.QueryEscape(found), 409},
		{"found lock kept", "GET", "/api/v1/lock?path=" + url.QueryEscape(found), 200},
	}
	for _, tc := range tests {
		if code, _, body := do(t, tc.method, e.ts.URL+tc.url, "", nil); code != tc.want {
			t.Errorf("%s: %s %s = %d %s, want %d", tc.name, tc.method, tc.url, code, body, tc.want)
		}
	}
	if locks := listedLocks(t, e); slices.Contains(locks, a) || !slices.Contains(locks, b) {
		t.Errorf("GET /api/v1/locks lists %v, want %s and not %s", locks, b, a)
	}

	// The server still holds the old children watch on a: a change fires
	// it, and nothing may answer. A change to b after it, on the same
	// session, is published after that event was delivered.
	acl := zk.WorldACL(zk.PermAll)
	if _, err := c.Create(a+"/late-", nil, zk.FlagEphemeral|zk.FlagSequence, acl); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(b+"/late-", nil, zk.FlagEphemeral|zk.FlagSequence, acl); err != nil {
		t.Fatal(err)
	}
	waitLock(t, e.hub, b, func(s lockqueue.Snapshot) bool { return len(s.Nodes) == 1 })
	if s, ok := e.hub.Latest(a); ok {
		t.Errorf("an unwatched lock was published after a change: %d nodes", len(s.Nodes))
	}

	if code, _, body := do(t, "POST", e.ts.URL+"/api/v1/watch", `{"path":"`+a+`"}`, nil); code != 200 {
		t.Fatalf("watch %s again: %d %s", a, code, body)
	}
	waitLock(t, e.hub, a, func(s lockqueue.Snapshot) bool { return s.Live() && len(s.Nodes) == 2 })
}

// waitLock waits for a snapshot of path that satisfies ok, through a hub
// subscription.
func waitLock(t *testing.T, h *hub.Hub, path string, ok func(lockqueue.Snapshot) bool) {
	t.Helper()
	sub := h.Subscribe(path)
	defer sub.Close()
	// A bound on "eventually" for a loaded box, not a speed assertion.
	timeout := time.After(30 * time.Second)
	var last lockqueue.Snapshot
	for {
		select {
		case <-sub.C():
			if s, has := sub.Next(); has {
				if last = s; ok(s) {
					return
				}
			}
		case <-timeout:
			t.Fatalf("no snapshot of %s as wanted after 30s; last: %d nodes, %s, error %q", path, len(last.Nodes), last.Connection, last.Error)
		}
	}
}

// listedLocks is the paths GET /api/v1/locks lists.
func listedLocks(t *testing.T, e *testEnv) []string {
	t.Helper()
	code, _, body := do(t, "GET", e.ts.URL+"/api/v1/locks", "", nil)
	if code != 200 {
		t.Fatalf("GET /api/v1/locks: %d %s", code, body)
	}
	var resp LocksResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range resp.Locks {
		out = append(out, l.Path)
	}
	return out
}

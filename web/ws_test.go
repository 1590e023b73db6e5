package web

import (
	"context"
	"fmt"
	"github.com/zklockviz/zklockviz/zookeeper"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/zklockviz/zklockviz/lockqueue"
)

// A viewer that patches each frame into its state must hold exactly the
// hub's snapshot after every kind of change.
func TestWebsocketFollowsChanges(t *testing.T) {
	e := newEnv(t, Config{})
	f := gozkFolder("/orders", 5)
	f.watchPred = true
	e.hub.Publish(f.snapshot())
	v := e.mustDial(t, "/orders")

	steps := []struct {
		name   string
		change func()
		kind   string
	}{
		{"first frame is the current state", func() {}, FrameSnapshot},
		{"a waiter joins", func() { f.add(5) }, FrameDelta},
		{"the holder releases", func() { f.remove(gozk(0, 0)) }, FrameDelta},
		{"a waiter in the middle leaves", func() { f.remove(gozk(3, 3)) }, FrameDelta},
		{"a node's data changes", func() { f.kids[1].Data = []byte("now with a fencing token") }, FrameDelta},
		{"the connection drops", func() { f.conn = lockqueue.Reconnecting }, FrameDelta},
		{"nothing but the revision changes", func() {}, FrameDelta},
		{"the connection is back", func() { f.conn = lockqueue.Connected }, FrameDelta},
		{"a foreign child appears", func() {
			f.kids = append(f.kids, lockqueue.Child{Name: "zookeeper-notes", Czxid: 1})
		}, FrameDelta},
		{"everyone leaves", func() { f.kids = nil }, FrameSnapshot},
		{"a new queue forms", func() { f.add(7); f.add(8) }, FrameSnapshot},
		{"one more joins", func() { f.add(9) }, FrameDelta},
	}
	for i, st := range steps {
		if i > 0 {
			st.change()
			f.rev++
			e.hub.Publish(f.snapshot())
		}
		v.next()
		want, _ := e.hub.Latest("/orders")
		sameJSON(t, st.name, v.snap, wireSnapshot(want))
		if v.kind != st.kind {
			t.Errorf("%s: sent a %s frame, want %s (%d bytes)", st.name, v.kind, st.kind, len(v.last))
		}
	}
}

func TestWebsocketRejects(t *testing.T) {
	w := unstartedWatcher(t, "/watched")
	e := newEnv(t, Config{Services: zkRegistry(zookeeper.NewReader(w), nil), AllowedOrigins: []string{"*.example.com", "https://exact.example.org"}})
	e.hub.Publish(gozkFolder("/l", 1).snapshot())
	authed := newEnv(t, Config{AuthToken: "tok"})
	authed.hub.Publish(gozkFolder("/l", 1).snapshot())

	tests := []struct {
		name   string
		env    *testEnv
		query  string
		header http.Header
		code   int // 0: the upgrade succeeds
	}{
		{"same host", e, "?path=/l", nil, 0},
		{"no origin (not a browser)", e, "?path=/l", http.Header{"Origin": nil}, 0},
		{"watched, not read yet", e, "?path=/watched", nil, 0},
		{"allowed origin pattern", e, "?path=/l", http.Header{"Origin": {"https://viz.example.com"}}, 0},
		{"allowed origin with scheme", e, "?path=/l", http.Header{"Origin": {"https://exact.example.org"}}, 0},
		{"allowed host, other scheme", e, "?path=/l", http.Header{"Origin": {"http://exact.example.org"}}, 403},
		{"foreign origin", e, "?path=/l", http.Header{"Origin": {"https://evil.example"}}, 403},
		{"missing path", e, "", nil, 400},
		{"empty path", e, "?path=", nil, 400},
		{"malformed path", e, "?path=/l/", nil, 400},
		{"unknown path", e, "?path=/nope", nil, 404},
		{"no token", authed, "?path=/l", nil, 401},
		{"token", authed, "?path=/l", http.Header{"Authorization": {"Bearer tok"}}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
			defer cancel()
			hdr := http.Header{"Origin": {tc.env.ts.URL}}
			for k, v := range tc.header {
				hdr[k] = v
			}
			url := "ws" + strings.TrimPrefix(tc.env.ts.URL, "http") + "/ws" + tc.query
			c, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: hdr})
			if tc.code == 0 {
				if err != nil {
					t.Fatalf("dial: %v (%s)", err, statusOfResp(resp))
				}
				c.CloseNow()
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
}

// A viewer of a watched path that has no snapshot yet gets the first one
// when it comes.
func TestWebsocketWaitsForFirstSnapshot(t *testing.T) {
	e := newEnv(t, Config{Services: zkRegistry(zookeeper.NewReader(unstartedWatcher(t, "/later")), nil)})
	v := e.mustDial(t, "/later")
	f := gozkFolder("/later", 2)
	f.rev = 42
	e.hub.Publish(f.snapshot())
	v.next()
	if v.kind != FrameSnapshot || v.snap.Revision != 42 || len(v.snap.Nodes) != 2 {
		t.Fatalf("first frame %s rev %d with %d nodes, want the snapshot published", v.kind, v.snap.Revision, len(v.snap.Nodes))
	}
}

func TestWebsocketClose(t *testing.T) {
	tests := []struct {
		name   string
		end    func(e *testEnv)
		status websocket.StatusCode
	}{
		{"lock removed", func(e *testEnv) { e.hub.Remove("/l") }, websocket.StatusNormalClosure},
		{"server shutdown", func(e *testEnv) {
			ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
			defer cancel()
			if err := e.srv.Shutdown(ctx); err != nil {
				t.Errorf("Shutdown: %v", err)
			}
		}, websocket.StatusGoingAway},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, Config{})
			e.hub.Publish(gozkFolder("/l", 1).snapshot())
			v := e.mustDial(t, "/l")
			v.next()
			go tc.end(e)
			ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
			defer cancel()
			_, _, err := v.c.Read(ctx)
			if got := websocket.CloseStatus(err); got != tc.status {
				t.Fatalf("read after %s: %v (status %v), want close status %v", tc.name, err, got, tc.status)
			}
		})
	}
	// After shutdown no new viewer gets in.
	e := newEnv(t, Config{})
	e.hub.Publish(gozkFolder("/l", 1).snapshot())
	e.srv.CloseWebsockets()
	if _, resp, err := e.dial(t, "/l", nil); err == nil || resp == nil || resp.StatusCode != 503 {
		t.Fatalf("dial after shutdown: %v (%s), want 503", err, statusOfResp(resp))
	}
}

// bulky is a snapshot in which every node changes every revision, with
// about a kilobyte of data each, so every frame is a whole one of ~rows KB.
func bulky(rev int64, rows int) lockqueue.Snapshot {
	f := gozkFolder("/busy", rows)
	for i := range f.kids {
		f.kids[i].Data = fmt.Appendf(nil, "rev %d %s", rev, strings.Repeat("x", 1000))
	}
	f.rev = rev
	return f.snapshot()
}

// A viewer that never reads must not hold up one that does: the fast one
// receives every revision while the stuck one's socket is full and its
// mailbox is coalesced, holding one snapshot, never a backlog.
func TestSlowReaderDoesNotBlockOthers(t *testing.T) {
	// The stuck viewer must stay connected (blocked in a write) for the
	// whole test, so the write timeout is long.
	e := newEnv(t, Config{WriteTimeout: 10 * time.Minute})
	e.hub.Publish(bulky(1, 200))
	stuck := e.mustDial(t, "/busy") // never reads
	fast := e.mustDial(t, "/busy")
	fast.next()

	const wantCoalesced = 20
	const maxRevs = 5000 // ~1 GB of frames: far beyond any socket buffer
	rev := int64(1)
	for e.hub.Stats().Coalesced < wantCoalesced {
		if rev == maxRevs {
			t.Fatalf("after %d revisions the stuck viewer was never coalesced: %+v", rev, e.hub.Stats())
		}
		rev++
		e.hub.Publish(bulky(rev, 200))
		fast.next()
		if fast.snap.Revision != rev {
			t.Fatalf("fast viewer got revision %d, want %d: it missed an update", fast.snap.Revision, rev)
		}
		if st := e.hub.Stats(); st.Pending > st.Viewers {
			t.Fatalf("hub holds %d pending snapshots for %d viewers: unbounded", st.Pending, st.Viewers)
		}
	}
	st := e.hub.Stats()
	if st.Viewers != 2 || st.Pending > 1 {
		t.Fatalf("Stats = %+v, want both viewers, at most the stuck one's snapshot pending", st)
	}
	t.Logf("fast viewer received %d revisions in order; the stuck one blocked after roughly %d and was coalesced %d times",
		rev, rev-st.Coalesced, st.Coalesced)
	stuck.c.CloseNow()
}

// tenThousand is a 10,000-node go-zookeeper queue with every waiter
// watching its predecessor, as the server's watch table would show it.
func tenThousand() *folder {
	f := gozkFolder("/big", 10000)
	f.watchPred = true
	return f
}

// A one-node change in a 10,000-node queue must cost a viewer less than
// 2 KB on the wire, compressed or not.
func TestFrameSize10k(t *testing.T) {
	const budget = 2048
	for _, mode := range []websocket.CompressionMode{websocket.CompressionDisabled, websocket.CompressionNoContextTakeover} {
		name := map[websocket.CompressionMode]string{websocket.CompressionDisabled: "plain", websocket.CompressionNoContextTakeover: "deflate"}[mode]
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, Config{})
			f := tenThousand()
			e.hub.Publish(f.snapshot())
			v, resp, err := e.dial(t, "/big", &websocket.DialOptions{CompressionMode: mode})
			if err != nil {
				t.Fatalf("dial: %v (%s)", err, statusOfResp(resp))
			}
			first := v.next()
			t.Logf("%s: first frame (whole snapshot, 10,000 nodes): %d bytes on the wire, %d bytes of JSON", name, first, len(v.last))

			changes := []struct {
				name   string
				change func()
			}{
				{"a waiter joins at the tail", func() { f.add(10000) }},
				{"the holder releases", func() { f.remove(gozk(0, 0)) }},
				{"a waiter in the middle leaves", func() { f.remove(gozk(5000, 5000)) }},
				{"a waiter's data changes", func() { f.kids[42].Data = []byte("fencing token 42") }},
				{"the connection drops", func() { f.conn = lockqueue.Reconnecting }},
			}
			for _, c := range changes {
				c.change()
				f.rev++
				e.hub.Publish(f.snapshot())
				wire := v.next()
				t.Logf("%s: %-32s %s frame: %4d bytes on the wire, %4d bytes of JSON", name, c.name, v.kind, wire, len(v.last))
				if v.kind != FrameDelta || wire >= budget {
					t.Errorf("%s: %s frame of %d bytes on the wire, want a delta under %d", c.name, v.kind, wire, budget)
				}
			}
			want, _ := e.hub.Latest("/big")
			sameJSON(t, "viewer's state after the deltas", v.snap, wireSnapshot(want))
		})
	}
}

// BenchmarkFrame10k is the server's cost per change for a one-node change
// in a 10,000-node queue: the frame every viewer of the lock shares
// (frames.go), computed once per change.
//
//	go test ./web -run '^$' -bench BenchmarkFrame10k
func BenchmarkFrame10k(b *testing.B) {
	f := tenThousand()
	prev := f.snapshot()
	f.add(10000)
	f.rev++
	next := f.snapshot()
	s := &Server{caches: map[string]*frameCache{}}
	frames := sockFrames{cache: s.frames(prev.Path)}
	if _, _, err := frames.next(prev, 1); err != nil {
		b.Fatal(err)
	}
	snaps := [2]lockqueue.Snapshot{next, prev}
	b.ReportAllocs()
	seq := uint64(2)
	for b.Loop() {
		// Back and forth: every frame is a one-node delta.
		if _, kind, err := frames.next(snaps[seq%2], seq); err != nil || kind != FrameDelta {
			b.Fatalf("%s %v", kind, err)
		}
		seq++
	}
}

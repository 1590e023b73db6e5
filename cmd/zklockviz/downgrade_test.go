package main

import (
	"net/url"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// A real Curator client holding the write lock of an
// InterProcessReadWriteLock takes its read lock too (Curator's documented
// downgrade, granted at once in the same thread and session): the API
// shows two held nodes of one session and no alert, past the debounce that
// would make a waiter watching nothing an orphan; another session's writer
// waits for the read node, and gets the lock once both are let go.
func TestCuratorDowngradeHolds(t *testing.T) {
	zks := sharedZK(t)
	const lock = "/cli/downgrade"
	srv := startServe(t, "--zk", zks.Addr(), "--addr", "127.0.0.1:0", "--watch", lock, "--poll", "250ms",
		"--history", "off", "--log-level", "warn")
	c := curatorClient(t, zks.Addr(), lock, 10*time.Second, "downgrade", "write")
	c.expect(t, "acquired 0")
	c.expect(t, "queued 1")

	read := func() lockqueue.Snapshot {
		var snap lockqueue.Snapshot
		getJSON(t, srv.url+"/api/v1/lock?path="+url.QueryEscape(lock), &snap)
		return snap
	}
	waitFor(t, "the downgrade and a writer behind it, its watch confirmed", func() bool {
		s := read()
		return s.Live() && len(s.Nodes) == 3 && s.Nodes[2].Edge == lockqueue.EdgeConfirmed
	})
	// Past the debounce a waiter that watches nothing is an orphan: the
	// read node must still be a holder then.
	time.Sleep(lockqueue.Debounce + time.Second)
	s := read()
	if len(s.Nodes) != 3 {
		t.Fatalf("%d nodes, want the write and read nodes of the downgrade and a writer: %+v", len(s.Nodes), s.Nodes)
	}
	w, r, next := s.Nodes[0], s.Nodes[1], s.Nodes[2]
	if w.Mode != lockqueue.Write || r.Mode != lockqueue.Read || !w.Holding || !r.Holding || r.WaitsFor != "" {
		t.Errorf("downgrade: %s %s holding=%t, %s %s holding=%t waits for %q; want both held", w.Name, w.Mode, w.Holding, r.Name, r.Mode, r.Holding, r.WaitsFor)
	}
	if w.Session == "" || w.Session != r.Session || next.Session == w.Session {
		t.Errorf("sessions %s, %s, %s: want the downgrade's two nodes in one session, the writer in another", w.Session, r.Session, next.Session)
	}
	if next.Holding || next.WaitsFor != r.Name || next.Edge != lockqueue.EdgeConfirmed {
		t.Errorf("writer %s holding=%t waits for %q (%s), want waiting for the read node %s, confirmed", next.Name, next.Holding, next.WaitsFor, next.Edge, r.Name)
	}
	if len(s.Alerts) != 0 {
		t.Errorf("alerts %+v, want none on a healthy downgrade", s.Alerts)
	}

	c.send(t, "release 0")
	c.expect(t, "released 0")
	c.expect(t, "acquired 1")
	waitFor(t, "the writer holds", func() bool {
		s := read()
		return s.Live() && len(s.Nodes) == 1 && s.Nodes[0].Name == next.Name && s.Nodes[0].Holding
	})
}

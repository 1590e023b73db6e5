package zkwatch

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/third_party/zk"
)

// go-zookeeper's own Lock waits with GetW on its predecessor: a data watch
// the server lists, so every waiter's edge must be confirmed, through 4lw
// and through the AdminServer alike.
func TestGoZookeeperLock(t *testing.T) {
	s := sharedServer(t)
	path := fresh("/gozk/lock")
	_, rec4 := startWatcher(t, Config{Servers: []string{s.Addr()}, Paths: []string{path}})
	_, recA := startWatcher(t, Config{Servers: []string{s.Addr()}, Paths: []string{path}, AdminURLs: []string{s.AdminURL()}})

	var locks []*zk.Lock
	var acquired []chan error
	for i := range 3 {
		l := zk.NewLock(connect(t, []string{s.Addr()}, 10*time.Second), path, acl)
		done := make(chan error, 1)
		go func() { done <- l.Lock() }()
		locks, acquired = append(locks, l), append(acquired, done)
		rec4.wait(t, path, 0, fmt.Sprintf("%d nodes", i+1), func(s lockqueue.Snapshot) bool { return len(s.Nodes) == i+1 })
	}

	want := []wantNode{{true, -1}, {false, 0}, {false, 1}}
	for _, tc := range []struct {
		source string
		rec    *recorder
	}{{"4lw", rec4}, {"admin", recA}} {
		t.Run(tc.source, func(t *testing.T) {
			snap := tc.rec.wait(t, path, 0, "go-zookeeper queue of 3, edges confirmed", queueIs(lockqueue.GoZookeeper, want, lockqueue.EdgeConfirmed))
			if snap.WatchSource != tc.source {
				t.Errorf("watchSource = %q, want %q", snap.WatchSource, tc.source)
			}
			if snap.Revision == 0 {
				t.Errorf("revision 0, want the parent's pzxid")
			}
			for i, n := range snap.Nodes {
				if i > 0 && !slices.Contains(n.Watching, path+"/"+snap.Nodes[i-1].Name) {
					t.Errorf("%s watching %v, want its predecessor", n.Name, n.Watching)
				}
				if n.Session == "" || n.Session == "0x0" {
					t.Errorf("%s session %q, want its ephemeral owner", n.Name, n.Session)
				}
			}
		})
	}

	if err := <-acquired[0]; err != nil {
		t.Fatalf("first Lock: %v", err)
	}
	mark := rec4.mark(path)
	if err := locks[0].Unlock(); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	rec4.wait(t, path, mark, "the next waiter holds after a release", queueIs(lockqueue.GoZookeeper, []wantNode{{true, -1}, {false, 0}}, lockqueue.EdgeConfirmed))
	if err := <-acquired[1]; err != nil {
		t.Fatalf("second Lock: %v", err)
	}
}

// The watcher's own session holds an exists watch on a missing lock parent;
// the server lists it, the merged table must not. Another session's watch
// on the same path must be there.
func TestOwnSessionNeverListed(t *testing.T) {
	s := sharedServer(t)
	path := fresh("/own/absent")
	w, rec := startWatcher(t, Config{Servers: []string{s.Addr()}, Paths: []string{path}})
	snap := rec.wait(t, path, 0, "exists=false", func(s lockqueue.Snapshot) bool { return s.Live() && !s.Exists })
	if !hasAlert(snap, lockqueue.AlertNoParent) {
		t.Errorf("no %s alert: %s", lockqueue.AlertNoParent, describe(snap))
	}
	other := connect(t, []string{s.Addr()}, 10*time.Second)
	if _, _, _, err := other.ExistsW(path); err != nil {
		t.Fatal(err)
	}

	reply, err := fourLetter(context.Background(), s.Addr(), "wchp")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := parseWchp(reply)
	if err != nil {
		t.Fatal(err)
	}
	own := w.sess.sessionID()
	if !slices.Contains(raw[own], path) {
		t.Fatalf("the server does not list the watcher's own exists watch on %s (session 0x%x); wchp:\n%s", path, own, reply)
	}

	deadline := time.Now().Add(waitTimeout)
	for {
		table := w.poll.current().table
		if slices.Contains(table.Watches[other.SessionID()], path) {
			if ps, ok := table.Watches[own]; ok {
				t.Fatalf("merged table lists the watcher's own session 0x%x: %v", own, ps)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("merged table never listed session 0x%x's watch on %s: %v", other.SessionID(), path, table.Watches)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// With a chroot, paths in snapshots and in the watch join are relative to it.
func TestChroot(t *testing.T) {
	s := sharedServer(t)
	root, path := fresh("/tenant-a"), "/lock"
	_, rec := startWatcher(t, Config{Servers: []string{s.Addr()}, Chroot: root, Paths: []string{path}})
	for i := range 2 {
		l := zk.NewLock(connect(t, []string{s.Addr()}, 10*time.Second), root+path, acl)
		go l.Lock()
		rec.wait(t, path, 0, fmt.Sprintf("%d nodes", i+1), func(s lockqueue.Snapshot) bool { return len(s.Nodes) == i+1 })
	}
	snap := rec.wait(t, path, 0, "queue of 2 under the chroot, confirmed", queueIs(lockqueue.GoZookeeper, exclusive(2), lockqueue.EdgeConfirmed))
	if want := path + "/" + snap.Nodes[0].Name; !slices.Equal(snap.Nodes[1].Watching, []string{want}) {
		t.Errorf("waiter watching %v, want [%s]", snap.Nodes[1].Watching, want)
	}
}

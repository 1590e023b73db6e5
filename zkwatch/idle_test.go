package zkwatch

import (
	"path"
	"slices"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/third_party/zk"
)

// waitPolls waits until the watcher has merged n more watch tables.
func waitPolls(t *testing.T, w *Watcher, n uint64) {
	t.Helper()
	until := w.poll.current().gen + n
	deadline := time.Now().Add(waitTimeout)
	for w.poll.current().gen < until {
		if time.Now().After(deadline) {
			t.Fatalf("fewer than %d watch-table polls in %s", n, waitTimeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A watch-table poll that changes nothing of a lock neither joins it nor
// publishes it, while a watch that appears or goes away on a session
// owning a node of the lock is still published by the next poll.
func TestIdlePollJoinsNothing(t *testing.T) {
	s := sharedServer(t)
	dir := fresh("/idle/queue")
	mkdirs(t, connect(t, []string{s.Addr()}, 10*time.Second), dir)
	w, rec := startWatcher(t, Config{Servers: []string{s.Addr()}, Paths: []string{dir}, Poll: 100 * time.Millisecond})

	holder := zk.NewLock(connect(t, []string{s.Addr()}, 10*time.Second), dir, acl)
	if err := holder.Lock(); err != nil {
		t.Fatal(err)
	}
	waiterConn := connect(t, []string{s.Addr()}, 10*time.Second)
	go zk.NewLock(waiterConn, dir, acl).Lock()
	rec.wait(t, dir, 0, "the waiter's watch confirmed", queueIs(lockqueue.GoZookeeper, exclusive(2), lockqueue.EdgeConfirmed))
	waitPolls(t, w, 2) // the last table changes nothing any more

	joins, mark := w.Joins(), rec.mark(dir)
	waitPolls(t, w, 10)
	if got := w.Joins() - joins; got != 0 {
		t.Errorf("10 polls of an unchanged table joined the lock %d times, want none", got)
	}
	if got := rec.all(dir)[mark:]; len(got) != 0 {
		t.Errorf("10 polls of an unchanged table published %d snapshots, want none; last: %s", len(got), describe(got[len(got)-1]))
	}

	// The waiter's session watches one more path: the next polls show it.
	elsewhere := dir + "-elsewhere"
	if _, _, _, err := waiterConn.ExistsW(elsewhere); err != nil {
		t.Fatal(err)
	}
	watches := func(want bool) func(lockqueue.Snapshot) bool {
		return func(s lockqueue.Snapshot) bool {
			return s.Live() && len(s.Nodes) == 2 && slices.Contains(s.Nodes[1].Watching, elsewhere) == want &&
				s.Nodes[1].Edge == lockqueue.EdgeConfirmed
		}
	}
	rec.wait(t, dir, mark, "the waiter's new watch", watches(true))
	// It fires and is gone: the next polls show that too.
	mark = rec.mark(dir)
	if _, err := connect(t, []string{s.Addr()}, 10*time.Second).Create(elsewhere, nil, zk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, dir, mark, "the waiter's fired watch gone", watches(false))
}

// A holder's stall is found by a join once it has lasted the grace, many
// polls after the last change of the table: those polls are not idle for
// the lock until the stall is published, and are again after.
func TestStallAlertsAfterGraceWithoutTableChange(t *testing.T) {
	s := sharedServer(t)
	dir := fresh("/idle/stall")
	mkdirs(t, connect(t, []string{s.Addr()}, 10*time.Second), dir)
	const grace = 1500 * time.Millisecond // 15 polls
	w, rec := startWatcher(t, Config{Servers: []string{s.Addr()}, Paths: []string{dir}, Poll: 100 * time.Millisecond, StallGrace: grace})

	first := zk.NewLock(connect(t, []string{s.Addr()}, 10*time.Second), dir, acl)
	if err := first.Lock(); err != nil {
		t.Fatal(err)
	}
	buggy := &lastOtherLock{conn: connect(t, []string{s.Addr()}, 10*time.Second), dir: dir, watching: make(chan string, 4)}
	go buggy.lock()
	<-buggy.watching
	last := zk.NewLock(connect(t, []string{s.Addr()}, 10*time.Second), dir, acl)
	go last.Lock()
	healthy := rec.wait(t, dir, 0, "three nodes, both waiters confirmed", queueIs(lockqueue.GoZookeeper, exclusive(3), lockqueue.EdgeConfirmed))
	x, b := healthy.Nodes[1].Name, healthy.Nodes[2].Name
	if x != path.Base(buggy.node) {
		t.Fatalf("queue %s: want the wrong-watch client's node second", describe(healthy))
	}

	mark := rec.mark(dir)
	if err := first.Unlock(); err != nil {
		t.Fatal(err)
	}
	if got := <-buggy.watching; got != b {
		t.Fatalf("the client watches %s, want the node after it, %s", got, b)
	}
	// The first table with the new holder's watch on b: its stall begins.
	rec.wait(t, dir, mark, "the new holder watching the node after it", func(s lockqueue.Snapshot) bool {
		return s.Live() && len(s.Nodes) == 2 && s.Nodes[0].Name == x && slices.Contains(s.Nodes[0].Watching, path.Join(dir, b))
	})
	seen := time.Now()
	snap := rec.wait(t, dir, mark, "a stalled holder", func(s lockqueue.Snapshot) bool {
		_, ok := stallOf(s, x)
		return s.Live() && ok
	})
	if waited := time.Since(seen); waited < grace/2 {
		t.Errorf("the stall was published %s after the watch, want about the grace, %s", waited, grace)
	}
	checkStall(t, snap, x, b)

	// Published, the stall changes no more: the polls are idle again.
	waitPolls(t, w, 2)
	joins := w.Joins()
	waitPolls(t, w, 10)
	if got := w.Joins() - joins; got != 0 {
		t.Errorf("10 polls of an unchanged table after the stall joined the lock %d times, want none", got)
	}
	if err := buggy.conn.Delete(buggy.node, -1); err != nil {
		t.Fatal(err)
	}
}

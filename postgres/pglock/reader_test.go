package pglock

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/zklockviz/zklockviz/lockqueue"
)

// psql sessions queue on pg_advisory_lock(42): the reader shows the holder,
// the waiters in the order they began to wait, the server's own blockers
// as edges, the sessions' details, and no alert on a healthy queue; then
// the queue moves as holders release (unlock, quit), as one's psql is
// killed and as one's backend is terminated.
func TestAdvisoryQueue(t *testing.T) {
	srv := server(t, nil)
	su := superuser(t, srv)
	const name = "advisory/42"
	_, col := startReader(t, Config{DSN: srv.DSN(), Watch: []string{name}, LongWait: time.Hour, IdleGrace: time.Hour})
	col.await(t, name, "an empty queue", func(s lockqueue.Snapshot) bool { return s.Live() && s.Exists && len(s.Nodes) == 0 })

	a, b, c := startPsql(t, srv, "holder-a"), startPsql(t, srv, "waiter-b"), startPsql(t, srv, "waiter-c")
	pa, pb, pc := pidOf(t, su, "holder-a"), pidOf(t, su, "waiter-b"), pidOf(t, su, "waiter-c")
	a.send(t, "SELECT pg_advisory_lock(42);")
	holdsAdvisory(t, su, pa, 1)
	// c queues before b: the order is by wait start, not by pid or name.
	c.send(t, "SELECT pg_advisory_lock(42);")
	waitingOn(t, su, pc)
	b.send(t, "SELECT pg_advisory_lock(42);")
	waitingOn(t, su, pb)

	want := shape{order: pids(pa, pc, pb), holders: pids(pa),
		blocked: map[string][]string{nodeName(pc): pids(pa), nodeName(pb): pids(pa, pc)}}
	s := col.await(t, name, "a holder and two waiters", func(s lockqueue.Snapshot) bool { return shapeOf(s).equal(want) })
	if len(s.Alerts) != 0 {
		t.Errorf("a healthy queue raised %v", s.Alerts)
	}
	if s.Service != Name || s.Recipe != Advisory || s.WatchSource != "pg_locks" {
		t.Errorf("snapshot service %q recipe %q source %q", s.Service, s.Recipe, s.WatchSource)
	}
	for _, n := range s.Nodes {
		var d session
		if err := json.Unmarshal([]byte(n.Data), &d); err != nil {
			t.Fatalf("%s data %q: %v", n.Name, n.Data, err)
		}
		if n.Client() != strings.TrimPrefix(n.Name, "pid-") || d.Application == nil || d.ClientAddr == nil ||
			*d.ClientAddr != "127.0.0.1" || d.State == nil || d.BackendStart == nil || d.LockMode != "ExclusiveLock" {
			t.Errorf("%s: client %q, data %s", n.Name, n.Client(), n.Data)
		}
		if n.Mode != lockqueue.Exclusive {
			t.Errorf("%s mode %s", n.Name, n.Mode)
		}
		if !n.Holding {
			if d.WaitStart == nil || !n.Ctime.Equal(*d.WaitStart) || n.WaitsForSource() != lockqueue.ByServer {
				t.Errorf("%s: ctime %v, wait start %v, edge by %q", n.Name, n.Ctime, d.WaitStart, n.WaitsForSource())
			}
			for _, e := range n.WaitEdges() {
				if e.Provenance != lockqueue.ByServer {
					t.Errorf("%s: edge %v not vouched for by the server", n.Name, e)
				}
			}
		}
	}
	if got := s.Nodes[0]; !strings.Contains(got.Data, `"application":"holder-a"`) {
		t.Errorf("holder data %s does not name its application", got.Data)
	}

	// Release in the holder's session: c, first in line, gets it.
	a.send(t, "SELECT pg_advisory_unlock(42);")
	want = shape{order: pids(pc, pb), holders: pids(pc), blocked: map[string][]string{nodeName(pb): pids(pc)}}
	col.await(t, name, "c to hold after a's unlock", func(s lockqueue.Snapshot) bool { return shapeOf(s).equal(want) })

	// a queues again behind b.
	a.send(t, "SELECT pg_advisory_lock(42);")
	waitingOn(t, su, pa)
	want = shape{order: pids(pc, pb, pa), holders: pids(pc),
		blocked: map[string][]string{nodeName(pb): pids(pc), nodeName(pa): pids(pc, pb)}}
	col.await(t, name, "a queued behind b", func(s lockqueue.Snapshot) bool { return shapeOf(s).equal(want) })

	// The holder's psql is killed: its backend ends, b gets the lock.
	c.kill()
	want = shape{order: pids(pb, pa), holders: pids(pb), blocked: map[string][]string{nodeName(pa): pids(pb)}}
	col.await(t, name, "b to hold after c's psql is killed", func(s lockqueue.Snapshot) bool { return shapeOf(s).equal(want) })

	// b quits (a session lock ends with its session), then a's backend
	// is terminated from another session.
	b.quit()
	want = shape{order: pids(pa), holders: pids(pa), blocked: map[string][]string{}}
	col.await(t, name, "a to hold after b quits", func(s lockqueue.Snapshot) bool { return shapeOf(s).equal(want) })
	exec1(t, su, "SELECT pg_terminate_backend($1)", pa)
	col.await(t, name, "an empty queue again", func(s lockqueue.Snapshot) bool { return len(s.Nodes) == 0 })
}

// A session connected long before it takes a free lock took it after the
// reader's last read that did not show it, not when its backend started:
// its Ctime, which the history times its wait from, is that read.
func TestNewHolderSinceLastRead(t *testing.T) {
	srv := server(t, nil)
	su := superuser(t, srv)
	const name = "advisory/43"
	_, col := startReader(t, Config{DSN: srv.DSN(), Watch: []string{name}, LongWait: time.Hour, IdleGrace: time.Hour})
	col.await(t, name, "an empty queue", func(s lockqueue.Snapshot) bool { return s.Live() && s.Exists && len(s.Nodes) == 0 })
	a := startPsql(t, srv, "late-taker")
	pa := pidOf(t, su, "late-taker")
	time.Sleep(time.Second) // connected a second before it asks
	asked := time.Now()
	a.send(t, "SELECT pg_advisory_lock(43);")
	holdsAdvisory(t, su, pa, 1)
	s := col.await(t, name, "the late taker holding", func(s lockqueue.Snapshot) bool { return len(s.Nodes) == 1 && s.Nodes[0].Holding })
	var d session
	if err := json.Unmarshal([]byte(s.Nodes[0].Data), &d); err != nil || d.BackendStart == nil {
		t.Fatalf("data %q: %v", s.Nodes[0].Data, err)
	}
	// The reader polls every 50 ms: its last read without the session was
	// at most a poll and a read before the session asked.
	if ct := s.Nodes[0].Ctime; ct.Before(asked.Add(-time.Second/2)) || !ct.After(*d.BackendStart) {
		t.Errorf("ctime %s: want after the read before it asked (it asked at %s), not its backend's start %s",
			ct.Format(time.StampMilli), asked.Format(time.StampMilli), d.BackendStart.Format(time.StampMilli))
	}
}

// Each form of advisory key reaches the lock the application took: a
// negative bigint and one past 2^32 (split across classid and objid), the
// two-int4 form, and a shared lock; the keys do not mix.
func TestAdvisoryKeys(t *testing.T) {
	srv := server(t, nil)
	su := superuser(t, srv)
	names := []string{"advisory/-5", "advisory/8589934593", "advisory/3/4", "advisory/4/3", "advisory/-1/7", "advisory/5"}
	_, col := startReader(t, Config{DSN: srv.DSN(), Watch: names})
	p := startPsql(t, srv, "keys")
	pid := pidOf(t, su, "keys")
	p.send(t, "SELECT pg_advisory_lock(-5), pg_advisory_lock(8589934593), pg_advisory_lock(3, 4), pg_advisory_lock(-1, 7), pg_advisory_lock_shared(5);")
	holdsAdvisory(t, su, pid, 5)
	q := startPsql(t, srv, "keys-shared")
	qpid := pidOf(t, su, "keys-shared")
	q.send(t, "SELECT pg_advisory_lock_shared(5);")
	for _, tc := range []struct {
		name    string
		holders []string
		mode    lockqueue.Mode
	}{
		{"advisory/-5", pids(pid), lockqueue.Exclusive},
		{"advisory/8589934593", pids(pid), lockqueue.Exclusive},
		{"advisory/3/4", pids(pid), lockqueue.Exclusive},
		{"advisory/4/3", nil, ""},
		{"advisory/-1/7", pids(pid), lockqueue.Exclusive},
		{"advisory/5", pids(pid, qpid), lockqueue.Read},
	} {
		s := col.await(t, tc.name, "its holders", func(s lockqueue.Snapshot) bool {
			return slices.Equal(s.Holders(), tc.holders) || (tc.holders == nil && len(s.Nodes) == 0 && s.Live())
		})
		for _, n := range s.Nodes {
			if n.Mode != tc.mode {
				t.Errorf("%s: %s mode %s, want %s", tc.name, n.Name, n.Mode, tc.mode)
			}
		}
	}
}

func TestCheckName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"advisory/42", true}, {"advisory/-9223372036854775808", true}, {"advisory/1/2", true},
		{"advisory/-2147483648/2147483647", true}, {"table/orders", true}, {"table/public.orders", true},
		{"advisory/", false}, {"advisory/x", false}, {"advisory/9223372036854775808", false},
		{"advisory/1/2147483648", false}, {"advisory/1/2/3", false}, {"table/", false},
		{"table/Orders", false}, {"table/a.b.c", false}, {"table/a b", false}, {"table/x;drop", false},
		{"/locks/orders", false}, {"42", false}, {"", false},
	} {
		if err := CheckName(tc.name); (err == nil) != tc.ok {
			t.Errorf("CheckName(%q) = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

// Row locks: a holder's SELECT … FOR UPDATE in a transaction it leaves
// idle, two waiters on the same row. The holder has no pg_locks row of its
// own; it shows through its waiters, as the server's blocker. Past the
// grace the holder raises idle-in-transaction, past the limit the first
// waiter a long wait; the commit hands the row on.
func TestRowLocks(t *testing.T) {
	srv := server(t, nil)
	su := superuser(t, srv)
	exec1(t, su, "CREATE TABLE orders (id int PRIMARY KEY, v int)")
	exec1(t, su, "INSERT INTO orders VALUES (1, 1), (2, 2)")
	const name = "table/public.orders"
	_, col := startReader(t, Config{DSN: srv.DSN(), Watch: []string{name, "table/missing"},
		IdleGrace: 300 * time.Millisecond, LongWait: time.Second})
	col.await(t, name, "an empty table queue", func(s lockqueue.Snapshot) bool { return s.Live() && s.Exists && len(s.Nodes) == 0 })
	if s := col.await(t, "table/missing", "a snapshot", func(s lockqueue.Snapshot) bool { return s.Live() }); s.Exists {
		t.Errorf("a table that does not exist: exists %v", s.Exists)
	}

	a, b, c := startPsql(t, srv, "row-a"), startPsql(t, srv, "row-b"), startPsql(t, srv, "row-c")
	pa, pb, pc := pidOf(t, su, "row-a"), pidOf(t, su, "row-b"), pidOf(t, su, "row-c")
	a.send(t, "BEGIN; SELECT v FROM orders WHERE id = 1 FOR UPDATE;")
	idleInTx(t, su, pa)
	b.send(t, "BEGIN; SELECT v FROM orders WHERE id = 1 FOR UPDATE;")
	waitingOn(t, su, pb)
	c.send(t, "BEGIN; UPDATE orders SET v = 3 WHERE id = 1;")
	waitingOn(t, su, pc)

	// b holds the row's tuple lock and waits for a's transaction; c waits
	// for the tuple lock b holds.
	want := shape{order: pids(pa, pb, pc), holders: pids(pa),
		blocked: map[string][]string{nodeName(pb): pids(pa), nodeName(pc): pids(pb)}}
	s := col.await(t, name, "a holding the row, b and c waiting", func(s lockqueue.Snapshot) bool {
		return shapeOf(s).equal(want) && slices.Contains(alertKinds(s), lockqueue.AlertIdleInTransaction) &&
			slices.Contains(alertKinds(s), lockqueue.AlertLongWait)
	})
	if s.Recipe != RowLock {
		t.Errorf("recipe %q", s.Recipe)
	}
	for _, al := range s.Alerts {
		switch al.Kind {
		case lockqueue.AlertIdleInTransaction:
			if !slices.Equal(al.Nodes, pids(pa)) || !strings.Contains(al.Message, "2 waiters wait on it") {
				t.Errorf("idle alert %+v", al)
			}
		case lockqueue.AlertLongWait:
			if !slices.Contains(al.Nodes, nodeName(pb)) {
				t.Errorf("long-wait alert %+v does not name b", al)
			}
		default:
			t.Errorf("unexpected alert %+v", al)
		}
	}

	a.send(t, "COMMIT;")
	col.await(t, name, "b to hold the row, c waiting on it", func(s lockqueue.Snapshot) bool {
		sh := shapeOf(s)
		return slices.Equal(sh.holders, pids(pb)) && slices.Equal(sh.blocked[nodeName(pc)], pids(pb))
	})
	b.send(t, "ROLLBACK;")
	c.send(t, "COMMIT;")
	col.await(t, name, "no one left", func(s lockqueue.Snapshot) bool { return len(s.Nodes) == 0 })
}

// cycleHalf is a wait cycle one statement short: a holds advisory lock 1
// and waits for 2, which b holds; b asking for 1 closes it.
type cycleHalf struct {
	su     *pgx.Conn
	col    *collector
	a, b   *psqlSession
	pa, pb int
}

func halfCycle(t *testing.T) cycleHalf {
	t.Helper()
	srv := server(t, nil)
	c := cycleHalf{su: superuser(t, srv)}
	_, c.col = startReader(t, Config{DSN: srv.DSN(), Watch: []string{"advisory/1", "advisory/2"}})
	c.a, c.b = startPsql(t, srv, "cycle-a"), startPsql(t, srv, "cycle-b")
	c.pa, c.pb = pidOf(t, c.su, "cycle-a"), pidOf(t, c.su, "cycle-b")
	c.a.send(t, "SELECT pg_advisory_lock(1);")
	c.b.send(t, "SELECT pg_advisory_lock(2);")
	holdsAdvisory(t, c.su, c.pa, 1)
	holdsAdvisory(t, c.su, c.pb, 1)
	c.a.send(t, "SELECT pg_advisory_lock(2);")
	waitingOn(t, c.su, c.pa)
	return c
}

// Two sessions each hold one advisory lock and wait for the other's. With
// deadlock_timeout at an hour PostgreSQL has not broken the cycle yet, and
// the reader shows it on both locks. Cancelling one session's wait (what
// the deadlock check does, with 40P01: TestWaitCycleBrokenByDeadlockDetector
// lets it) clears the alert; the session keeps the lock it held.
func TestWaitCycle(t *testing.T) {
	c := halfCycle(t)
	su, col, b, pa, pb := c.su, c.col, c.b, c.pa, c.pb
	b.send(t, "SELECT pg_advisory_lock(1);")
	waitingOn(t, su, pb)

	for _, tc := range []struct{ lock, path string }{
		{"advisory/1", nodeName(pa) + " → " + nodeName(pb) + " → " + nodeName(pa)},
		{"advisory/2", nodeName(pb) + " → " + nodeName(pa) + " → " + nodeName(pb)},
	} {
		s := col.await(t, tc.lock, "a wait-cycle alert", func(s lockqueue.Snapshot) bool {
			return slices.Contains(alertKinds(s), lockqueue.AlertWaitCycle)
		})
		for _, al := range s.Alerts {
			if al.Kind == lockqueue.AlertWaitCycle && (!strings.Contains(al.Message, tc.path) || len(al.Nodes) != 2) {
				t.Errorf("%s: cycle alert %+v, want the path %s through both nodes", tc.lock, al, tc.path)
			}
		}
	}
	// Both still wait: the alert came before PostgreSQL broke the cycle.
	for _, pid := range []int{pa, pb} {
		waitingOn(t, su, pid)
	}
	if out := c.a.output() + b.output(); strings.Contains(out, "deadlock") {
		t.Fatalf("PostgreSQL already broke the cycle: %s", out)
	}

	exec1(t, su, "SELECT pg_cancel_backend($1)", pb)
	col.await(t, "advisory/1", "the cycle gone, a alone on 1", func(s lockqueue.Snapshot) bool {
		return len(s.Alerts) == 0 && slices.Equal(s.Holders(), pids(pa)) && len(s.Nodes) == 1
	})
	want := shape{order: pids(pb, pa), holders: pids(pb), blocked: map[string][]string{nodeName(pa): pids(pb)}}
	col.await(t, "advisory/2", "the cycle gone, a still waiting for b's 2", func(s lockqueue.Snapshot) bool {
		return len(s.Alerts) == 0 && shapeOf(s).equal(want)
	})
}

// The same cycle broken by PostgreSQL's own deadlock check, not by the
// test: b's session lowers its deadlock_timeout before it closes the
// cycle, so its backend looks for cycles a second into its wait, finds
// this one and aborts b's wait with 40P01. b keeps the lock it held (a
// session-level advisory lock outlives the error) and a still waits for
// it; the reader shows exactly that, with no cycle left.
func TestWaitCycleBrokenByDeadlockDetector(t *testing.T) {
	c := halfCycle(t)
	col, a, b, pa, pb := c.col, c.a, c.b, c.pa, c.pb
	b.send(t, `\set VERBOSITY verbose`)
	b.send(t, "SET deadlock_timeout = '1s'; SELECT pg_advisory_lock(1);")
	waitUntil(t, "PostgreSQL's deadlock check to abort b's wait", func() bool {
		return strings.Contains(b.output(), "40P01")
	})
	if out := b.output(); !strings.Contains(out, "deadlock detected") {
		t.Errorf("b's error is not the deadlock check's: %s", out)
	}
	if out := a.output(); strings.Contains(out, "deadlock") {
		t.Errorf("a, whose deadlock_timeout is an hour, was aborted too: %s", out)
	}
	col.await(t, "advisory/1", "a alone on 1, no cycle", func(s lockqueue.Snapshot) bool {
		return len(s.Alerts) == 0 && slices.Equal(s.Holders(), pids(pa)) && len(s.Nodes) == 1
	})
	want := shape{order: pids(pb, pa), holders: pids(pb), blocked: map[string][]string{nodeName(pa): pids(pb)}}
	col.await(t, "advisory/2", "b still holding 2, a waiting for it, no cycle", func(s lockqueue.Snapshot) bool {
		return len(s.Alerts) == 0 && shapeOf(s).equal(want)
	})
}

// A poll publishes a lock only when it changed, so viewers see a new
// revision per change, not per poll; an unwatched lock is forgotten and
// no longer read.
func TestPublishOnChange(t *testing.T) {
	srv := server(t, nil)
	su := superuser(t, srv)
	col := newCollector()
	var forgot []string
	r, err := New(Config{DSN: srv.DSN(), Publish: col.publish, Watch: []string{"advisory/9", "advisory/10"},
		Forget: func(key string) { forgot = append(forgot, key) }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.disconnect()
	ctx := context.Background()
	polls := func(n int) {
		for range n {
			r.poll(ctx)
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
	}
	polls(3)
	if col.count["advisory/9"] != 1 || r.Connection() != lockqueue.Connected {
		t.Fatalf("three polls of an unchanged lock published %d snapshots (%s), want 1", col.count["advisory/9"], r.Connection())
	}
	p := startPsql(t, srv, "poc")
	pid := pidOf(t, su, "poc")
	p.send(t, "SELECT pg_advisory_lock(9);")
	holdsAdvisory(t, su, pid, 1)
	polls(3)
	s, _ := col.get("advisory/9")
	if col.count["advisory/9"] != 2 || s.Revision != 2 || !slices.Equal(s.Holders(), pids(pid)) {
		t.Errorf("after one change and three polls: %d snapshots, revision %d, holders %v; want 2, 2, %v",
			col.count["advisory/9"], s.Revision, s.Holders(), pids(pid))
	}
	if col.count["advisory/10"] != 1 {
		t.Errorf("advisory/10, unchanged, published %d times", col.count["advisory/10"])
	}

	if err := r.Unwatch("advisory/9"); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(forgot, []string{"postgres:advisory/9"}) || slices.Contains(r.Watched(), "advisory/9") {
		t.Errorf("after Unwatch: forgot %v, watched %v", forgot, r.Watched())
	}
	p.send(t, "SELECT pg_advisory_unlock(9);")
	holdsAdvisory(t, su, pid, 0)
	polls(2)
	if col.count["advisory/9"] != 2 {
		t.Errorf("an unwatched lock was published again: %d snapshots", col.count["advisory/9"])
	}
}

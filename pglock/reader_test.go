package pglock

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// psql sessions queue on pg_advisory_lock(42): the reader shows the holder,
// the waiters in the order they began to wait, the server's own blockers
// as edges, the sessions' details, and no alert on a healthy queue; then
// the queue moves as holders release (unlock, quit) and as one is killed.
func TestAdvisoryQueue(t *testing.T) {
	srv := server(t, nil)
	su := superuser(t, srv)
	const name = "advisory/42"
	_, col := startReader(t, Config{DSN: srv.DSN(), Watch: []string{name}, LongWait: time.Hour, IdleGrace: time.Hour})
	col.await(t, name, "an empty queue", func(s lockqueue.Snapshot) bool { return s.Live() && s.Exists && len(s.Nodes) == 0 })

	a, b, c := startPsql(t, srv, "holder-a"), startPsql(t, srv, "waiter-b"), startPsql(t, srv, "waiter-c")
	pa, pb, pc := pidOf(t, su, "holder-a"), pidOf(t, su, "waiter-b"), pidOf(t, su, "waiter-c")
	a.send(t, "SELECT pg_advisory_lock(42);")
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
		if n.Client != strings.TrimPrefix(n.Name, "pid-") || d.Application == nil || d.ClientAddr == nil ||
			*d.ClientAddr != "127.0.0.1" || d.State == nil || d.BackendStart == nil || d.LockMode != "ExclusiveLock" {
			t.Errorf("%s: client %q, data %s", n.Name, n.Client, n.Data)
		}
		if n.Mode != lockqueue.Exclusive {
			t.Errorf("%s mode %s", n.Name, n.Mode)
		}
		if !n.Holding {
			if d.WaitStart == nil || !n.Ctime.Equal(*d.WaitStart) || n.WaitsForSource != lockqueue.ByServer {
				t.Errorf("%s: ctime %v, wait start %v, edge by %q", n.Name, n.Ctime, d.WaitStart, n.WaitsForSource)
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

	// b quits (a session lock ends with its session), then a unlocks.
	b.quit()
	want = shape{order: pids(pa), holders: pids(pa), blocked: map[string][]string{}}
	col.await(t, name, "a to hold after b quits", func(s lockqueue.Snapshot) bool { return shapeOf(s).equal(want) })
	a.send(t, "SELECT pg_advisory_unlock(42);")
	col.await(t, name, "an empty queue again", func(s lockqueue.Snapshot) bool { return len(s.Nodes) == 0 })
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

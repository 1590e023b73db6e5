package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/etcd/etcdlocal/etcdtest"
	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/postgres/pglocal/pgtest"
	"github.com/zklockviz/zklockviz/redis/redislocal/redistest"
)

// holding is the live-view test for "name alone holds the lock".
func holding(name string) func(lockqueue.Snapshot) bool {
	return func(s lockqueue.Snapshot) bool {
		return s.Live() && len(s.Nodes) == 1 && s.Nodes[0].Name == name && s.Nodes[0].Holding
	}
}

// expectLeft checks that node left as how in evs and returns its event.
func expectLeft(t *testing.T, evs []history.Event, node string, how history.How) (history.Event, bool) {
	t.Helper()
	e, ok := findEvent(evs, history.Left, node)
	if !ok || e.How != how {
		t.Errorf("%s did not leave as %s: %+v", node, how, evs)
		return e, false
	}
	return e, true
}

// The flight recorder records a Redis lock taken by redis-cli (SET NX PX):
// a hand-off by DEL is a release, a token left to run out its PX is an
// expiry; holds agree with what the test measured, and the snapshot at a
// past moment shows who held then.
func TestHistoryRecordsRedis(t *testing.T) {
	r := redistest.ForTest(t)
	const key = "orders-lock"
	srv := startServe(t, "--redis", r.Addr(), "--addr", "127.0.0.1:0", "--watch", "redis:"+key,
		"--data-dir", t.TempDir(), "--poll", "100ms", "--log-level", "warn")
	api := historyAPI{t: t, base: srv.url, service: "redis"}
	start := time.Now()
	api.waitLive(key, "the lock read", func(s lockqueue.Snapshot) bool { return s.Live() })

	redisCLI(t, r.Addr(), "SET", key, "tok-A", "NX", "PX", "600000")
	setA := time.Now()
	aHolds := api.waitLive(key, "tok-A holding", holding("tok-A"))
	time.Sleep(1500 * time.Millisecond) // a hold long enough to measure
	redisCLI(t, r.Addr(), "DEL", key)
	delA := time.Now()
	redisCLI(t, r.Addr(), "SET", key, "tok-B", "NX", "PX", "2000")
	bHolds := api.waitLive(key, "tok-B holding", holding("tok-B"))
	api.waitLive(key, "tok-B's PX run out", func(s lockqueue.Snapshot) bool { return s.Live() && len(s.Nodes) == 0 })

	evs := api.events(key, start)
	if e, ok := expectLeft(t, evs, "tok-A", history.Released); ok {
		within(t, "tok-A's hold", e.Hold(), delA.Sub(setA))
	}
	if e, ok := expectLeft(t, evs, "tok-B", history.Expired); ok {
		within(t, "tok-B's hold until its PX ran out", e.Hold(), 2*time.Second)
	}
	if _, ok := findEvent(evs, history.Acquired, "tok-B"); !ok {
		t.Errorf("no acquisition by tok-B: %+v", evs)
	}
	for _, m := range []struct {
		at     time.Time
		holder string
	}{{aHolds, "tok-A"}, {bHolds, "tok-B"}} {
		snap := api.at(key, m.at)
		if !slices.Equal(snap.Holders(), []string{m.holder}) || snap.Service != "redis" {
			t.Errorf("at %s: service %q holders %q, want %s", m.at.Format(time.StampMilli), snap.Service, snap.Holders(), m.holder)
		}
		// Who held: the token, on the master it was read from.
		if len(snap.Nodes) != 1 || snap.Nodes[0].Client() != m.holder || snap.Cluster != r.Addr() {
			t.Errorf("at %s: nodes %+v of cluster %q, want %s's token as its client, of %s", m.at.Format(time.StampMilli), snap.Nodes, snap.Cluster, m.holder, r.Addr())
		}
	}
	var st history.Stats
	if code := api.get("/api/v1/lock/stats", key, map[string]string{"from": ms(start), "to": ms(time.Now())}, &st); code != 200 {
		t.Fatalf("stats: %d", code)
	}
	if st.Acquisitions != 2 || st.Released != 1 || st.Expired != 1 || st.Hold.Count != 2 {
		t.Errorf("figures %+v: want 2 acquisitions, 1 release, 1 expiry, 2 holds", st)
	}
}

// etcdctlLock starts `etcdctl lock` on prefix with a lease of ttl: it
// holds once it prints its key, until it is interrupted (a release) or
// killed (its lease runs out).
func etcdctlLock(t *testing.T, endpoint, prefix string, ttl int) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("etcdctl", "--endpoints", endpoint, "lock", fmt.Sprintf("--ttl=%d", ttl), prefix)
	cmd.Env = []string{"ETCDCTL_API=3"}
	if err := cmd.Start(); err != nil {
		t.Fatalf("etcdctl: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// The flight recorder records `etcdctl lock` contenders: a hand-off when
// the holder is interrupted is a release, a holder killed with SIGKILL
// leaves as expired when its lease runs out; waits and holds agree with
// what the test measured.
func TestHistoryRecordsEtcd(t *testing.T) {
	srv := etcdtest.ForTest(t)
	const prefix = "/locks/orders"
	s := startServe(t, "--etcd", srv.Endpoint(), "--addr", "127.0.0.1:0", "--watch", "etcd:"+prefix,
		"--data-dir", t.TempDir(), "--poll", "100ms", "--log-level", "warn")
	api := historyAPI{t: t, base: s.url, service: "etcd"}
	start := time.Now()
	api.waitLive(prefix, "the lock read", func(s lockqueue.Snapshot) bool { return s.Live() })

	a := etcdctlLock(t, srv.Endpoint(), prefix, 30)
	var snap lockqueue.Snapshot
	api.waitLive(prefix, "a holding", func(s lockqueue.Snapshot) bool {
		snap = s
		return len(s.Nodes) == 1 && s.Nodes[0].Holding
	})
	aAcq, aName, aLease, cluster := time.Now(), snap.Nodes[0].Name, snap.Nodes[0].LeaseID(), snap.Cluster
	const bTTL = 3 * time.Second
	b := etcdctlLock(t, srv.Endpoint(), prefix, int(bTTL/time.Second))
	bQueued := api.waitLive(prefix, "b queued", func(s lockqueue.Snapshot) bool {
		snap = s
		return len(s.Nodes) == 2
	})
	bName := snap.Nodes[1].Name
	time.Sleep(1500 * time.Millisecond) // a hold and a wait long enough to measure
	aRel := time.Now()
	if err := a.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	bHolds := api.waitLive(prefix, "b holding after a's release", holding(bName))
	etcdctlLock(t, srv.Endpoint(), prefix, 30)
	api.waitLive(prefix, "c queued", func(s lockqueue.Snapshot) bool {
		snap = s
		return len(s.Nodes) == 2
	})
	cName := snap.Nodes[1].Name
	if err := b.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	bKilled := time.Now()
	api.waitLive(prefix, "c holding once b's lease ran out", holding(cName))

	evs := api.events(prefix, start)
	if e, ok := expectLeft(t, evs, aName, history.Released); ok {
		within(t, "a's hold", e.Hold(), aRel.Sub(aAcq))
	}
	if e, ok := findEvent(evs, history.Acquired, bName); !ok {
		t.Errorf("no acquisition by b: %+v", evs)
	} else {
		within(t, "b's wait", e.Wait(), bHolds.Sub(bQueued))
	}
	if e, ok := expectLeft(t, evs, bName, history.Expired); ok {
		// Killed, b's lease lasts at most its TTL after its last keep-alive.
		if d := e.Time.Sub(bKilled); d > bTTL+figureTolerance {
			t.Errorf("b left %v after it was killed, its TTL is %v", d, bTTL)
		}
	}
	if snap := api.at(prefix, bQueued); !slices.Equal(snap.Holders(), []string{aName}) || !slices.Equal(snap.Waiters(), []string{bName}) {
		t.Errorf("when b queued: holders %q waiters %q, want %s and %s", snap.Holders(), snap.Waiters(), aName, bName)
	} else if snap.Nodes[0].LeaseID() != aLease || aLease == "" || snap.Cluster != cluster || cluster == "" {
		// Who held: a's lease, as the live view showed it, on the cluster
		// etcd names in its response headers.
		t.Errorf("when b queued: a's lease %q of cluster %q, live it was %q of %q", snap.Nodes[0].LeaseID(), snap.Cluster, aLease, cluster)
	}
	var st history.Stats
	api.get("/api/v1/lock/stats", prefix, map[string]string{"from": ms(start), "to": ms(time.Now())}, &st)
	if st.Acquisitions != 3 || st.Released != 1 || st.Expired != 1 {
		t.Errorf("figures %+v: want 3 acquisitions, 1 release, 1 expiry", st)
	}
}

// psqlSession is a psql whose standard input the test keeps, to send it
// statements one at a time, as a person at a psql prompt would.
type psqlSession struct {
	cmd *exec.Cmd
	in  io.WriteCloser
}

func startPsql(t *testing.T, dsn, app string) *psqlSession {
	t.Helper()
	cmd := exec.Command("psql", "-X", "-q", "-d", dsn+"&application_name="+app)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("psql: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return &psqlSession{cmd, in}
}

func (p *psqlSession) send(t *testing.T, sql string) {
	t.Helper()
	if _, err := io.WriteString(p.in, sql+"\n"); err != nil {
		t.Fatalf("psql %q: %v", sql, err)
	}
}

// nodeOf is the name of the node whose session is the psql named app.
func nodeOf(s lockqueue.Snapshot, app string) string {
	for _, n := range s.Nodes {
		if strings.Contains(n.Data, `"application":"`+app+`"`) {
			return n.Name
		}
	}
	return ""
}

// The flight recorder records psql sessions on an advisory lock: a
// waiter whose lock_timeout runs out gave up, an unlock hands off (a
// release), a killed session's lock goes at once; waits and holds agree
// with what the test measured, and the snapshot at a past moment shows
// the queue as it was.
func TestHistoryRecordsPostgres(t *testing.T) {
	pg := pgtest.ForTest(t)
	const lock = "advisory/42"
	s := startServe(t, "--postgres", pg.DSN(), "--addr", "127.0.0.1:0", "--watch", "postgres:"+lock,
		"--data-dir", t.TempDir(), "--poll", "100ms", "--log-level", "warn")
	api := historyAPI{t: t, base: s.url, service: "postgres"}
	start := time.Now()
	api.waitLive(lock, "the lock read", func(s lockqueue.Snapshot) bool { return s.Live() })

	var snap lockqueue.Snapshot
	seen := func(what string, ok func(lockqueue.Snapshot) bool) time.Time {
		return api.waitLive(lock, what, func(s lockqueue.Snapshot) bool { snap = s; return ok(s) })
	}
	h := startPsql(t, pg.DSN(), "holder")
	h.send(t, "SELECT pg_advisory_lock(42);")
	hHolds := seen("the holder holding", func(s lockqueue.Snapshot) bool { return len(s.Holders()) == 1 && nodeOf(s, "holder") != "" })
	hName := nodeOf(snap, "holder")

	const timeout = 2 * time.Second
	g := startPsql(t, pg.DSN(), "impatient")
	g.send(t, fmt.Sprintf("SET lock_timeout = '%dms'; SELECT pg_advisory_lock(42);", timeout.Milliseconds()))
	gQueued := seen("the impatient waiter queued", func(s lockqueue.Snapshot) bool { return nodeOf(s, "impatient") != "" })
	gName := nodeOf(snap, "impatient")
	seen("the impatient waiter gone", func(s lockqueue.Snapshot) bool { return nodeOf(s, "impatient") == "" })

	w := startPsql(t, pg.DSN(), "waiter")
	w.send(t, "SELECT pg_advisory_lock(42);")
	wQueued := seen("the waiter queued", func(s lockqueue.Snapshot) bool { return nodeOf(s, "waiter") != "" })
	wName := nodeOf(snap, "waiter")
	time.Sleep(1500 * time.Millisecond) // a wait long enough to measure
	hUnlock := time.Now()
	h.send(t, "SELECT pg_advisory_unlock(42);")
	wHolds := seen("the hand-off to the waiter", holding(wName))

	k := startPsql(t, pg.DSN(), "next")
	k.send(t, "SELECT pg_advisory_lock(42);")
	seen("the next one queued", func(s lockqueue.Snapshot) bool { return nodeOf(s, "next") != "" })
	kName := nodeOf(snap, "next")
	wKilled := time.Now()
	if err := w.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	seen("the next one holding once the waiter's psql is killed", holding(kName))

	evs := api.events(lock, start)
	if e, ok := expectLeft(t, evs, gName, history.GaveUp); ok {
		within(t, "the impatient waiter's wait", e.Wait(), timeout)
	}
	if e, ok := expectLeft(t, evs, hName, history.Released); ok {
		within(t, "the holder's hold", e.Hold(), hUnlock.Sub(hHolds))
	}
	if e, ok := findEvent(evs, history.Acquired, wName); !ok {
		t.Errorf("no acquisition by the waiter: %+v", evs)
	} else {
		within(t, "the waiter's wait", e.Wait(), wHolds.Sub(wQueued))
	}
	// A killed client's backend ends and lets go at once: the session is
	// gone, not left to time out, so it is a release, not an expiry.
	if e, ok := expectLeft(t, evs, wName, history.Released); ok {
		within(t, "the killed waiter's hold", e.Hold(), wKilled.Sub(wHolds))
	}
	if at := api.at(lock, gQueued); !slices.Equal(at.Holders(), []string{hName}) || !slices.Equal(at.Waiters(), []string{gName}) {
		t.Errorf("when the impatient one queued: holders %q waiters %q, want %s and %s", at.Holders(), at.Waiters(), hName, gName)
	} else {
		// Who: each psql's pid and label (its application_name), as the
		// live view showed them, on the server's own cluster.
		for i, app := range []string{"holder", "impatient"} {
			n := at.Nodes[i]
			if !strings.HasPrefix(n.Label(), app) || n.Name != "pid-"+n.Client() || nodeOf(at, app) != n.Name {
				t.Errorf("when the impatient one queued, node %s: label %q client %q data %q; want %s's", n.Name, n.Label(), n.Client(), n.Data, app)
			}
		}
		if at.Cluster == "" || at.Cluster != snap.Cluster {
			t.Errorf("the moment's cluster %q, live %q", at.Cluster, snap.Cluster)
		}
	}
	var st history.Stats
	api.get("/api/v1/lock/stats", lock, map[string]string{"from": ms(start), "to": ms(time.Now())}, &st)
	if st.Acquisitions != 3 || st.GaveUp != 1 || st.Released != 2 || st.Wait.Count != 3 {
		t.Errorf("figures %+v: want 3 acquisitions, 1 give-up, 2 releases, 3 waits", st)
	}
	if i := slices.IndexFunc(st.LongestHolds, func(h history.Held) bool { return h.Node == hName }); i < 0 || !strings.HasPrefix(st.LongestHolds[i].Label, "holder") {
		t.Errorf("longest holds %+v: want the holder's hold, labelled holder", st.LongestHolds)
	}
}

// A psql killed while its statement runs (here pg_sleep) does not let go
// at once: its backend does not notice the closed socket until the
// statement ends and it writes the result, so the lock stays held, and
// shown held, by a session whose client is gone; then it goes. (An idle
// psql killed lets go at once: TestHistoryRecordsPostgres.)
func TestPsqlKilledInsideAStatementKeepsHolding(t *testing.T) {
	pg := pgtest.ForTest(t)
	const lock, sleep = "advisory/43", 8 * time.Second
	s := startServe(t, "--postgres", pg.DSN(), "--addr", "127.0.0.1:0", "--watch", "postgres:"+lock,
		"--history=off", "--poll", "100ms", "--log-level", "warn")
	api := historyAPI{t: t, base: s.url, service: "postgres"}
	p := startPsql(t, pg.DSN(), "busy")
	p.send(t, fmt.Sprintf("SELECT pg_advisory_lock(43); SELECT pg_sleep(%d);", int(sleep.Seconds())))
	api.waitLive(lock, "psql holding, inside pg_sleep", func(s lockqueue.Snapshot) bool {
		return nodeOf(s, "busy") != "" && strings.Contains(s.Nodes[0].Data, "pg_sleep")
	})
	killed := time.Now()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if snap := api.live(lock); len(snap.Holders()) != 1 || nodeOf(snap, "busy") == "" {
		t.Errorf("2 s after its psql was killed inside pg_sleep, holders %q: want the killed session still holding", snap.Holders())
	}
	gone := api.waitLive(lock, "the lock let go once the statement ended", func(s lockqueue.Snapshot) bool { return len(s.Holders()) == 0 })
	t.Logf("held %v after its psql was killed (the statement had %v to run)", gone.Sub(killed).Round(100*time.Millisecond), sleep)
}

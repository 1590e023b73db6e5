package main

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/etcdlocal"
	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/redislocal"
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
	r := redislocal.ForTest(t)
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
		if snap := api.at(key, m.at); !slices.Equal(snap.Holders(), []string{m.holder}) || snap.Service != "redis" {
			t.Errorf("at %s: service %q holders %q, want %s", m.at.Format(time.StampMilli), snap.Service, snap.Holders(), m.holder)
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
	srv := etcdlocal.ForTest(t)
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
	aAcq, aName := time.Now(), snap.Nodes[0].Name
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
	}
	var st history.Stats
	api.get("/api/v1/lock/stats", prefix, map[string]string{"from": ms(start), "to": ms(time.Now())}, &st)
	if st.Acquisitions != 3 || st.Released != 1 || st.Expired != 1 {
		t.Errorf("figures %+v: want 3 acquisitions, 1 release, 1 expiry", st)
	}
}

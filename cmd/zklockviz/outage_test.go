package main

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"path"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/etcd/etcdlocal/etcdtest"
	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/postgres/pglocal/pgtest"
	"github.com/zklockviz/zklockviz/postgres/pglock"
	"github.com/zklockviz/zklockviz/redis/redislocal/redistest"
	"github.com/zklockviz/zklockviz/redis/redislock"
	"github.com/zklockviz/zklockviz/zookeeper/zklocal/zktest"
)

// outageWait is how long the tests leave a killed server down before they
// look: many polls of every reader (--poll 100ms), so that a reader that
// took an unreachable server for a free lock would have shown it.
const outageWait = 3 * time.Second

// restartServer starts a killed server again and fails the test if it
// does not come up.
func restartServer(t *testing.T, start func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := start(ctx); err != nil {
		t.Fatalf("restart the server: %v", err)
	}
}

// page is the body of a GET of serve's page or part at rel.
func page(t *testing.T, base, rel string, q url.Values) string {
	t.Helper()
	resp, err := http.Get(base + rel + "?" + q.Encode())
	if err != nil {
		t.Fatalf("GET %s: %v", rel, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: status %d, %v", rel, resp.StatusCode, err)
	}
	return string(b)
}

// checkUnknown checks lock while its server is down: the API shows the
// holders and alerts of held, its last live snapshot, not live and since
// when, never a free or missing lock; the lock's page and its text say
// unknown, not free; the history has recorded nothing since killed but
// the gap.
func checkUnknown(t *testing.T, api historyAPI, lock string, held lockqueue.Snapshot, killed time.Time) {
	t.Helper()
	api.waitLive(lock, lock+" not live", func(s lockqueue.Snapshot) bool { return !s.Live() })
	time.Sleep(outageWait)
	snap := api.live(lock)
	if snap.Live() || !snap.Exists || snap.UnknownSince.Before(killed) {
		t.Errorf("%s with its server down: connection %s, error %q, exists %v, unknown since %s; want not live, existing, unknown since the kill at %s",
			lock, snap.Connection, snap.Error, snap.Exists, snap.UnknownSince, killed)
	}
	if !slices.Equal(snap.Holders(), held.Holders()) || !slices.Equal(snap.Waiters(), held.Waiters()) {
		t.Errorf("%s with its server down: holders %q waiters %q, want the last known %q and %q",
			lock, snap.Holders(), snap.Waiters(), held.Holders(), held.Waiters())
	}
	for _, a := range held.Alerts {
		if !slices.ContainsFunc(snap.Alerts, func(b lockqueue.Alert) bool { return a.Kind == b.Kind }) {
			t.Errorf("%s with its server down lost its %s alert: %+v", lock, a.Kind, snap.Alerts)
		}
	}
	q := url.Values{"path": {lock}}
	if api.service != "" {
		q.Set("service", api.service)
	}
	for _, rel := range []string{"/parts/lock", "/parts/lock-text"} {
		body := page(t, api.base, rel, q)
		for _, never := range []string{"free", "no key", "does not exist"} {
			if strings.Contains(body, never) {
				t.Errorf("%s of %s with its server down says %q:\n%s", rel, lock, never, body)
			}
		}
		if !strings.Contains(body, "unknown since") {
			t.Errorf("%s of %s with its server down does not say since when it is unknown:\n%s", rel, lock, body)
		}
	}
	for _, e := range api.events(lock, killed) {
		if e.Kind != history.Connection {
			t.Errorf("%s recorded %s %s %s%s while its server was down: only the gap is known", lock, e.Kind, e.Node, e.How, e.Value)
		}
	}
}

// checkNoRelease checks that the history of lock since start has node
// leave only as how ("": not at all), and that the figures count no
// release and no hold of it.
func checkNoRelease(t *testing.T, api historyAPI, lock, node string, start time.Time, how history.How) {
	t.Helper()
	evs := api.events(lock, start)
	for _, e := range evs {
		if e.Kind == history.Left && e.Node == node && e.How != how {
			t.Errorf("%s: %s left %s, want %q", lock, node, e.How, how)
		}
	}
	if _, ok := findEvent(evs, history.Left, node); how != "" && !ok {
		t.Errorf("%s: %s never left: %+v", lock, node, evs)
	}
	var st history.Stats
	if code := api.get("/api/v1/lock/stats", lock, map[string]string{"from": ms(start), "to": ms(time.Now())}, &st); code != 200 {
		t.Fatalf("stats of %s: %d", lock, code)
	}
	if st.Released != 0 || st.Expired != 0 || st.Hold.Count != 0 || len(st.Gaps) == 0 {
		t.Errorf("figures of %s %+v: want no release, no expiry, no hold counted, and the gap", lock, st)
	}
}

// hasAlert reports whether s has an alert of kind naming node.
func hasAlert(s lockqueue.Snapshot, kind, node string) bool {
	return slices.ContainsFunc(s.Alerts, func(a lockqueue.Alert) bool { return a.Kind == kind && slices.Contains(a.Nodes, node) })
}

// Redis killed under two held keys, one with PX and one without expiry:
// both keep their holder, not live, their no-expiry alert kept; nothing
// is released. Restarted without persistence, the keys are gone: they
// left unseen, and the lock says the restart lost them while their owners
// may still believe they hold.
func TestOutageRedis(t *testing.T) {
	r := redistest.ForTest(t)
	const key, forever = "orders", "orders-forever"
	srv := startServe(t, "--redis", r.Addr(), "--addr", "127.0.0.1:0", "--watch", "redis:"+key, "--watch", "redis:"+forever,
		"--data-dir", t.TempDir(), "--poll", "100ms", "--log-level", "warn")
	api := historyAPI{t: t, base: srv.url, service: "redis"}
	start := time.Now()
	redisCLI(t, r.Addr(), "SET", key, "tok", "NX", "PX", "60000")
	redisCLI(t, r.Addr(), "SET", forever, "tok-f", "NX")
	held := map[string]lockqueue.Snapshot{}
	for k, tok := range map[string]string{key: "tok", forever: "tok-f"} {
		api.waitLive(k, tok+" holding", func(s lockqueue.Snapshot) bool { held[k] = s; return holding(tok)(s) })
	}
	if !hasAlert(held[forever], redislock.AlertNoExpiry, "tok-f") {
		t.Fatalf("no %s alert on %s: %+v", redislock.AlertNoExpiry, forever, held[forever].Alerts)
	}

	killed := time.Now()
	if err := r.Kill(); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{key, forever} {
		checkUnknown(t, api, k, held[k], killed)
	}

	restartServer(t, r.Start)
	for k, tok := range map[string]string{key: "tok", forever: "tok-f"} {
		var snap lockqueue.Snapshot
		api.waitLive(k, "the restart's loss of "+tok+" told", func(s lockqueue.Snapshot) bool {
			snap = s
			return s.Live() && hasAlert(s, redislock.AlertLostInRestart, tok)
		})
		if len(snap.Nodes) != 0 || snap.Exists {
			t.Errorf("%s after the restart: %+v, want no key", k, snap)
		}
		i := slices.IndexFunc(snap.Alerts, func(a lockqueue.Alert) bool { return a.Kind == redislock.AlertLostInRestart })
		if msg := snap.Alerts[i].Message; !strings.Contains(msg, "run id changed") || !strings.Contains(msg, "may still believe it holds") {
			t.Errorf("%s's alert after the restart: %q", k, msg)
		}
		checkNoRelease(t, api, k, tok, start, history.Unseen)
		if _, ok := findEvent(api.events(k, killed), history.AlertRaised, ""); !ok {
			t.Errorf("%s: the loss in the restart is not recorded", k)
		}
	}
}

// etcd killed under an `etcdctl lock` holder: the holder stays shown, not
// live; nothing is recorded but the gap. Restarted (etcd persists), the
// holder still holds, and the history never had it leave.
func TestOutageEtcd(t *testing.T) {
	e := etcdtest.ForTest(t)
	const prefix = "/locks/outage"
	srv := startServe(t, "--etcd", e.Endpoint(), "--addr", "127.0.0.1:0", "--watch", "etcd:"+prefix,
		"--data-dir", t.TempDir(), "--poll", "100ms", "--log-level", "warn")
	api := historyAPI{t: t, base: srv.url, service: "etcd"}
	start := time.Now()
	etcdctlLock(t, e.Endpoint(), prefix, 30)
	var held lockqueue.Snapshot
	api.waitLive(prefix, "etcdctl holding", func(s lockqueue.Snapshot) bool {
		held = s
		return s.Live() && len(s.Nodes) == 1 && s.Nodes[0].Holding
	})
	name := held.Nodes[0].Name

	killed := time.Now()
	if err := e.Kill(); err != nil {
		t.Fatal(err)
	}
	checkUnknown(t, api, prefix, held, killed)

	restartServer(t, e.Start)
	api.waitLive(prefix, "etcdctl still holding after the restart", holding(name))
	checkNoRelease(t, api, prefix, name, start, "")
}

// PostgreSQL killed under a psql session holding pg_advisory_lock: the
// holder stays shown, not live. The crash ended every session, so after
// the restart the lock is free: the holder left unseen, not released.
func TestOutagePostgres(t *testing.T) {
	pg := pgtest.ForTest(t)
	const lock = "advisory/42"
	srv := startServe(t, "--postgres", pg.DSN(), "--addr", "127.0.0.1:0", "--watch", "postgres:"+lock,
		"--data-dir", t.TempDir(), "--poll", "100ms", "--log-level", "warn")
	api := historyAPI{t: t, base: srv.url, service: "postgres"}
	start := time.Now()
	api.waitLive(lock, "the lock read", func(s lockqueue.Snapshot) bool { return s.Live() })
	h := startPsql(t, pg.DSN(), "holder")
	h.send(t, "SELECT pg_advisory_lock(42);")
	var held lockqueue.Snapshot
	api.waitLive(lock, "psql holding", func(s lockqueue.Snapshot) bool {
		held = s
		return s.Live() && len(s.Holders()) == 1 && nodeOf(s, "holder") != ""
	})
	name := nodeOf(held, "holder")

	killed := time.Now()
	if err := pg.Kill(); err != nil {
		t.Fatal(err)
	}
	checkUnknown(t, api, lock, held, killed)

	restartServer(t, pg.Start)
	// The restart is told: the holder's lock went with its session.
	api.waitLive(lock, "the lock read again, free, its holder released in the restart", func(s lockqueue.Snapshot) bool {
		return s.Live() && len(s.Nodes) == 0 && hasAlert(s, pglock.AlertReleasedInRestart, name)
	})
	checkNoRelease(t, api, lock, name, start, history.Unseen)
}

// ZooKeeper killed under a kazoo holder: the holder stays shown, not live.
// Restarted on its data, the holder's session is back and it still holds:
// the history never had it leave.
func TestOutageZooKeeper(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Pdeathsig is Linux's")
	}
	zks := zktest.ForTest(t) // its own: the test kills and restarts it
	const lock = "/outage/kazoo"
	srv := startServe(t, "--zk", zks.Addr(), "--addr", "127.0.0.1:0", "--watch", lock,
		"--data-dir", t.TempDir(), "--poll", "250ms", "--log-level", "warn")
	api := historyAPI{t: t, base: srv.url}
	start := time.Now()
	c := kazooClient(t, zks.Addr(), lock, 30*time.Second, "lock")
	w, _ := c.expect(t, "acquired 0 ")
	name := path.Base(w[2])
	var held lockqueue.Snapshot
	api.waitLive(lock, "kazoo holding", func(s lockqueue.Snapshot) bool {
		held = s
		return holding(name)(s)
	})

	killed := time.Now()
	if err := zks.Kill(); err != nil {
		t.Fatal(err)
	}
	checkUnknown(t, api, lock, held, killed)

	restartServer(t, zks.Start)
	api.waitLive(lock, "kazoo still holding after the restart", holding(name))
	checkNoRelease(t, api, lock, name, start, "")
}

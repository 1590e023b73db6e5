package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/third_party/zk"

	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/localproc/proctest"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/postgres/pglocal/pgtest"
	"github.com/zklockviz/zklockviz/zookeeper/zklocal/zktest"
)

// lockClient is a real lock client process (kazoo or Curator) driven over
// stdin (proctest.Client).
type lockClient struct {
	*proctest.Client
}

func startLockClient(t *testing.T, name string, args ...string) *lockClient {
	t.Helper()
	return &lockClient{proctest.StartClient(t, name, args...)}
}

// expect waits for a line starting with prefix and returns its words and
// when it came.
func (c *lockClient) expect(t *testing.T, prefix string) ([]string, time.Time) {
	t.Helper()
	return c.Expect(t, prefix, waitTimeout)
}

func (c *lockClient) send(t *testing.T, line string) {
	t.Helper()
	c.Send(t, line)
}

func kazooClient(t *testing.T, servers, lock string, timeout time.Duration, kinds ...string) *lockClient {
	t.Helper()
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import kazoo").Run(); err != nil {
		missingClient(t, "kazoo (apt-get install python3-kazoo)", err)
	}
	args := append([]string{filepath.Join("..", "..", "testdata", "clients", "kazoo_lock.py"), servers, lock,
		fmt.Sprintf("%.1f", timeout.Seconds())}, kinds...)
	return startLockClient(t, python, args...)
}

// curatorClient compiles testdata/clients/CuratorLocks.java (the JDK runs
// a single source file) and runs it with Debian's Curator jars.
func curatorClient(t *testing.T, servers, lock string, sessionTimeout time.Duration, kinds ...string) *lockClient {
	t.Helper()
	var cp []string
	for _, j := range []string{"curator-framework.jar", "curator-client.jar", "curator-recipes.jar", "zookeeper.jar",
		"zookeeper-jute.jar", "slf4j-api.jar", "slf4j-nop.jar", "guava.jar"} {
		p := filepath.Join("/usr/share/java", j)
		if _, err := os.Stat(p); err != nil {
			missingClient(t, "Curator (apt-get install libcurator-recipes-java)", err)
		}
		cp = append(cp, p)
	}
	java, err := exec.LookPath("java")
	if err != nil {
		missingClient(t, "java", err)
	}
	args := append([]string{"-Xmx64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", strings.Join(cp, ":"),
		filepath.Join("..", "..", "testdata", "clients", "CuratorLocks.java"), servers, lock,
		fmt.Sprint(sessionTimeout.Milliseconds())}, kinds...)
	return startLockClient(t, java, args...)
}

func missingClient(t *testing.T, what string, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s: %v", what, err)
	}
	t.Skipf("%s: %v", what, err)
}

// historyAPI reads the flight recorder's API of a running serve.
type historyAPI struct {
	t    *testing.T
	base string
	// service qualifies every lock asked for; empty is ZooKeeper.
	service string
}

func (h historyAPI) get(endpoint, lock string, params map[string]string, v any) int {
	h.t.Helper()
	q := url.Values{"path": {lock}}
	if h.service != "" {
		q.Set("service", h.service)
	}
	for k, p := range params {
		q.Set(k, p)
	}
	return getJSON(h.t, h.base+endpoint+"?"+q.Encode(), v)
}

func ms(t time.Time) string { return fmt.Sprint(t.UnixMilli()) }

func (h historyAPI) events(lock string, from time.Time) []history.Event {
	h.t.Helper()
	var resp struct{ Events []history.Event }
	if code := h.get("/api/v1/lock/history", lock, map[string]string{"from": ms(from), "to": ms(time.Now())}, &resp); code != 200 {
		h.t.Fatalf("history of %s: status %d", lock, code)
	}
	return resp.Events
}

func (h historyAPI) at(lock string, at time.Time) lockqueue.Snapshot {
	h.t.Helper()
	var snap lockqueue.Snapshot
	if code := h.get("/api/v1/lock", lock, map[string]string{"at": at.UTC().Format(time.RFC3339Nano)}, &snap); code != 200 {
		h.t.Fatalf("%s at %s: status %d", lock, at, code)
	}
	return snap
}

func (h historyAPI) live(lock string) lockqueue.Snapshot {
	var snap lockqueue.Snapshot
	h.get("/api/v1/lock", lock, nil, &snap)
	return snap
}

// waitLive waits until the live view of lock satisfies ok and returns the
// moment it did: everything recorded up to then is what the API showed.
func (h historyAPI) waitLive(lock, what string, ok func(lockqueue.Snapshot) bool) time.Time {
	h.t.Helper()
	waitFor(h.t, what, func() bool { return ok(h.live(lock)) })
	return time.Now()
}

func findEvent(evs []history.Event, kind history.Kind, node string) (history.Event, bool) {
	i := slices.IndexFunc(evs, func(e history.Event) bool { return e.Kind == kind && e.Node == node })
	if i < 0 {
		return history.Event{}, false
	}
	return evs[i], true
}

// within checks a recorded duration against the client's own measure.
// The tolerance covers the watcher's read after each change and the
// client's output reaching the test.
const figureTolerance = time.Second

func within(t *testing.T, what string, recorded, client time.Duration) {
	t.Helper()
	if d := recorded - client; d > figureTolerance || d < -figureTolerance {
		t.Errorf("%s: recorded %v, the client measured %v (tolerance %v)", what, recorded, client, figureTolerance)
	}
}

// The real binary records real kazoo and Curator contenders on a real
// ZooKeeper: hand-offs, a waiter giving up, a killed holder whose session
// expires, the watcher losing its server; the history API answers with
// the events, the queue at chosen moments and the figures, which agree
// with what the clients measured; /metrics has the histograms and
// counters, and the Grafana dashboard names only metrics it exposes.
func TestHistoryRecordsRealLocks(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Pdeathsig is Linux's")
	}
	zks := zktest.ForTest(t) // its own: the test stops and restarts it
	const kz, cur, killed = "/hist/kazoo", "/hist/curator", "/hist/killed"
	srv := startServe(t, "--zk", zks.Addr(), "--addr", "127.0.0.1:0", "--watch", kz, "--watch", cur, "--watch", killed,
		"--data-dir", t.TempDir(), "--poll", "250ms", "--log-level", "warn")
	api := historyAPI{t: t, base: srv.url}
	start := time.Now()
	for _, l := range []string{kz, cur, killed} {
		api.waitLive(l, "first snapshot of "+l, func(s lockqueue.Snapshot) bool { return s.Path == l && s.Live() })
	}
	hold := func() { time.Sleep(1500 * time.Millisecond) } // lets holds and waits last long enough to measure

	t.Run("kazoo hand-offs and a give-up", func(t *testing.T) {
		c := kazooClient(t, zks.Addr(), kz, 10*time.Second, "lock", "lock", "lock")
		var nodes []string
		var queuedAt []time.Time
		for i := range 3 {
			w, at := c.expect(t, fmt.Sprintf("queued %d ", i))
			nodes, queuedAt = append(nodes, path.Base(w[2])), append(queuedAt, at)
		}
		_, acq0 := c.expect(t, "acquired 0 ")
		full := api.waitLive(kz, "three in the kazoo queue", func(s lockqueue.Snapshot) bool { return len(s.Nodes) == 3 })
		hold()
		c.send(t, "release 2")
		_, gaveUp := c.expect(t, "cancelled 2")
		twoLeft := api.waitLive(kz, "the give-up seen", func(s lockqueue.Snapshot) bool { return len(s.Nodes) == 2 })
		hold()
		c.send(t, "release 0")
		_, rel0 := c.expect(t, "released 0")
		_, acq1 := c.expect(t, "acquired 1 ")
		handedOff := api.waitLive(kz, "the hand-off seen", func(s lockqueue.Snapshot) bool {
			return len(s.Nodes) == 1 && s.Nodes[0].Holding
		})
		hold()
		c.send(t, "release 1")
		_, rel1 := c.expect(t, "released 1")
		api.waitLive(kz, "the queue empty", func(s lockqueue.Snapshot) bool { return len(s.Nodes) == 0 })

		evs := api.events(kz, start)
		for _, w := range []struct {
			kind history.Kind
			node string
			how  history.How
		}{
			{history.Queued, nodes[0], ""}, {history.Acquired, nodes[0], ""}, {history.Queued, nodes[2], ""},
			{history.Left, nodes[2], history.GaveUp}, {history.Left, nodes[0], history.Released},
			{history.Acquired, nodes[1], ""}, {history.Left, nodes[1], history.Released},
		} {
			e, ok := findEvent(evs, w.kind, w.node)
			if !ok || e.How != w.how {
				t.Errorf("no %s %s %s event in %+v", w.kind, w.node, w.how, evs)
			}
		}
		if e, ok := findEvent(evs, history.Acquired, nodes[1]); ok {
			within(t, "p1's wait", e.Wait(), acq1.Sub(queuedAt[1]))
		}
		if e, ok := findEvent(evs, history.Left, nodes[0]); ok {
			within(t, "p0's hold", e.Hold(), rel0.Sub(acq0))
		}
		if e, ok := findEvent(evs, history.Left, nodes[1]); ok {
			within(t, "p1's hold", e.Hold(), rel1.Sub(acq1))
		}
		if e, ok := findEvent(evs, history.Left, nodes[2]); ok {
			within(t, "p2's wait until it gave up", e.Wait(), gaveUp.Sub(queuedAt[2]))
		}

		for _, m := range []struct {
			at               time.Time
			holders, waiters []string
		}{
			{full, nodes[:1], nodes[1:]},
			{twoLeft, nodes[:1], nodes[1:2]},
			{handedOff, nodes[1:2], nil},
		} {
			snap := api.at(kz, m.at)
			if !slices.Equal(snap.Holders(), m.holders) || !slices.Equal(snap.Waiters(), m.waiters) {
				t.Errorf("at %s: holders %q waiters %q, want %q and %q", m.at.Format(time.StampMilli), snap.Holders(), snap.Waiters(), m.holders, m.waiters)
			}
			if len(snap.Nodes) > 1 && snap.Nodes[1].WaitsFor != snap.Nodes[0].Name {
				t.Errorf("at %s: %s waits for %q, want %s", m.at.Format(time.StampMilli), snap.Nodes[1].Name, snap.Nodes[1].WaitsFor, snap.Nodes[0].Name)
			}
		}

		var st history.Stats
		if code := api.get("/api/v1/lock/stats", kz, map[string]string{"from": ms(start), "to": ms(time.Now())}, &st); code != 200 {
			t.Fatalf("stats: %d", code)
		}
		if st.Acquisitions != 2 || st.GaveUp != 1 || st.Released != 2 || st.Wait.Count != 2 || st.Hold.Count != 2 {
			t.Errorf("figures %+v: want 2 acquisitions, 1 give-up, 2 releases, 2 waits and 2 holds", st)
		}
		within(t, "max hold", time.Duration(st.Hold.Max*float64(time.Second)), max(rel0.Sub(acq0), rel1.Sub(acq1)))
	})

	t.Run("Curator hand-off", func(t *testing.T) {
		c := curatorClient(t, zks.Addr(), cur, 10*time.Second, "mutex", "mutex")
		w0, _ := c.expect(t, "queued 0 ")
		w1, q1 := c.expect(t, "queued 1 ")
		_, acq0 := c.expect(t, "acquired 0")
		api.waitLive(cur, "two in the Curator queue", func(s lockqueue.Snapshot) bool { return len(s.Nodes) == 2 })
		hold()
		c.send(t, "release 0")
		_, rel0 := c.expect(t, "released 0")
		_, acq1 := c.expect(t, "acquired 1")
		api.waitLive(cur, "the Curator hand-off seen", func(s lockqueue.Snapshot) bool { return len(s.Nodes) == 1 })
		evs := api.events(cur, start)
		n0, n1 := path.Base(w0[2]), path.Base(w1[2])
		if e, ok := findEvent(evs, history.Left, n0); !ok || e.How != history.Released {
			t.Errorf("no release of %s in %+v", n0, evs)
		} else {
			within(t, "Curator p0's hold", e.Hold(), rel0.Sub(acq0))
		}
		if e, ok := findEvent(evs, history.Acquired, n1); !ok {
			t.Errorf("no acquisition by %s in %+v", n1, evs)
		} else {
			within(t, "Curator p1's wait", e.Wait(), acq1.Sub(q1))
		}
		c.send(t, "release 1")
		c.expect(t, "released 1")
	})

	t.Run("killed holder expires", func(t *testing.T) {
		holder := kazooClient(t, zks.Addr(), killed, 4*time.Second, "lock")
		w, _ := holder.expect(t, "queued 0 ")
		holder.expect(t, "acquired 0 ")
		waiter := kazooClient(t, zks.Addr(), killed, 10*time.Second, "lock")
		ww, _ := waiter.expect(t, "queued 0 ")
		api.waitLive(killed, "holder and waiter", func(s lockqueue.Snapshot) bool { return len(s.Nodes) == 2 })
		if err := holder.Cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		zombie := api.waitLive(killed, "the holder a zombie", func(s lockqueue.Snapshot) bool {
			return len(s.Nodes) == 2 && s.Nodes[0].Zombie
		})
		waiter.expect(t, "acquired 0 ")
		api.waitLive(killed, "the waiter holding", func(s lockqueue.Snapshot) bool { return len(s.Nodes) == 1 && s.Nodes[0].Holding })
		evs := api.events(killed, start)
		if e, ok := findEvent(evs, history.Left, path.Base(w[2])); !ok || e.How != history.Expired {
			t.Errorf("the killed holder's node did not leave as expired: %+v", evs)
		}
		if _, ok := findEvent(evs, history.Acquired, path.Base(ww[2])); !ok {
			t.Errorf("no acquisition by the waiter: %+v", evs)
		}
		if snap := api.at(killed, zombie); len(snap.Nodes) != 2 || !snap.Nodes[0].Zombie || !slices.ContainsFunc(snap.Alerts, func(a lockqueue.Alert) bool {
			return a.Kind == lockqueue.AlertZombie
		}) {
			t.Errorf("at the zombie moment: %+v", snap)
		}
		var st history.Stats
		api.get("/api/v1/lock/stats", killed, map[string]string{"from": ms(start)}, &st)
		if st.Expired != 1 {
			t.Errorf("stats: %d expiries, want 1", st.Expired)
		}
	})

	t.Run("watcher disconnect is a gap", func(t *testing.T) {
		before := time.Now()
		if err := zks.Stop(); err != nil {
			t.Fatal(err)
		}
		api.waitLive(killed, "the reader not connected", func(s lockqueue.Snapshot) bool { return s.Connection != lockqueue.Connected })
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		if err := zks.Start(ctx); err != nil {
			t.Fatal(err)
		}
		back := api.waitLive(killed, "the reader back", func(s lockqueue.Snapshot) bool { return s.Live() })
		var resp struct{ Gaps []history.Span }
		api.get("/api/v1/lock/history", killed, map[string]string{"from": ms(before), "to": ms(back)}, &resp)
		if len(resp.Gaps) != 1 || resp.Gaps[0].From.Before(before) || resp.Gaps[0].To.After(back) {
			t.Errorf("gaps %+v, want one between %s and %s", resp.Gaps, before.Format(time.StampMilli), back.Format(time.StampMilli))
		}
	})

	t.Run("metrics and the Grafana dashboard", func(t *testing.T) {
		resp, err := http.Get(srv.url + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		exposed := string(b)
		for _, want := range []string{
			`zklockviz_lock_wait_seconds_bucket{path="/hist/kazoo",service="zookeeper",le="+Inf"} 2`,
			`zklockviz_lock_hold_seconds_count{path="/hist/kazoo",service="zookeeper"} 2`,
			`zklockviz_lock_giveups_total{path="/hist/kazoo",service="zookeeper"} 1`,
			`zklockviz_lock_expiries_total{path="/hist/killed",service="zookeeper"} 1`,
			`zklockviz_lock_acquisitions_total{path="/hist/curator",service="zookeeper"} 2`,
		} {
			if !strings.Contains(exposed, want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
		checkDashboard(t, exposed)
	})
}

// checkDashboard: the shipped Grafana dashboard is valid JSON, has panels,
// and every metric its queries name is one /metrics exposes.
func checkDashboard(t *testing.T, exposed string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "grafana", "zklockviz.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("docs/grafana/zklockviz.json: %v", err)
	}
	metric := regexp.MustCompile(`\bzklockviz_[a-z_]+`)
	queries := 0
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			queries++
			names := metric.FindAllString(q.Expr, -1)
			if len(names) == 0 {
				t.Errorf("panel %q: query %q names no zklockviz metric", p.Title, q.Expr)
			}
			for _, n := range names {
				if !regexp.MustCompile(`(?m)^` + n + `[{ ]`).MatchString(exposed) {
					t.Errorf("panel %q: query %q names %s, which /metrics does not expose", p.Title, q.Expr, n)
				}
			}
		}
	}
	if queries == 0 {
		t.Errorf("dashboard %q has no queries", dash.Title)
	}
}

// The history's flags: bad values are usage errors naming the flag, before
// anything connects; good ones reach the config.
func TestHistoryFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  []string
		code int
		want string
	}{
		{[]string{"--history", "maybe"}, nil, 2, `--history "maybe": want on or off`},
		{[]string{"--history-retention", "0d"}, nil, 2, "--history-retention"},
		{[]string{"--history-retention", "forever"}, nil, 2, "--history-retention"},
		{[]string{"--history-max-size", "lots"}, nil, 2, "--history-max-size"},
		{[]string{"--history-db", "mysql://db/x"}, nil, 2, "--history-db: want a PostgreSQL URL"},
		{nil, []string{"ZKLOCKVIZ_HISTORY_MAX_SIZE=-1GiB"}, 2, `--history-max-size "-1GiB"`},
		{[]string{"--cluster", "unknown"}, nil, 2, `--cluster "unknown": the history calls recordings of an unknown cluster so`},
		{nil, []string{"ZKLOCKVIZ_CLUSTER=a\tb"}, 2, `--cluster "a\tb": want printable characters`},
	} {
		t.Run(strings.Join(append(tc.env, tc.args...), " "), func(t *testing.T) {
			args := append([]string{"serve", "--zk", "127.0.0.1:1"}, tc.args...)
			code, _, stderr := runBinary(t, tc.env, args...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, tc.code, tc.want)
			}
		})
	}

	for _, tc := range []struct {
		retention, size string
		age             time.Duration
		bytes           int64
	}{
		{"7d", "1GiB", 7 * 24 * time.Hour, 1 << 30},
		{"36h", "500MB", 36 * time.Hour, 500e6},
		{"1.5d", "1048576", 36 * time.Hour, 1 << 20},
	} {
		f := historyFlags{on: "on", retention: tc.retention, maxSize: tc.size, dataDir: "/var/lib/zklockviz"}
		c, err := f.config()
		if err != nil || c.MaxAge != tc.age || c.MaxSize != tc.bytes || !c.On || !c.DirGiven {
			t.Errorf("%s %s: %+v, %v; want %v and %d bytes", tc.retention, tc.size, c, err, tc.age, tc.bytes)
		}
	}
}

// A --data-dir that cannot be used does not stop serve: the dashboard and
// the lock page say the history is off and why, naming the directory and
// --data-dir; once the directory can be made, recording starts by itself
// and the stretch before shows as a gap.
func TestHistoryDataDirUnusable(t *testing.T) {
	zks := sharedZK(t)
	const lock = "/hist/unusable"
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startServe(t, "--zk", zks.Addr(), "--addr", "127.0.0.1:0", "--watch", lock, "--data-dir", file, "--log-level", "warn")
	api := historyAPI{t: t, base: srv.url}
	api.waitLive(lock, "the lock read", func(s lockqueue.Snapshot) bool { return s.Live() })
	off := func(page string) bool {
		body := httpText(t, srv.url+page)
		return strings.Contains(body, "history off") && strings.Contains(body, file) && strings.Contains(body, "--data-dir")
	}
	waitFor(t, "the dashboard saying the history is off", func() bool { return off("/") })
	waitFor(t, "the lock page saying the history is off", func() bool { return off("/lock?path=" + url.QueryEscape(lock)) })

	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "recording to start", func() bool { return !off("/") && !off("/lock?path="+url.QueryEscape(lock)) })
	var resp struct{ Gaps []history.Span }
	waitFor(t, "the unrecorded stretch as a gap", func() bool {
		api.get("/api/v1/lock/history", lock, nil, &resp)
		return len(resp.Gaps) > 0 && strings.Contains(resp.Gaps[len(resp.Gaps)-1].Why, "not recording: ")
	})
	if why := resp.Gaps[len(resp.Gaps)-1].Why; !strings.Contains(why, file) {
		t.Errorf("the gap says %q, want why naming %s", why, file)
	}
}

// serve --history-db keeps the history in a real PostgreSQL: a
// go-zookeeper hand-off is recorded there and answered by the same API.
func TestHistoryInPostgres(t *testing.T) {
	zks := sharedZK(t)
	pg := pgtest.ForTest(t)
	const lock = "/hist/pg"
	srv := startServe(t, "--zk", zks.Addr(), "--addr", "127.0.0.1:0", "--watch", lock, "--history-db", pg.DSN(), "--log-level", "warn")
	api := historyAPI{t: t, base: srv.url}
	start := time.Now()
	api.waitLive(lock, "first snapshot", func(s lockqueue.Snapshot) bool { return s.Path == lock && s.Live() })

	first := zk.NewLock(connect(t, zks.Addr()), lock, zk.WorldACL(zk.PermAll))
	if err := first.Lock(); err != nil {
		t.Fatal(err)
	}
	second := zk.NewLock(connect(t, zks.Addr()), lock, zk.WorldACL(zk.PermAll))
	got := make(chan error, 1)
	go func() { got <- second.Lock() }()
	both := api.waitLive(lock, "two in the queue", func(s lockqueue.Snapshot) bool { return len(s.Nodes) == 2 })
	if err := first.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	api.waitLive(lock, "the hand-off", func(s lockqueue.Snapshot) bool { return len(s.Nodes) == 1 })

	evs := api.events(lock, start)
	var left, acquired int
	for _, e := range evs {
		switch {
		case e.Kind == history.Left && e.How == history.Released:
			left++
		case e.Kind == history.Acquired:
			acquired++
		}
	}
	if left != 1 || acquired != 2 {
		t.Errorf("%d releases and %d acquisitions in %+v, want 1 and 2", left, acquired, evs)
	}
	if snap := api.at(lock, both); len(snap.Holders()) != 1 || len(snap.Waiters()) != 1 {
		t.Errorf("at %s: holders %q waiters %q, want one of each", both.Format(time.StampMilli), snap.Holders(), snap.Waiters())
	}
	second.Unlock()

	code, _, stderr := runBinary(t, nil, "serve", "--zk", zks.Addr(), "--addr", "127.0.0.1:0", "--history-db", "postgres://nobody@127.0.0.1:1/none")
	if code != 1 || !strings.Contains(stderr, "--history-db") {
		t.Errorf("an unreachable --history-db: exit %d, %q; want 1 naming --history-db", code, stderr)
	}
}

// kill -9 the recording serve, again and again, with a lock changing under
// it: each restart on the same --data-dir keeps what was recorded up to a
// second before the kill, says the time it was down is a gap, and answers
// for moments before the kill.
func TestHistorySurvivesKill9OfServe(t *testing.T) {
	zks := sharedZK(t)
	const lock = "/hist/kill9"
	dir := t.TempDir()
	holder := zk.NewLock(connect(t, zks.Addr()), lock, zk.WorldACL(zk.PermAll))
	start := time.Now()
	var lastSeen time.Time // when a serve last showed a change it had recorded
	for round := range 3 {
		srv := startServe(t, "--zk", zks.Addr(), "--addr", "127.0.0.1:0", "--watch", lock, "--data-dir", dir, "--log-level", "warn")
		api := historyAPI{t: t, base: srv.url}
		api.waitLive(lock, "first snapshot", func(s lockqueue.Snapshot) bool { return s.Path == lock && s.Live() })
		if round > 0 {
			var resp struct {
				Events []history.Event
				Gaps   []history.Span
			}
			api.get("/api/v1/lock/history", lock, map[string]string{"from": ms(start), "to": ms(time.Now())}, &resp)
			acquired := 0
			for _, e := range resp.Events {
				if e.Kind == history.Acquired && !e.Time.After(lastSeen) {
					acquired++
				}
			}
			// Each round before this one acquired once (and released
			// before it was killed, except the last).
			if acquired != round {
				t.Errorf("round %d: %d acquisitions recorded before the last kill, want %d: %+v", round, acquired, round, resp.Events)
			}
			if !slices.ContainsFunc(resp.Gaps, func(g history.Span) bool { return strings.Contains(g.Why, "not recording") }) {
				t.Errorf("round %d: no gap for the time serve was killed: %+v", round, resp.Gaps)
			}
		}
		if err := holder.Lock(); err != nil {
			t.Fatal(err)
		}
		lastSeen = api.waitLive(lock, "held", func(s lockqueue.Snapshot) bool { return len(s.Holders()) == 1 })
		if snap := api.at(lock, lastSeen); len(snap.Holders()) != 1 {
			t.Errorf("round %d: at %s: holders %q, want one", round, lastSeen.Format(time.StampMilli), snap.Holders())
		}
		if err := holder.Unlock(); err != nil {
			t.Fatal(err)
		}
		api.waitLive(lock, "released", func(s lockqueue.Snapshot) bool { return len(s.Nodes) == 0 })
		// At most the last second may be lost: let a second pass with
		// the release recorded before the kill, so every acquisition
		// counted above is one a second old or more.
		time.Sleep(time.Second)
		if err := srv.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-srv.done
	}
}

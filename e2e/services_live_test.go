package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/third_party/zk"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/zklockviz/zklockviz/etcd/etcdlocal"
	"github.com/zklockviz/zklockviz/etcd/etcdlocal/etcdtest"
	"github.com/zklockviz/zklockviz/postgres/pglocal"
	"github.com/zklockviz/zklockviz/postgres/pglocal/pgtest"
	"github.com/zklockviz/zklockviz/redis/redislocal/redistest"
)

// Every lock service live in one serve, looked at in the browser: real
// ZooKeeper, etcd and PostgreSQL servers, real third-party contenders
// (go-zookeeper's Lock, `etcdctl lock`, psql sessions), the real binary.

// waitUntil polls the test's own view of a server (not the page) until ok.
func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: gave up after %s", what, waitFor)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// liveEtcd is a throwaway etcd with a client of the test's own, for
// reading the queue as etcd has it.
func liveEtcd(t *testing.T) (*etcdlocal.Server, *clientv3.Client) {
	t.Helper()
	srv := etcdtest.ForTest(t)
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.Endpoint()}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return srv, cli
}

// etcdQueue lists the keys under prefix by create revision, as the
// recipe orders them, each by its last segment (the node's name).
func etcdQueue(t *testing.T, cli *clientv3.Client, prefix string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, prefix+"/", clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	if err != nil {
		t.Fatalf("get %s/: %v", prefix, err)
	}
	var names []string
	for _, kv := range resp.Kvs {
		names = append(names, strings.TrimPrefix(string(kv.Key), prefix+"/"))
	}
	return names
}

// etcdctlLock queues `etcdctl lock` on prefix with a lease of ttl seconds
// and waits until its key is in etcd. It holds until interrupted: SIGINT
// makes etcdctl unlock (a release), SIGKILL leaves its key to its lease.
func etcdctlLock(t *testing.T, srv *etcdlocal.Server, cli *clientv3.Client, prefix string, ttl int) *exec.Cmd {
	t.Helper()
	before := len(etcdQueue(t, cli, prefix))
	cmd := exec.Command("etcdctl", "--endpoints", srv.Endpoint(), "lock", "--ttl="+strconv.Itoa(ttl), prefix)
	cmd.Env = []string{"ETCDCTL_API=3"}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatalf("etcdctl lock: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	waitUntil(t, "etcdctl's key", func() bool { return len(etcdQueue(t, cli, prefix)) > before })
	return cmd
}

// psqlSession is a psql process fed statements on its standard input, so
// that its session (and the locks it takes) lasts until the test ends.
type psqlSession struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	app string
}

// psql opens a session named app (its application_name) and runs sql in it.
func psql(t *testing.T, dsn, app, sql string) *psqlSession {
	t.Helper()
	cmd := exec.Command("psql", "-X", "-q", "-d", dsn+"&application_name="+app)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("psql: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	s := &psqlSession{cmd: cmd, in: in, app: app}
	s.send(t, sql)
	return s
}

func (s *psqlSession) send(t *testing.T, sql string) {
	t.Helper()
	if _, err := io.WriteString(s.in, sql+"\n"); err != nil {
		t.Fatalf("psql %s: %v", s.app, err)
	}
}

// pgQuery runs one query with psql and returns its unaligned output.
func pgQuery(t *testing.T, dsn, sql string) string {
	t.Helper()
	out, err := exec.Command("psql", "-X", "-q", "-A", "-t", "-d", dsn, "-c", sql).CombinedOutput()
	if err != nil {
		t.Fatalf("psql -c %q: %v\n%s", sql, err, out)
	}
	return strings.TrimSpace(string(out))
}

// pgNode waits until the session named app is in the state the test
// wants (holding: idle or running but not waiting for a lock; waiting:
// waiting for a lock) and returns its node's name, pid-<backend pid>.
func pgNode(t *testing.T, dsn, app string, waiting bool) string {
	t.Helper()
	cond := "wait_event_type IS DISTINCT FROM 'Lock'"
	if waiting {
		cond = "wait_event_type = 'Lock'"
	}
	var pid string
	waitUntil(t, fmt.Sprintf("session %s (waiting %v)", app, waiting), func() bool {
		pid = pgQuery(t, dsn, fmt.Sprintf(`SELECT pid FROM pg_stat_activity WHERE application_name = '%s' AND %s`, app, cond))
		return pid != ""
	})
	return "pid-" + pid
}

// zkQueued waits until path has n children and returns them in order.
func zkQueued(t *testing.T, c *zk.Conn, path string, n int) []string {
	t.Helper()
	var q []string
	waitUntil(t, fmt.Sprintf("%d children of %s", n, path), func() bool {
		q = queueNames(t, c, path)
		return len(q) == n
	})
	return q
}

// lockPage is a lock's page in the browser.
func lockPage(base, service, name string) string {
	return base + "/lock?service=" + service + "&path=" + url.QueryEscape(name)
}

// dashRow finds a lock's row on the dashboard.
func dashRow(service, name string) string {
	return fmt.Sprintf(`document.querySelector('#locks-body tr[data-lock=%s][data-service=%s]')`, jsString(name), jsString(service))
}

// dashHolds is true when the dashboard's row says holder holds the lock:
// the holders' cell names each in full in its tooltip, "name (client)".
func dashHolds(row, holder string) string {
	return fmt.Sprintf(`[...%s.querySelector('td.holders').title.split('\n')].some(h => h === %s || h.startsWith(%s))`, row, jsString(holder), jsString(holder+" ("))
}

// edge is a waits-for arrow the page should draw, with who vouches for it.
func edge(from, to, kind, provenance string) string {
	return arrow(from, to, kind) + ` && ` + arrow(from, to, kind) + `.dataset.provenance === ` + jsString(provenance)
}

// tableOrder is the lock table's rows, first to last.
const tableOrder = `[...document.querySelectorAll('#table tbody tr[data-row]')].map(r => r.dataset.row).join(',')`

// One serve watches a ZooKeeper, an etcd, a PostgreSQL (advisory and row)
// and a three-master Redis lock at once, as issue 15 asks.
// The dashboard lists each with its service's badge and filters by
// service; each lock's page draws its holder, its waiters in order and
// their edges (etcd's inferred by the recipe's rule, PostgreSQL's
// confirmed by the server), etcd's lease counting down, and follows a
// hand-off on every service without a reload; the console stays empty.
func TestEveryServiceLive(t *testing.T) {
	need(t)
	etcd, cli := liveEtcd(t)
	pg := pgtest.ForTest(t)
	const (
		zkPath   = "/e2e/every/orders"
		etcdLock = "/e2e/every/orders"
		pgLock   = "advisory/42"
		rowLock  = "table/public.jobs"
		redisKey = "e2e-every-orders"
	)
	pgQuery(t, pg.DSN(), `CREATE TABLE jobs (id int PRIMARY KEY); INSERT INTO jobs VALUES (1)`)

	admin := connect(t)
	ensurePath(t, admin, zkPath)
	zkFirst := takeLock(t, zkPath, "zk-first")
	if err := <-zkFirst.got; err != nil {
		t.Fatal(err)
	}
	zkSecond := takeLock(t, zkPath, "zk-second")

	// Each contender queues after the one before is in the server, so the
	// queue's order is known.
	etcdHolder := etcdctlLock(t, etcd, cli, etcdLock, 30)
	etcdctlLock(t, etcd, cli, etcdLock, 30)
	etcdctlLock(t, etcd, cli, etcdLock, 30)
	ek := etcdQueue(t, cli, etcdLock)

	pgHolder := psql(t, pg.DSN(), "adv-holder", "SELECT pg_advisory_lock(42);")
	ph := pgNode(t, pg.DSN(), "adv-holder", false)
	psql(t, pg.DSN(), "adv-first", "SELECT pg_advisory_lock(42);")
	pw1 := pgNode(t, pg.DSN(), "adv-first", true)
	psql(t, pg.DSN(), "adv-second", "SELECT pg_advisory_lock(42);")
	pw2 := pgNode(t, pg.DSN(), "adv-second", true)

	const forUpdate = "BEGIN; SELECT id FROM jobs WHERE id = 1 FOR UPDATE;"
	rowHolder := psql(t, pg.DSN(), "row-holder", forUpdate)
	rh := pgNode(t, pg.DSN(), "row-holder", false)
	psql(t, pg.DSN(), "row-first", forUpdate)
	rw1 := pgNode(t, pg.DSN(), "row-first", true)
	psql(t, pg.DSN(), "row-second", forUpdate)
	rw2 := pgNode(t, pg.DSN(), "row-second", true)

	// Three Redis masters: one Redlock, held by redis-cli on every master.
	masters := redistest.NForTest(t, 3)
	args := []string{"--etcd", etcd.Endpoint(), "--postgres", pg.DSN(), "--poll", "200ms",
		"--watch", zkPath, "--watch", "etcd:" + etcdLock, "--watch", "postgres:" + pgLock, "--watch", "postgres:" + rowLock,
		"--watch", "redis:" + redisKey}
	for _, m := range masters {
		args = append(args, "--redis", m.Addr())
		redisCLI(t, m.Addr(), "SET", redisKey, "tok-A", "NX", "PX", "600000")
	}

	srv := startServer(t, args...)
	tb := newTab(t)

	// The dashboard: every lock, each with its service's badge.
	tb.open(srv.URL + "/")
	locks := []struct{ service, name, badge string }{
		{"zookeeper", zkPath, "ZooKeeper"},
		{"etcd", etcdLock, "etcd"},
		{"postgres", pgLock, "PostgreSQL"},
		{"postgres", rowLock, "PostgreSQL"},
		{"redis", redisKey, "Redis"},
	}
	for _, l := range locks {
		row := dashRow(l.service, l.name)
		tb.until(l.service+" "+l.name+" with its badge", row+` && `+row+`.querySelector('.svc').textContent === `+jsString(l.badge))
		want := lockPage("", l.service, l.name)
		if l.service == "zookeeper" {
			want = "/lock?path=" + url.QueryEscape(l.name)
		}
		href := eval[string](tb, row+`.querySelector('a').getAttribute('href')`)
		if u, err := url.Parse(href); err != nil || u.Query().Get("path") != l.name || (l.service != "zookeeper" && u.Query().Get("service") != l.service) {
			t.Errorf("%s %s links to %q, want a link like %q", l.service, l.name, href, want)
		}
	}
	tb.until("every service connected", `['zookeeper','etcd','postgres','redis'].every(s => document.querySelector('#services li[data-service='+s+'] .ensemble').dataset.state === 'connected')`)
	tb.screenshot("dashboard-services.png")
	if n := eval[int](tb, `document.querySelectorAll('#services .service-err').length`); n != 0 {
		t.Errorf("%d service errors on a healthy dashboard: %s", n, eval[string](tb, `document.getElementById('services').textContent`))
	}
	for _, tc := range []struct {
		filter string
		want   []string
	}{
		{"etcd", []string{"etcd " + etcdLock}},
		{"postgres", []string{"postgres " + pgLock, "postgres " + rowLock}},
		{"zookeeper", []string{"zookeeper " + zkPath}},
		{"redis", []string{"redis " + redisKey}},
		{"", []string{"zookeeper " + zkPath, "etcd " + etcdLock, "postgres " + pgLock, "postgres " + rowLock, "redis " + redisKey}},
	} {
		tb.run(`{ const s = document.getElementById('filter-service'); s.value = ` + jsString(tc.filter) + `; s.dispatchEvent(new Event('change')); }`)
		rows := `[...document.querySelectorAll('#locks-body tr[data-lock]')].map(r => r.dataset.service + ' ' + r.dataset.lock).sort().join('|')`
		want := slices.Clone(tc.want)
		slices.Sort(want)
		tb.until(fmt.Sprintf("filter %q shows %v", tc.filter, want), rows+` === `+jsString(strings.Join(want, "|")))
	}

	// ZooKeeper: go-zookeeper's queue, then a release.
	tb.open(srv.URL + "/lock?path=" + url.QueryEscape(zkPath))
	q := zkQueued(t, admin, zkPath, 2)
	tb.until("ZooKeeper: the holder and its waiter", nodeCount(2)+` && `+node(q[0], "holding")+` && `+node(q[1], "waiting"))
	tb.until("ZooKeeper: the rule's edge", arrow(q[1], q[0], "rule"))
	tb.run(`window.__samePage = true`)
	if err := zkFirst.lock.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := <-zkSecond.got; err != nil {
		t.Fatal(err)
	}
	tb.until("ZooKeeper: the hand-off", nodeCount(1)+` && `+node(q[1], "holding"))
	if !eval[bool](tb, `window.__samePage === true`) {
		t.Error("ZooKeeper's page reloaded for the hand-off")
	}

	// etcd: etcdctl's queue by create revision, edges by the recipe's rule,
	// marked inferred; leases counting down; a release.
	tb.open(lockPage(srv.URL, "etcd", etcdLock))
	tb.until("etcd: the holder", nodeCount(3)+` && `+node(ek[0], "holding"))
	tb.until("etcd: the waiters", node(ek[1], "waiting")+` && `+node(ek[2], "waiting"))
	tb.until("etcd: the second waits for the holder, inferred", edge(ek[1], ek[0], "rule", "inferred"))
	tb.until("etcd: the third waits for the second, inferred", edge(ek[2], ek[1], "rule", "inferred"))
	tb.until("etcd: the table's order", tableOrder+` === `+jsString(strings.Join(ek, ",")))
	// The waiters' keys were there before serve started: etcd gives no
	// creation time for them, so their wait is timed from the revision's
	// first sight, as a bound ("waits ≥ 3s"): never "?", nor 739,000 days.
	for _, k := range ek[1:] {
		tb.until("etcd: "+k+"'s wait shown as a bound in the table",
			fmt.Sprintf(`(t => t && /^waits ≥ \d/.test(t.textContent.trim()))(document.querySelector('#table tr[data-row=%s] td.time'))`, jsString(k)))
	}
	leftRe := regexp.MustCompile(`(\d+)s left`)
	laneTime := fmt.Sprintf(`document.querySelector('#lane [data-node=%s] .time').textContent`, jsString(ek[0]))
	tb.until("etcd: the holder's lease", `/lease · \d+s left/.test(`+laneTime+`)`)
	first := leftRe.FindStringSubmatch(eval[string](tb, laneTime))
	if len(first) < 2 {
		t.Fatalf("etcd: the holder's lease shows %q", eval[string](tb, laneTime))
	}
	if n, _ := strconv.Atoi(first[1]); n < 1 || n > 30 {
		t.Errorf("etcd: the holder's lease shows %ss left, want 1–30 (a 30 s lease)", first[1])
	}
	// The page counts down between reads: a lower figure comes.
	tb.until("etcd: the lease counting down", fmt.Sprintf(`(m => m && Number(m[1]) < %s)(/(\d+)s left/.exec(%s))`, first[1], laneTime))
	tb.run(`window.__samePage = true`)
	if err := etcdHolder.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "etcd: the holder's key gone", func() bool { return len(etcdQueue(t, cli, etcdLock)) == 2 })
	tb.until("etcd: the hand-off", nodeCount(2)+` && `+node(ek[1], "holding")+` && `+edge(ek[2], ek[1], "rule", "inferred"))
	if !eval[bool](tb, `window.__samePage === true`) {
		t.Error("etcd's page reloaded for the hand-off")
	}

	// PostgreSQL, advisory: holders first, then waiters by wait start; the
	// server's own edges, marked confirmed; a release.
	tb.open(lockPage(srv.URL, "postgres", pgLock))
	tb.until("PostgreSQL: the holder and its waiters", nodeCount(3)+` && `+node(ph, "holding")+` && `+node(pw1, "waiting")+` && `+node(pw2, "waiting"))
	tb.until("PostgreSQL: the first waiter is blocked by the holder, confirmed", edge(pw1, ph, "rule", "confirmed"))
	tb.until("PostgreSQL: the second waiter's edges, each confirmed",
		fmt.Sprintf(`[...document.querySelectorAll('#lane [data-from=%s]')].length > 0 && [...document.querySelectorAll('#lane [data-from=%s]')].every(a => a.dataset.provenance === 'confirmed')`, jsString(pw2), jsString(pw2)))
	tb.until("PostgreSQL: the table's order", tableOrder+` === `+jsString(strings.Join([]string{ph, pw1, pw2}, ",")))
	tb.until("PostgreSQL: the holder's session", fmt.Sprintf(`document.querySelector('#table tr[data-row=%s]').textContent.includes('adv-holder')`, jsString(ph)))
	// A session reads as people know it, not as the reader's JSON record;
	// PostgreSQL has no watches, and the legend names its edges only.
	tb.until("PostgreSQL: the holder's label in the lane", fmt.Sprintf(`(t => t.startsWith('adv-holder') && !t.includes('{'))(document.querySelector('#lane [data-node=%s] .label.data').textContent)`, jsString(ph)))
	tb.until("PostgreSQL: no watches column", fmt.Sprintf(`document.querySelector('#table tr[data-row=%s]') && !document.querySelector('#table td.watches') && ![...document.querySelectorAll('#table thead th')].some(th => th.textContent === 'watches')`, jsString(pw1)))
	tb.until("PostgreSQL: the legend names the server's edges, not ZooKeeper's watches",
		`(l => l.includes('waits for (confirmed)') && !l.includes('watches (as it should)'))(document.getElementById('legend').textContent)`)
	tb.run(`window.__samePage = true`)
	pgHolder.send(t, "SELECT pg_advisory_unlock(42);")
	tb.until("PostgreSQL: the hand-off", nodeCount(2)+` && `+node(pw1, "holding")+` && `+node(pw2, "waiting")+` && `+edge(pw2, pw1, "rule", "confirmed"))
	if !eval[bool](tb, `window.__samePage === true`) {
		t.Error("PostgreSQL's page reloaded for the hand-off")
	}

	// PostgreSQL, row locks (SELECT … FOR UPDATE): the holder shows through
	// its waiters; a commit hands the row on.
	tb.open(lockPage(srv.URL, "postgres", rowLock))
	tb.until("rows: the holder and its waiters", nodeCount(3)+` && `+node(rh, "holding")+` && `+node(rw1, "waiting")+` && `+node(rw2, "waiting"))
	tb.until("rows: the first waiter is blocked by the holder, confirmed", edge(rw1, rh, "rule", "confirmed"))
	rowHolder.send(t, "COMMIT;")
	tb.until("rows: the hand-off", nodeCount(2)+` && `+node(rw1, "holding")+` && `+node(rw2, "waiting")+` && `+edge(rw2, rw1, "rule", "confirmed"))

	// Redis, a Redlock on three masters: tok-A holds all three, then tok-B
	// takes every master after a release.
	tb.open(lockPage(srv.URL, "redis", redisKey))
	tb.until("Redis: tok-A holds, live", node("tok-A", "holding")+` && document.body.dataset.live === 'true'`)
	tb.until("Redis: the breakdown per master", `document.querySelector('#table tr[data-row="tok-A"]').textContent.includes('holds 3 of 3 masters')`)
	tb.run(`window.__samePage = true`)
	for _, m := range masters {
		redisCLI(t, m.Addr(), "DEL", redisKey)
		redisCLI(t, m.Addr(), "SET", redisKey, "tok-B", "NX", "PX", "600000")
	}
	tb.until("Redis: the hand-off", nodeCount(1)+` && `+node("tok-B", "holding"))
	if !eval[bool](tb, `window.__samePage === true`) {
		t.Error("Redis's page reloaded for the hand-off")
	}

	// Each lock at a past moment, as the history rebuilds it, is what its
	// live page showed: but for a PostgreSQL session's record and creation
	// time, and a Redlock token's breakdown, whose clocks change at every
	// read.
	also := map[string][]string{"postgres": {"data", "ctime"}, "redis": {"data"}}
	for _, l := range locks {
		checkPastIsLive(t, srv, l.service, l.name, also[l.service]...)
	}

	// Back on the dashboard, every service's lock after its hand-off.
	tb.open(srv.URL + "/")
	for _, l := range []struct{ service, name, holder string }{
		{"zookeeper", zkPath, q[1]}, {"etcd", etcdLock, ek[1]}, {"postgres", pgLock, pw1}, {"postgres", rowLock, rw1},
		{"redis", redisKey, "tok-B"},
	} {
		row := dashRow(l.service, l.name)
		tb.until(l.service+" "+l.name+": the new holder on the dashboard", row+` && `+dashHolds(row, l.holder))
	}
}

// A dead etcd and a wrong PostgreSQL password each show on the dashboard,
// naming the service, its address and what to check, while the other
// services' locks keep moving.
func TestServiceErrorsOnDashboard(t *testing.T) {
	need(t)
	const zkPath = "/e2e/errors/orders"
	admin := connect(t)
	ensurePath(t, admin, zkPath)

	// A PostgreSQL that asks a password of every role but postgres, and a
	// pg_monitor role to read it with.
	dir, err := os.MkdirTemp("", "zklockviz-e2e-hba-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	hba := filepath.Join(dir, "pg_hba.conf")
	// The server runs as postgres, which must read the file.
	if err := errors.Join(os.Chmod(dir, 0o755), os.WriteFile(hba, []byte("local all all trust\n"+
		"host all postgres 127.0.0.1/32 trust\nhost all all 127.0.0.1/32 scram-sha-256\n"), 0o644)); err != nil {
		t.Fatal(err)
	}
	pg := pgtest.ForTestWith(t, pglocal.Options{Settings: map[string]string{"hba_file": hba}})
	pgQuery(t, pg.DSN(), `CREATE ROLE viz LOGIN PASSWORD 'viz-pw' IN ROLE pg_monitor`)
	vizDSN := pg.DSNFor("viz", "postgres")
	etcd, cli := liveEtcd(t)
	const etcdLock = "/e2e/errors/orders"

	t.Run("dead etcd", func(t *testing.T) {
		zkHolder := takeLock(t, zkPath, "dead-etcd-first")
		if err := <-zkHolder.got; err != nil {
			t.Fatal(err)
		}
		zkNext := takeLock(t, zkPath, "dead-etcd-next")
		q := zkQueued(t, admin, zkPath, 2)
		etcdctlLock(t, etcd, cli, etcdLock, 30)
		pgHolder := psql(t, pg.DSN(), "dead-etcd-holder", "SELECT pg_advisory_lock(7);")
		ph := pgNode(t, pg.DSN(), "dead-etcd-holder", false)
		psql(t, pg.DSN(), "dead-etcd-waiter", "SELECT pg_advisory_lock(7);")
		pw := pgNode(t, pg.DSN(), "dead-etcd-waiter", true)

		srv := startServer(t, "--etcd", etcd.Endpoint(), "--postgres", vizDSN, "--postgres-password", "viz-pw", "--poll", "200ms",
			"--watch", zkPath, "--watch", "etcd:"+etcdLock, "--watch", "postgres:advisory/7")
		tb := newTab(t)
		tb.open(srv.URL + "/")
		tb.until("etcd's lock, read", dashRow("etcd", etcdLock)+` && `+dashRow("etcd", etcdLock)+`.dataset.connection === 'connected'`)
		tb.until("PostgreSQL's lock, read", dashRow("postgres", "advisory/7")+` && `+dashHolds(dashRow("postgres", "advisory/7"), ph))

		if err := etcd.Kill(); err != nil {
			t.Fatalf("kill etcd: %v", err)
		}
		start := time.Now()
		etcdErr := `document.querySelector('#services li[data-service=etcd] .service-err')`
		tb.until("etcd's error on the dashboard", etcdErr+` && `+etcdErr+`.textContent.includes(`+jsString("etcd "+etcd.Addr())+`) && `+etcdErr+`.textContent.includes('check that etcd is up')`)
		t.Logf("etcd's error showed %v after the kill: %s", time.Since(start).Round(100*time.Millisecond), eval[string](tb, etcdErr+`.textContent`))
		tb.until("etcd's lock marked not live", dashRow("etcd", etcdLock)+`.dataset.connection !== 'connected'`)
		if log := srv.out.String(); !strings.Contains(log, "etcd "+etcd.Addr()+": ") {
			t.Errorf("the log does not name etcd and its address:\n%s", log)
		}

		// ZooKeeper and PostgreSQL keep moving.
		if err := zkHolder.lock.Unlock(); err != nil {
			t.Fatal(err)
		}
		if err := <-zkNext.got; err != nil {
			t.Fatal(err)
		}
		tb.until("ZooKeeper's hand-off beside a dead etcd", dashHolds(dashRow("zookeeper", zkPath), q[1]))
		pgHolder.send(t, "SELECT pg_advisory_unlock(7);")
		tb.until("PostgreSQL's hand-off beside a dead etcd", dashHolds(dashRow("postgres", "advisory/7"), pw))
		if n := eval[int](tb, `document.querySelectorAll('#services li:not([data-service=etcd]) .service-err').length`); n != 0 {
			t.Errorf("another service shows an error beside the dead etcd: %s", eval[string](tb, `document.getElementById('services').textContent`))
		}
		zkNext.lock.Unlock()

		if err := etcd.Start(t.Context()); err != nil {
			t.Fatalf("restart etcd: %v", err)
		}
		tb.until("etcd's error cleared once it is back", `!`+etcdErr+` && `+dashRow("etcd", etcdLock)+`.dataset.connection === 'connected'`)
	})

	t.Run("wrong PostgreSQL password", func(t *testing.T) {
		zkHolder := takeLock(t, zkPath, "bad-pw-first")
		if err := <-zkHolder.got; err != nil {
			t.Fatal(err)
		}
		zkNext := takeLock(t, zkPath, "bad-pw-next")
		q := zkQueued(t, admin, zkPath, 2)
		const etcdLock2 = "/e2e/errors/billing"
		etcdHolder := etcdctlLock(t, etcd, cli, etcdLock2, 30)
		etcdctlLock(t, etcd, cli, etcdLock2, 30)
		ek := etcdQueue(t, cli, etcdLock2)

		srv := startServer(t, "--etcd", etcd.Endpoint(), "--postgres", vizDSN, "--postgres-password", "not-viz-pw-52", "--poll", "200ms",
			"--watch", zkPath, "--watch", "etcd:"+etcdLock2, "--watch", "postgres:advisory/8")
		tb := newTab(t)
		tb.open(srv.URL + "/")
		start := time.Now()
		pgErr := `document.querySelector('#services li[data-service=postgres] .service-err')`
		wrong := "postgres " + pg.Addr() + ": wrong password for role viz"
		tb.until("PostgreSQL's error on the dashboard", pgErr+` && `+pgErr+`.textContent.includes(`+jsString(wrong)+`) && `+pgErr+`.textContent.includes('--postgres-password')`)
		t.Logf("PostgreSQL's error showed %v after the dashboard opened: %s", time.Since(start).Round(100*time.Millisecond), eval[string](tb, pgErr+`.textContent`))
		if log := srv.out.String(); !strings.Contains(log, wrong) {
			t.Errorf("the log does not have %q:\n%s", wrong, log)
		}
		if txt := eval[string](tb, `document.body.innerText`); strings.Contains(txt, "not-viz-pw-52") {
			t.Error("the dashboard shows the password")
		}
		tb.until("PostgreSQL's lock marked not live", dashRow("postgres", "advisory/8")+` && `+dashRow("postgres", "advisory/8")+`.dataset.connection !== 'connected'`)

		tb.until("etcd's lock, read", dashRow("etcd", etcdLock2)+` && `+dashHolds(dashRow("etcd", etcdLock2), ek[0]))
		if err := etcdHolder.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		tb.until("etcd's hand-off beside a refused PostgreSQL", dashHolds(dashRow("etcd", etcdLock2), ek[1]))
		if err := zkHolder.lock.Unlock(); err != nil {
			t.Fatal(err)
		}
		if err := <-zkNext.got; err != nil {
			t.Fatal(err)
		}
		tb.until("ZooKeeper's hand-off beside a refused PostgreSQL", dashHolds(dashRow("zookeeper", zkPath), q[1]))
		zkNext.lock.Unlock()
		if strings.Contains(srv.out.String(), "not-viz-pw-52") {
			t.Error("the log shows the password")
		}
	})
}

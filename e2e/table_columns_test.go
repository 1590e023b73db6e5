package e2e

import (
	"net/url"
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/postgres/pglocal/pgtest"
	"github.com/zklockviz/zklockviz/redis/redislocal/redistest"
)

// Each service's queue table has its own columns under its own words:
// ZooKeeper's watches, edge and session; etcd's create revision and lease;
// PostgreSQL's pid and the blockers the server reports; Redis's token and
// the key's TTL left. No service shows another's empty columns.
func TestQueueTableColumnsPerService(t *testing.T) {
	need(t)
	etcd, cli := liveEtcd(t)
	pg := pgtest.ForTest(t)
	const (
		zkPath   = "/e2e/columns/orders"
		etcdLock = "/e2e/columns/orders"
		pgLock   = "advisory/43"
		redisKey = "e2e-columns-orders"
	)
	ensurePath(t, connect(t), zkPath)
	zkHolder := takeLock(t, zkPath, "zk-holder")
	if err := <-zkHolder.got; err != nil {
		t.Fatal(err)
	}
	etcdctlLock(t, etcd, cli, etcdLock, 30)
	etcdctlLock(t, etcd, cli, etcdLock, 30)
	ek := etcdQueue(t, cli, etcdLock)
	psql(t, pg.DSN(), "col-holder", "SELECT pg_advisory_lock(43);")
	ph := pgNode(t, pg.DSN(), "col-holder", false)
	psql(t, pg.DSN(), "col-waiter", "SELECT pg_advisory_lock(43);")
	pw := pgNode(t, pg.DSN(), "col-waiter", true)
	m := redistest.ForTest(t)
	redisCLI(t, m.Addr(), "SET", redisKey, "tok-A", "NX", "PX", "600000")
	srv := startServer(t, "--etcd", etcd.Endpoint(), "--postgres", pg.DSN(), "--redis", m.Addr(), "--poll", "200ms",
		"--watch", zkPath, "--watch", "etcd:"+etcdLock, "--watch", "postgres:"+pgLock, "--watch", "redis:"+redisKey)
	tb := newTab(t)
	const heads = `[...document.querySelectorAll('#table thead th')].map(th => th.textContent).join('|')`
	// cell is the text of row's cell under the header head.
	cell := func(row, head string) string {
		return `(() => { const hs = [...document.querySelectorAll('#table thead th')].map(th => th.textContent); const i = hs.indexOf(` + jsString(head) +
			`); const r = document.querySelector('#table tbody tr[data-row=' + JSON.stringify(` + jsString(row) + `) + ']'); return i < 0 || !r ? null : r.cells[i].textContent.trim(); })()`
	}
	for _, tc := range []struct {
		service, name, page string
		heads               []string
		cells               map[[2]string]string // {row, head}: the cell's text begins so
	}{
		{"zookeeper", zkPath, srv.URL + "/lock?path=" + url.QueryEscape(zkPath),
			[]string{"#", "node", "mode", "state", "waits for", "watches", "edge", "session", "data", "time", "alerts"}, nil},
		{"etcd", etcdLock, lockPage(srv.URL, "etcd", etcdLock),
			[]string{"#", "node", "mode", "state", "waits for", "create revision", "lease", "data", "time", "alerts"},
			map[[2]string]string{{ek[1], "lease"}: ek[1], {ek[1], "waits for"}: ek[0]}},
		{"postgres", pgLock, lockPage(srv.URL, "postgres", pgLock),
			[]string{"#", "node", "mode", "state", "waits for", "pid", "blocked by", "data", "time", "alerts"},
			map[[2]string]string{{pw, "pid"}: strings.TrimPrefix(pw, "pid-"), {pw, "blocked by"}: ph}},
		{"redis", redisKey, lockPage(srv.URL, "redis", redisKey),
			[]string{"#", "node", "mode", "state", "waits for", "token", "TTL left", "data", "time", "alerts"},
			map[[2]string]string{{"tok-A", "token"}: "tok-A", {"tok-A", "TTL left"}: "9m"}},
	} {
		tb.open(tc.page)
		tb.until(tc.service+": the table's rows", `document.querySelectorAll('#table tbody tr[data-row]').length > 0`)
		if got, want := eval[string](tb, heads), strings.Join(tc.heads, "|"); got != want {
			t.Errorf("%s's table has the columns\n  %s\nwant\n  %s", tc.service, got, want)
		}
		if n := eval[int](tb, `[...document.querySelectorAll('#table tbody tr')].filter(r => r.cells.length !== document.querySelectorAll('#table thead th').length).length`); n != 0 {
			t.Errorf("%s: %d rows with a cell count other than the header's", tc.service, n)
		}
		for k, want := range tc.cells {
			tb.until(tc.service+": "+k[0]+"'s "+k[1]+" is "+want, `(`+cell(k[0], k[1])+` || '').startsWith(`+jsString(want)+`)`)
		}
	}
}

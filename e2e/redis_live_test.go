package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/redis/redislocal/redistest"
)

// redisCLI runs redis-cli, a third-party client, against addr.
func redisCLI(t *testing.T, addr string, args ...string) {
	t.Helper()
	host, port, _ := strings.Cut(addr, ":")
	if out, err := exec.Command("redis-cli", append([]string{"-h", host, "-p", port}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli %v: %v\n%s", args, err, out)
	}
}

// A Redlock on three real Redis masters, in the browser, through the serve
// binary: redis-cli holders on every master; the dashboard lists the lock
// with its Redis badge; the lock page draws the holder with its time left
// counting down, says that spin-lock waiters leave no trace, follows a
// hand-off live and shows the no-expiry alert.
func TestRedisLockLive(t *testing.T) {
	need(t)
	masters := redistest.NForTest(t, 3)
	var args []string
	for _, m := range masters {
		args = append(args, "--redis", m.Addr())
		redisCLI(t, m.Addr(), "SET", "orders-lock", "tok-A", "NX", "PX", "600000")
	}
	srv := startServer(t, append(args, "--poll", "200ms", "--watch", "redis:orders-lock")...)
	tb := newTab(t)

	tb.open(srv.URL + "/")
	row := `document.querySelector('tr[data-lock="orders-lock"][data-service="redis"]')`
	tb.until("the Redis lock on the dashboard, with its badge", row+` && `+row+`.querySelector('.svc').textContent === 'Redis'`)

	tb.open(srv.URL + "/lock?service=redis&path=orders-lock")
	tb.until("tok-A holds, live", node("tok-A", "holding")+` && document.body.dataset.live === 'true'`)
	tb.until("the note that spin-lock waiters leave no trace",
		`(document.querySelector('[data-stat=note]') || {textContent: ''}).textContent.includes('leave no trace')`)
	leftRow := `document.querySelector('#table tr[data-row="tok-A"] td.lease')`
	tb.until("tok-A's time left", leftRow+` && /\d+s left/.test(`+leftRow+`.textContent)`)
	tb.until("the breakdown per master", `document.querySelector('#table tr[data-row="tok-A"]').textContent.includes('holds 3 of 3 masters')`)

	for _, m := range masters {
		redisCLI(t, m.Addr(), "DEL", "orders-lock")
		redisCLI(t, m.Addr(), "SET", "orders-lock", "tok-B", "NX")
	}
	tb.until("tok-B holds after the hand-off", node("tok-B", "holding")+` && `+nodeCount(1))
	tb.until("the no-expiry alert", `document.querySelector('#alerts li[data-kind="no-expiry"]')`)

	// Released everywhere: a free lock in Redis's words, not ZooKeeper's
	// missing lock parent.
	for _, m := range masters {
		redisCLI(t, m.Addr(), "DEL", "orders-lock")
	}
	tb.until("the free lock, in Redis's words", nodeCount(0)+` && (document.querySelector('[data-stat=missing]') || {}).textContent === 'free: no key'`)
}

// A wrong Redis password shows on the dashboard, naming redis, the
// master's address and what to check.
func TestRedisErrorOnDashboard(t *testing.T) {
	need(t)
	m := redistest.ForTest(t)
	redisCLI(t, m.Addr(), "ACL", "SETUSER", "viewer", "on", ">right", "~*", "-@all", "+ping", "+type", "+pttl", "+get")
	srv := startServer(t, "--poll", "200ms", "--redis", m.Addr(), "--redis-user", "viewer", "--redis-password", "wrong",
		"--watch", "redis:orders-lock")
	tb := newTab(t)
	tb.open(srv.URL + "/")
	tb.until("the Redis reader's error", `[...document.querySelectorAll('#services li[data-service=redis] .service-err')].some(e => `+
		`e.textContent.includes('redis `+m.Addr()+`') && e.textContent.includes('WRONGPASS') && e.textContent.includes('--redis-password'))`)
}

// A Redis killed under a key without expiry, in the browser: the page
// keeps drawing the holder, says the state is unknown since the outage
// began (in the stat line and on the lane's lock bar), never free, and
// keeps the no-expiry alert. Restarted without persistence, the page
// says the restart lost the key while its owner may still believe it
// holds.
func TestRedisOutageInBrowser(t *testing.T) {
	need(t)
	m := redistest.ForTest(t)
	redisCLI(t, m.Addr(), "SET", "orders-lock", "tok-A", "NX")
	srv := startServer(t, "--poll", "200ms", "--redis", m.Addr(), "--watch", "redis:orders-lock")
	tb := newTab(t)
	tb.open(srv.URL + "/lock?service=redis&path=orders-lock")
	tb.until("tok-A holds, live, with no expiry", node("tok-A", "holding")+` && document.body.dataset.live === 'true' && `+
		`document.querySelector('#alerts li[data-kind="no-expiry"]')`)

	if err := m.Kill(); err != nil {
		t.Fatal(err)
	}
	missing := `(document.querySelector('[data-stat=missing]') || {textContent: ''}).textContent`
	bar := `(document.querySelector('#lane g.parent text') || {textContent: ''}).textContent`
	tb.until("the last known state, unknown since the outage", `document.body.dataset.live === 'false' && `+
		node("tok-A", "holding")+` && `+missing+`.startsWith('unknown since') && `+bar+`.includes('(unknown')`)
	time.Sleep(2 * time.Second) // ten polls of a dead server
	if free := eval[bool](tb, `document.querySelector('main').textContent.includes('free') || `+bar+`.includes('does not exist') || !`+node("tok-A", "holding")+
		` || !document.querySelector('#alerts li[data-kind="no-expiry"]')`); free {
		t.Errorf("with Redis down the page shows the lock free or lost its holder or alert:\n%s", eval[string](tb, `document.querySelector('main').textContent`))
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	tb.until("the loss in the restart told", `document.body.dataset.live === 'true' && `+nodeCount(0)+` && `+
		`[...document.querySelectorAll('#alerts li[data-kind="lost-in-restart"]')].some(a => a.textContent.includes('may still believe it holds'))`)
}

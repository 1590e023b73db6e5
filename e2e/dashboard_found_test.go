package e2e

import (
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/zklockviz/zklockviz/postgres/pglocal/pgtest"
	"github.com/zklockviz/zklockviz/redis/redislocal/redistest"
)

// redisLockScript is Redisson's lock script (RedissonLock.tryLockInnerAsync):
// KEYS[1] the lock, ARGV[1] the lease in ms, ARGV[2] "<client id>:<thread>".
const redisLockScript = `if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then ` +
	`redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; ` +
	`return redis.call('pttl', KEYS[1]);`

// redisWaiter is a Redisson waiter as the server sees it: a redis-cli
// subscribed to the lock's unlock channel until the returned stop.
func redisWaiter(t *testing.T, addr, lock string) (stop func()) {
	t.Helper()
	host, port, _ := strings.Cut(addr, ":")
	cmd := exec.Command("redis-cli", "-h", host, "-p", port, "SUBSCRIBE", "redisson_lock__channel:{"+lock+"}")
	if err := cmd.Start(); err != nil {
		t.Fatalf("redis-cli SUBSCRIBE: %v", err)
	}
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cmd.Process.Kill()
			cmd.Wait()
		}
	}
	t.Cleanup(stop)
	return stop
}

// Locks nobody named, found by serve --watch-under postgres:advisory and
// --watch-under redis:lock:*, on the paged dashboard as ZooKeeper's are
// (TestDashboardPaged): psql sessions hold 21 advisory locks, one of them
// idle in its transaction (an alert), and wait on two; redis-cli sets 16
// string locks, one without expiry (an alert), and a Redisson lock with a
// subscribed waiter. The dashboard opens on the totals and the locks that
// need a look (the alerts, then the waits from the longest), pages 25 at
// a time as the API does, finds a lock by a search, and follows a release
// and the end of a wait without a reload.
func TestDashboardFoundLocks(t *testing.T) {
	need(t)
	pg := pgtest.ForTest(t)
	m := redistest.ForTest(t).Addr()

	// Held before serve starts, found by its first poll and walk.
	psql(t, pg.DSN(), "found-many", "SELECT pg_advisory_lock(k) FROM generate_series(1, 20) k;")
	idle := psql(t, pg.DSN(), "found-idle", "BEGIN; SELECT pg_advisory_xact_lock(500);")
	waitUntil(t, "21 advisory locks held", func() bool {
		return pgQuery(t, pg.DSN(), "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted") == "21"
	})
	for i := 1; i <= 15; i++ {
		redisCLI(t, m, "SET", fmt.Sprintf("lock:order-%02d", i), fmt.Sprintf("tok-%02d", i), "NX", "PX", "600000")
	}
	redisCLI(t, m, "SET", "lock:forever", "tok-F", "NX")
	redisCLI(t, m, "SET", "cache:orders", "not matched by the pattern")
	redisCLI(t, m, "EVAL", redisLockScript, "1", "lock:job", "600000", "8c1e6f4a-1b2c-4d5e-9f00-aabbccddeeff:57")

	srv := startServerOn(t, nil, "--postgres", pg.DSN(), "--redis", m, "--poll", "200ms",
		"--watch-under", "postgres:advisory", "--watch-under", "redis:lock:*",
		"--postgres-idle-alert", "1s", "--postgres-long-wait", "1h")
	tb := newTab(t)
	tb.open(srv.URL + "/")
	total := func(state string) string {
		return fmt.Sprintf(`Number(document.querySelector('#totals [data-total=%s]').dataset.count)`, state)
	}
	totals := func(locks, held, contended, alerting int) string {
		return fmt.Sprintf(`%s === %d && %s === %d && %s === %d && %s === %d`,
			total("all"), locks, total("held"), held, total("contended"), contended, total("alerting"), alerting)
	}
	rows := `[...document.querySelectorAll('#locks-body tr[data-lock]')].map(r => r.dataset.lock)`
	tb.until("every lock found: 38, all held, 2 with an alert", totals(38, 38, 0, 2))

	// The waits begin one after another, a second apart, with serve
	// watching: the longest is advisory/3's, then lock:job's, then
	// advisory/7's.
	psql(t, pg.DSN(), "found-wait-3", "SELECT pg_advisory_lock(3);")
	pgNode(t, pg.DSN(), "found-wait-3", true)
	tb.until("advisory/3 waited on", total("contended")+` === 1`)
	time.Sleep(time.Second)
	stopJobWaiter := redisWaiter(t, m, "lock:job")
	tb.until("lock:job waited on", total("contended")+` === 2`)
	time.Sleep(time.Second)
	psql(t, pg.DSN(), "found-wait-7", "SELECT pg_advisory_lock(7);")
	pgNode(t, pg.DSN(), "found-wait-7", true)
	tb.until("totals: 38 locks, 38 held, 3 with waiters, 2 with an alert", totals(38, 38, 3, 2))

	// The locks that need a look: the alerts (one each; by key between
	// them), then the waits, the longest first.
	look := []string{"advisory/500", "lock:forever", "advisory/3", "lock:job", "advisory/7"}
	tb.until("the alerts, then the longest waits", rows+`.slice(0, 5).join(' ') === `+jsString(strings.Join(look, " ")))
	for _, tc := range []struct{ lock, service, alert string }{
		{"advisory/500", "postgres", "idle-in-transaction"},
		{"lock:forever", "redis", "no-expiry"},
	} {
		if got := eval[string](tb, dashRow(tc.service, tc.lock)+`.cells[5].textContent`); !strings.Contains(got, tc.alert) {
			t.Errorf("%s's alerts %q, want %s", tc.lock, got, tc.alert)
		}
	}
	// PostgreSQL says when a wait began; of a Redisson waiter, only that
	// it waited when first seen.
	for _, l := range []struct{ lock, service, since string }{
		{"advisory/3", "postgres", ""}, {"lock:job", "redis", "≥ "}, {"advisory/7", "postgres", ""},
	} {
		row := dashRow(l.service, l.lock)
		got := eval[[]string](tb, `[`+row+`.cells[3].textContent.trim(), `+row+`.cells[4].textContent.trim()]`)
		if got[0] != "1" || !regexp.MustCompile(`^`+l.since+`\d`).MatchString(got[1]) {
			t.Errorf("%s shows %q waiting, oldest wait %q: want 1 and its wait, %q a bound", l.lock, got[0], got[1], l.since)
		}
	}

	// 25 a page, as the API pages them; the next page is the 13 after.
	tb.run(`{ const s = document.getElementById('lock-limit'); s.value = '25'; s.dispatchEvent(new Event('change', {bubbles: true})); }`)
	tb.until("25 rows", rows+`.length === 25 && document.getElementById('page-range').textContent === '1–25 of 38'`)
	api := func(cursor string) []string {
		return evalAwait[[]string](tb, `fetch('/api/v1/locks?sort=alerts&limit=25&cursor=`+cursor+`').then(r => r.json()).then(j => j.locks.map(l => l.path))`)
	}
	first := eval[[]string](tb, rows)
	if want := api(""); strings.Join(first, " ") != strings.Join(want, " ") {
		t.Errorf("first page %v, the API's %v", first, want)
	}
	next := eval[string](tb, `document.getElementById('page-next').dataset.cursor`)
	tb.click("next page", "#page-next")
	tb.until("the next 13", rows+`.length === 13 && document.getElementById('page-range').textContent === '26–38 of 38'`)
	second := eval[[]string](tb, rows)
	if want := api(next); strings.Join(second, " ") != strings.Join(want, " ") {
		t.Errorf("second page %v, the API's %v", second, want)
	}
	seen := map[string]bool{}
	for _, l := range append(append([]string{}, first...), second...) {
		if seen[l] {
			t.Errorf("%s on both pages", l)
		}
		seen[l] = true
	}
	if seen["cache:orders"] {
		t.Errorf("cache:orders, outside the pattern, is listed")
	}
	tb.click("previous page", "#page-prev")
	tb.until("back to the first", rows+`.join(' ') === `+jsString(strings.Join(first, " ")))
	tb.run(`window.__samePage = true`)

	// The search finds a found lock, in any case.
	tb.key("/")
	tb.until("search focused", `document.activeElement === document.getElementById('lock-q')`)
	tb.run(`document.getElementById('lock-q').value = ''`) // the "/" typed as a character too
	tb.do("type a search", chromedp.SendKeys(chromedp.CSS("#lock-q"), "LOCK:ORDER-1"))
	orders := []string{"lock:order-10", "lock:order-11", "lock:order-12", "lock:order-13", "lock:order-14", "lock:order-15"}
	tb.until("six matches", rows+`.sort().join(' ') === `+jsString(strings.Join(orders, " "))+` && document.getElementById('page-range').textContent === '1–6 of 6'`)

	// Live, without a reload: a found key deleted leaves the search's rows
	// and the totals.
	redisCLI(t, m, "DEL", "lock:order-12")
	tb.until("lock:order-12 gone", rows+`.length === 5 && !`+rows+`.includes('lock:order-12') && `+totals(37, 37, 3, 2))
	tb.run(`{ const q = document.getElementById('lock-q'); q.value = ''; q.dispatchEvent(new Event('input', {bubbles: true})); }`)
	tb.until("the search cleared", rows+`.length === 25 && document.getElementById('page-range').textContent === '1–25 of 37'`)

	// The longest wait ends (the session gives up): lock:job's is the
	// longest now; then lock:job's waiter goes, and advisory/7 is the
	// one lock waited on.
	waiter3 := pgQuery(t, pg.DSN(), "SELECT pid FROM pg_stat_activity WHERE application_name = 'found-wait-3'")
	pgQuery(t, pg.DSN(), "SELECT pg_terminate_backend("+waiter3+")")
	tb.until("advisory/3 no longer waited on", totals(37, 37, 2, 2)+` && `+rows+`.slice(0, 4).join(' ') === `+
		jsString("advisory/500 lock:forever lock:job advisory/7"))
	stopJobWaiter()
	tb.until("lock:job no longer waited on", totals(37, 37, 1, 2)+` && `+rows+`.slice(0, 3).join(' ') === `+
		jsString("advisory/500 lock:forever advisory/7"))
	// The idle transaction commits: its lock and its alert go.
	idle.send(t, "COMMIT;")
	tb.until("advisory/500 released", totals(36, 36, 1, 1)+` && `+rows+`.slice(0, 2).join(' ') === `+jsString("lock:forever advisory/7")+
		` && !`+rows+`.includes('advisory/500')`)
	if !eval[bool](tb, `window.__samePage === true`) {
		t.Error("the dashboard reloaded")
	}
}

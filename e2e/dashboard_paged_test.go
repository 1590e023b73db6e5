package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/zklockviz/zklockviz/hub"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/lockservice"
	"github.com/zklockviz/zklockviz/third_party/zk"
	"github.com/zklockviz/zklockviz/web"
	"github.com/zklockviz/zklockviz/zookeeper"
)

// fleetRuns numbers the fleets made in this process: their persistent
// parents outlive a test on the package's one ZooKeeper.
var fleetRuns atomic.Int32

// lockFleet is lock parents under one prefix, made by real clients:
// go-zookeeper lock nodes, ephemeral and sequential, the holders' of the
// session holders, the waiters' of the session waiters.
type lockFleet struct {
	base             string
	holders, waiters *zk.Conn
	// made are the nodes made under each parent, holders' first.
	made map[int][]string
}

func (f *lockFleet) parent(i int) string { return fmt.Sprintf("%s/order-%06d", f.base, i) }

// node is a go-zookeeper lock node request under parent.
func (f *lockFleet) node(parent string, i int, flags int32) *zk.CreateRequest {
	return &zk.CreateRequest{Path: fmt.Sprintf("%s/_c_%032x-lock-", parent, i), Data: []byte("worker"), Acl: zk.WorldACL(zk.PermAll), Flags: flags}
}

// newFleet makes parents lock parents under a fresh prefix, then under
// parent i the holders' nodes holding(i), then the waiters' waiting(i).
// Requests go 500 to a multi.
func newFleet(tb testing.TB, name string, parents int, holding, waiting func(f *lockFleet, i int) []*zk.CreateRequest) *lockFleet {
	tb.Helper()
	f := &lockFleet{base: fmt.Sprintf("/e2e/%s-%d-%d", name, os.Getpid(), fleetRuns.Add(1)), holders: connect(tb), waiters: connect(tb), made: map[int][]string{}}
	ensurePath(tb, f.holders, f.base)
	var ops []any
	var of []int // the parent of each op
	flush := func(c *zk.Conn) {
		if len(ops) == 0 {
			return
		}
		res, err := c.Multi(ops...)
		if err != nil {
			tb.Fatalf("make the fleet under %s: %v", f.base, err)
		}
		for k, r := range res {
			if of[k] >= 0 {
				f.made[of[k]] = append(f.made[of[k]], r.String)
			}
		}
		ops, of = ops[:0], of[:0]
	}
	add := func(c *zk.Conn, i int, op any) {
		ops, of = append(ops, op), append(of, i)
		if len(ops) == 500 {
			flush(c)
		}
	}
	for i := range parents {
		add(f.holders, -1, &zk.CreateRequest{Path: f.parent(i), Acl: zk.WorldACL(zk.PermAll)})
	}
	flush(f.holders)
	for _, step := range []struct {
		c     *zk.Conn
		nodes func(f *lockFleet, i int) []*zk.CreateRequest
	}{{f.holders, holding}, {f.waiters, waiting}} {
		for i := range parents {
			for _, n := range step.nodes(f, i) {
				add(step.c, i, n)
			}
		}
		flush(step.c)
	}
	return f
}

// The dashboard of 40 locks opens on the totals and the locks that need a
// look (the one with an alert first), pages 25 at a time, filters by a
// search typed after "/", and shows a new waiter live, with the search and
// the page kept.
func TestDashboardPaged(t *testing.T) {
	need(t)
	const parents = 80 // the even ones held: 40 locks; every fourth with a waiter
	f := newFleet(t, "paged", parents, func(f *lockFleet, i int) []*zk.CreateRequest {
		if i%2 == 1 {
			return nil // an empty folder: no lock yet
		}
		holder := f.node(f.parent(i), 2*i, zk.FlagEphemeral|zk.FlagSequence)
		if i == 6 {
			holder.Flags = zk.FlagSequence // a persistent lock node: an alert
		}
		return []*zk.CreateRequest{holder}
	}, func(f *lockFleet, i int) []*zk.CreateRequest {
		if i%4 != 0 {
			return nil
		}
		return []*zk.CreateRequest{f.node(f.parent(i), 2*i+1, zk.FlagEphemeral|zk.FlagSequence)}
	})
	// Each waiter watches its holder, as go-zookeeper's Lock does: no
	// alert but the persistent node's.
	for i := 0; i < parents; i += 4 {
		if _, _, _, err := f.waiters.ExistsW(f.made[i][0]); err != nil {
			t.Fatal(err)
		}
	}
	srv := startServer(t, "--watch-under", f.base)
	tb := newTab(t)
	tb.open(srv.URL + "/")
	total := func(state string) string {
		return fmt.Sprintf(`Number(document.querySelector('#totals [data-total=%s]').dataset.count)`, state)
	}
	rows := `[...document.querySelectorAll('#locks-body tr[data-lock]')].map(r => r.dataset.lock)`
	tb.until("totals: 40 locks, 40 held, 20 with waiters, 1 with an alert",
		total("all")+` === 40 && `+total("held")+` === 40 && `+total("contended")+` === 20 && `+total("alerting")+` === 1`)
	tb.until("the lock with an alert first", rows+`[0] === `+jsString(f.parent(6)))
	if got := eval[string](tb, `document.querySelector('#locks-body tr').cells[5].textContent`); !strings.Contains(got, "persistent-node") {
		t.Errorf("first row's alerts %q, want persistent-node", got)
	}
	// Then the longest waits: the 20 locks with a waiter.
	var contended []string
	for i := 0; i < parents; i += 4 {
		contended = append(contended, f.parent(i))
	}
	if got := eval[[]string](tb, rows+`.slice(1, 21).sort()`); strings.Join(got, " ") != strings.Join(contended, " ") {
		t.Errorf("after the alert, rows %v; want the 20 with a waiter: %v", got, contended)
	}

	// 25 a page: the first page, then the next shows the 15 after.
	tb.run(`{ const s = document.getElementById('lock-limit'); s.value = '25'; s.dispatchEvent(new Event('change', {bubbles: true})); }`)
	tb.until("25 rows", rows+`.length === 25 && document.getElementById('page-range').textContent === '1–25 of 40'`)
	first := eval[[]string](tb, rows)
	api := func(cursor string) []string {
		return evalAwait[[]string](tb, `fetch('/api/v1/locks?sort=alerts&limit=25&cursor=`+cursor+`').then(r => r.json()).then(j => j.locks.map(l => l.path))`)
	}
	if want := api(""); strings.Join(first, " ") != strings.Join(want, " ") {
		t.Errorf("first page %v, the API's %v", first, want)
	}
	next := eval[string](tb, `document.getElementById('page-next').dataset.cursor`)
	tb.click("next page", "#page-next")
	tb.until("the next 15", rows+`.length === 15 && document.getElementById('page-range').textContent === '26–40 of 40' && location.search.includes('cursor=')`)
	if got, want := eval[[]string](tb, rows), api(next); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("second page %v, the API's %v", got, want)
	}
	if seen := strings.Join(first, " "); strings.Contains(seen, eval[[]string](tb, rows)[0]) {
		t.Errorf("the second page repeats %s of the first", eval[[]string](tb, rows)[0])
	}
	tb.click("previous page", "#page-prev")
	tb.until("back to the first", rows+`.join(' ') === `+jsString(strings.Join(first, " ")))

	// "/" goes to the search; what is typed filters, in any case.
	tb.key("/")
	tb.until("search focused", `document.activeElement === document.getElementById('lock-q')`)
	// The DevTools protocol sends the key's character as an event of its
	// own, which the page's preventDefault on keydown cannot stop as it
	// stops a typed one: take it out again.
	tb.run(`document.getElementById('lock-q').value = ''`)
	tb.do("type a search", chromedp.SendKeys(chromedp.CSS("#lock-q"), "ORDER-00001"))
	want := []string{f.parent(10), f.parent(12), f.parent(14), f.parent(16), f.parent(18)}
	tb.until("five matches", rows+`.sort().join(' ') === `+jsString(strings.Join(want, " "))+` && location.search.includes('q=ORDER-00001')`)
	tb.until("the totals stay all locks'", total("all")+` === 40 && document.getElementById('page-range').textContent === '1–5 of 5'`)

	// A waiter queues on order-000010: the row and the totals show it, and
	// the search and page size stay.
	row := fmt.Sprintf(`document.querySelector('tr[data-lock=%s]')`, jsString(f.parent(10)))
	if got := eval[string](tb, row+`.cells[3].textContent.trim()`); got != "0" {
		t.Fatalf("order-000010 shows %s waiting before any waits", got)
	}
	w, err := f.waiters.Create(f.node(f.parent(10), 999, 0).Path, nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := f.waiters.ExistsW(f.made[10][0]); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s waits", w)
	tb.until("the new waiter live", row+`.cells[3].textContent.trim() === '1' && `+total("contended")+` === 21`)
	tb.until("still the search's five", rows+`.length === 5 && location.search.includes('limit=25')`)
}

// BenchmarkDashboardFirstRow opens the dashboard of a fleet in headless
// Chromium, the server warm, and reports the milliseconds from navigation
// start to the first lock row drawn (ms/first-row: dashboard.js's mark
// after the first frame that has it) and to the first contentful paint
// (ms/fcp, 0 where headless Chromium does not report it), checking the
// totals on every load. The fleet is ZKLOCKVIZ_BENCH_PARENTS lock
// parents (default 100,000) under one --watch-under prefix, of which
// ZKLOCKVIZ_BENCH_HELD (default 10,000) are held with one waiter each, the
// rest empty.
//
//	CI=true go test ./e2e -run '^$' -bench DashboardFirstRow -benchtime 5x -timeout 30m
func BenchmarkDashboardFirstRow(b *testing.B) {
	need(b)
	parents, held := envInt(b, "ZKLOCKVIZ_BENCH_PARENTS", 100_000), envInt(b, "ZKLOCKVIZ_BENCH_HELD", 10_000)
	every := max(parents/max(held, 1), 1)
	isHeld := func(i int) bool { return i%every == 0 && i/every < held }
	f := newFleet(b, "fleet", parents, func(f *lockFleet, i int) []*zk.CreateRequest {
		if !isHeld(i) {
			return nil
		}
		return []*zk.CreateRequest{f.node(f.parent(i), 2*i, zk.FlagEphemeral|zk.FlagSequence)}
	}, func(f *lockFleet, i int) []*zk.CreateRequest {
		if !isHeld(i) {
			return nil
		}
		return []*zk.CreateRequest{f.node(f.parent(i), 2*i+1, zk.FlagEphemeral|zk.FlagSequence)}
	})
	start := time.Now()
	srv := startServer(b, "--watch-under", f.base)
	// Every held lock found and read: the benchmark measures the page, not
	// discovery, which has a benchmark of its own.
	deadline := time.Now().Add(15 * time.Minute)
	for {
		got, err := heldListed(srv.URL)
		if err == nil && got == held {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("after %s the server lists %d of the %d held locks under %s (%v)", time.Since(start).Round(time.Second), got, held, f.base, err)
		}
		time.Sleep(time.Second)
	}
	b.Logf("%d parents, %d held: every held lock listed %s after the server started", parents, held, time.Since(start).Round(100*time.Millisecond))
	tb := newTab(b)

	var firstRow, fcp float64
	for b.Loop() {
		tb.open(srv.URL + "/")
		tb.until("a lock row drawn", `document.body.dataset.firstRow`)
		firstRow += eval[float64](tb, `Number(document.body.dataset.firstRow)`)
		fcp += eval[float64](tb, `(performance.getEntriesByName('first-contentful-paint')[0] || {startTime: 0}).startTime`)
		if got := eval[int](tb, `Number(document.querySelector('#totals [data-total=held]').dataset.count)`); got != held {
			b.Fatalf("the dashboard's total of held locks is %d, want %d", got, held)
		}
	}
	b.ReportMetric(firstRow/float64(b.N), "ms/first-row")
	b.ReportMetric(fcp/float64(b.N), "ms/fcp")
	b.ReportMetric(0, "ns/op")
}

// heldListed is the server's total of held locks.
func heldListed(base string) (int, error) {
	resp, err := http.Get(base + "/api/v1/locks?limit=1")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var list struct {
		Totals struct{ Held int }
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return 0, fmt.Errorf("GET /api/v1/locks: %s: %w", resp.Status, err)
	}
	return list.Totals.Held, nil
}

func envInt(b *testing.B, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive whole number", name, s)
	}
	return n
}

// BenchmarkDashboardFirstRowHub is BenchmarkDashboardFirstRow with the
// fleet published straight into a server's hub, as the readers publish it,
// so that it measures the dashboard of ZKLOCKVIZ_BENCH_PARENTS locks
// (default 100,000; ZKLOCKVIZ_BENCH_HELD, default 10,000, held with one
// waiter, the rest empty) whatever discovery finds: the server runs in the
// test's process.
//
//	CI=true go test ./e2e -run '^$' -bench DashboardFirstRowHub -benchtime 5x
func BenchmarkDashboardFirstRowHub(b *testing.B) {
	need(b)
	parents, held := envInt(b, "ZKLOCKVIZ_BENCH_PARENTS", 100_000), envInt(b, "ZKLOCKVIZ_BENCH_HELD", 10_000)
	every := max(parents/max(held, 1), 1)
	h := hub.New()
	now := time.Now()
	for i := range parents {
		var kids []lockqueue.Child
		if i%every == 0 && i/every < held {
			for n := range 2 {
				kids = append(kids, lockqueue.Child{
					Name: lockqueue.SeqName(fmt.Sprintf("_c_%032x-lock-", 2*i+n), int64(n)), Czxid: int64(2*i + n),
					Ctime: now.Add(-time.Duration(parents-i) * time.Millisecond), EphemeralOwner: int64(0x1000 + 2*i + n),
				})
			}
		}
		s := lockqueue.Build(fmt.Sprintf("/locks/order-%06d", i), kids, lockqueue.Options{})
		s.Revision, s.Connection, s.Exists, s.UpdatedAt = int64(i+1), lockqueue.Connected, true, now
		h.Publish(s)
	}
	reg := &lockservice.Registry{}
	if err := reg.Register(zookeeper.Service(nil, nil)); err != nil {
		b.Fatal(err)
	}
	srv, err := web.New(web.Config{Hub: h, Services: reg, Pages: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	b.Cleanup(ts.Close)
	tb := newTab(b)
	var firstRow, fcp float64
	for b.Loop() {
		tb.open(ts.URL + "/")
		tb.until("a lock row drawn", `document.body.dataset.firstRow`)
		firstRow += eval[float64](tb, `Number(document.body.dataset.firstRow)`)
		fcp += eval[float64](tb, `(performance.getEntriesByName('first-contentful-paint')[0] || {startTime: 0}).startTime`)
		if got := eval[[]int](tb, `['all', 'held'].map(s => Number(document.querySelector('#totals [data-total=' + s + ']').dataset.count))`); got[0] != parents || got[1] != held {
			b.Fatalf("the dashboard's totals: %d locks, %d held; want %d and %d", got[0], got[1], parents, held)
		}
	}
	b.ReportMetric(firstRow/float64(b.N), "ms/first-row")
	b.ReportMetric(fcp/float64(b.N), "ms/fcp")
	b.ReportMetric(0, "ns/op")
}

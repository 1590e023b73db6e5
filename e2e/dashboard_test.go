package e2e

import (
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/zklockviz/zklockviz/third_party/zk"
)

// seedClient is one requester of the seeds' read/write lock (seed 000): an
// ephemeral sequential R_ or W_ node in a session of its own, with an exists
// watch on whatever node the test tells it to wait for.
type seedClient struct {
	conn *zk.Conn
	name string
}

func seedRequest(t *testing.T, path, kind, data string) *seedClient {
	t.Helper()
	c := connect(t)
	full, err := c.Create(path+"/"+kind+"_", []byte(data), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatalf("create %s_ under %s: %v", kind, path, err)
	}
	return &seedClient{conn: c, name: full[len(path)+1:]}
}

func (s *seedClient) watch(t *testing.T, path string, target *seedClient) {
	t.Helper()
	if _, _, _, err := s.conn.ExistsW(path + "/" + target.name); err != nil {
		t.Fatalf("exists watch on %s: %v", target.name, err)
	}
}

// The seeds' LOCK1–LOCK5 queue, built by real clients, reads on screen as
// the seed's table says: LOCK1 holds, LOCK2 waits for LOCK1, LOCK3 for
// LOCK2, the readers LOCK4 and LOCK5 for the writer LOCK3. A sixth client
// that watches the wrong node is flagged.
func TestReadWriteLockView(t *testing.T) {
	need(t)
	const path = "/e2e/rw"
	admin := connect(t)
	ensurePath(t, admin, path)
	lock := []*seedClient{
		seedRequest(t, path, "R", "LOCK1"),
		seedRequest(t, path, "W", "LOCK2"),
		seedRequest(t, path, "W", "LOCK3"),
		seedRequest(t, path, "R", "LOCK4"),
		seedRequest(t, path, "R", "LOCK5"),
		seedRequest(t, path, "W", "LOCK6"),
	}
	// Whom each waiter watches: the seed's table for LOCK2–LOCK5; LOCK6 has a
	// bug and watches LOCK4 instead of its predecessor LOCK5. LOCK5 also
	// watches LOCK1: its rule is confirmed, that one watch is not.
	for _, w := range [][2]int{{1, 0}, {2, 1}, {3, 2}, {4, 2}, {4, 0}, {5, 3}} {
		lock[w[0]].watch(t, path, lock[w[1]])
	}
	srv := startServer(t, "--watch", path)
	tb := newTab(t)
	tb.open(srv.URL + "/lock?path=" + path)
	tb.until("six nodes", nodeCount(6))

	tb.until("LOCK1 holds", node(lock[0].name, "holding"))
	for i := 1; i < 6; i++ {
		tb.until(fmt.Sprintf("LOCK%d waits", i+1), node(lock[i].name, "waiting"))
	}
	tests := []struct {
		from, to, kind, edge string
	}{
		{lock[1].name, lock[0].name, "rule", "confirmed"},
		{lock[2].name, lock[1].name, "rule", "confirmed"},
		{lock[3].name, lock[2].name, "rule", "confirmed"},
		{lock[4].name, lock[2].name, "rule", "confirmed"},
		{lock[5].name, lock[4].name, "rule", "unexpected"},
		{lock[1].name, lock[0].name, "actual", "confirmed"},
		{lock[4].name, lock[2].name, "actual", "confirmed"},
		{lock[4].name, lock[0].name, "actual", "unexpected"},
		{lock[5].name, lock[3].name, "actual", "unexpected"},
	}
	for _, tc := range tests {
		tb.until(fmt.Sprintf("%s arrow %s → %s (%s)", tc.kind, tc.from, tc.to, tc.edge),
			arrow(tc.from, tc.to, tc.kind)+` && `+arrow(tc.from, tc.to, tc.kind)+`.dataset.edge === `+jsString(tc.edge))
	}
	// Readers and writers differ in shape, not only colour.
	if got := eval[[]string](tb, `[...document.querySelectorAll('#lane [data-node] .shape')].map(e => e.tagName)`); strings.Join(got, ",") != "circle,rect,rect,circle,circle,rect" {
		t.Errorf("shapes %v: readers should be circles, writers squares", got)
	}
	if got := eval[[]string](tb, `[...document.querySelectorAll('#lane [data-node] .glyph')].map(e => e.textContent)`); strings.Join(got, ",") != "R,W,W,R,R,W" {
		t.Errorf("shape letters %v: want R for a reader, W for a writer", got)
	}

	// Selecting a node shows its details; the URL keeps it.
	tb.click("click LOCK6", fmt.Sprintf(`#lane [data-node=%q]`, lock[5].name))
	tb.until("details", `document.getElementById('details').textContent.includes('LOCK6') && location.search.includes('node=')`)
	tb.screenshot("lock.png")

	// The table has every node; copy-as-text carries the queue as text.
	tb.until("table rows", `document.querySelectorAll('#table tbody tr').length === 6`)
	// Names wrap between their parts (R_ | 0000000001), never mid-part.
	if got := eval[string](tb, `document.querySelector('#table tbody td.name button').innerHTML`); got != "R_<wbr>"+lock[0].name[2:] {
		t.Errorf("table name cell %q, want R_<wbr>%s", got, lock[0].name[2:])
	}
	if got := eval[string](tb, `getComputedStyle(document.querySelector('#table tbody td.name button')).wordBreak`); got == "break-all" {
		t.Error("table names still break anywhere (word-break: break-all)")
	}
	// The text the copy button copies.
	text := evalAwait[string](tb, `fetch('/parts/lock-text?path=`+path+`').then(r => r.text())`)
	for _, want := range []string{path, lock[0].name + "  reader  holding", "unexpected", "LOCK6"} {
		if !strings.Contains(text, want) {
			t.Errorf("copied text lacks %q:\n%s", want, text)
		}
	}

	// LOCK1 leaves: LOCK2 holds.
	lock[0].conn.Close()
	tb.until("LOCK2 holds", node(lock[1].name, "holding"))
}

// dashboardRuns counts TestDashboard's runs in this process.
var dashboardRuns atomic.Int32

// The dashboard lists the watched locks, adds one from its form and says why
// a bad path is refused.
func TestDashboard(t *testing.T) {
	need(t)
	admin := connect(t)
	// The persistent nodes below outlive the test on the package's one
	// ZooKeeper, so a second run (-count=2) gets a folder of its own.
	base := "/e2e/dash"
	if n := dashboardRuns.Add(1); n > 1 {
		base += fmt.Sprint("-", n)
	}
	rw, mutex, added := base+"/orders", base+"/billing", base+"/added"
	for _, p := range []string{rw, mutex, added} {
		ensurePath(t, admin, p)
	}
	r1 := seedRequest(t, rw, "R", "LOCK1")
	seedRequest(t, rw, "W", "LOCK2").watch(t, rw, r1)
	l := takeLock(t, mutex, "billing-1")
	if err := <-l.got; err != nil {
		t.Fatal(err)
	}
	takeLock(t, mutex, "billing-2")
	takeLock(t, mutex, "billing-3")
	// A lock someone left a mess in: a persistent W_ node (it outlives its
	// client) and a child no recipe makes.
	stale := base + "/reports"
	ensurePath(t, admin, stale)
	if _, err := admin.Create(stale+"/W_", []byte("batch-7"), zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Create(stale+"/config", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, "--sim", "--watch", rw, "--watch", mutex, "--watch", stale)

	tb := newTab(t)
	tb.open(srv.URL + "/")
	row := func(p string) string { return fmt.Sprintf(`document.querySelector('tr[data-lock=%s]')`, jsString(p)) }
	tb.until("both locks listed", row(rw)+` && `+row(mutex))
	// The holder as the lane knows it (its data, LOCK1), its node's name in
	// the cell's title.
	tb.until("orders: holder and one waiting", row(rw)+`.cells[2].textContent.includes('LOCK1') && `+row(rw)+`.cells[2].title.includes(`+jsString(r1.name)+`) && `+
		row(rw)+`.cells[3].textContent.trim() === '1'`)
	tb.until("billing: two waiting", row(mutex)+`.cells[3].textContent.trim() === '2'`)
	tb.until("the mess is flagged", row(stale)+`.cells[5].textContent.includes('persistent-node') && `+row(stale)+`.cells[5].textContent.includes('foreign-child')`)
	tb.until("connected", `document.getElementById('ensemble').dataset.state === 'connected'`)

	tb.do("type a path", chromedp.SendKeys(chromedp.CSS("#watch-path"), added), chromedp.Click(chromedp.CSS("#watch-form button[type=submit]")))
	tb.until("watching message", `document.getElementById('watch-msg').textContent.includes('Watching `+added+`')`)
	tb.until("the added lock listed", row(added))

	// The API rightly answers a bad path with 400, and Chromium logs every
	// error status a fetch() gets; no page can keep that out of its console.
	tb.expectConsole(`^error: Failed to load resource: the server responded with a status of 400 \(Bad Request\) \(http://[^/]+/api/v1/watch:1\)$`,
		"a bad path typed on purpose; the 400 is the API's answer")
	tb.do("type a bad path", chromedp.SendKeys(chromedp.CSS("#watch-path"), "/e2e//bad"), chromedp.Click(chromedp.CSS("#watch-form button[type=submit]")))
	tb.until("the refusal says why", `document.getElementById('watch-msg').className === 'error' && document.getElementById('watch-msg').textContent.includes('empty segment')`)

	tb.click("open the lock", fmt.Sprintf(`tr[data-lock=%q] a`, mutex))
	tb.until("lock view", `location.pathname === '/lock' && document.querySelectorAll('#lane [data-node]').length === 3`)
	tb.open(srv.URL + "/")
	tb.until("listed again", row(mutex))
	tb.run(`document.getElementById('watch-msg').textContent = ''`)
	tb.screenshot("dashboard.png")
}

// Two waiters that watch each other (a client bug only the server's watch
// table shows) are drawn as a deadlock; a waiter watching a node that is not
// there is drawn as a dangling watch, one of the cycle's too.
func TestDeadlockAndDanglingWatch(t *testing.T) {
	need(t)
	const path = "/e2e/stuck"
	admin := connect(t)
	ensurePath(t, admin, path)
	w := []*seedClient{
		seedRequest(t, path, "W", "holder"),
		seedRequest(t, path, "W", "a"),
		seedRequest(t, path, "W", "b"),
		seedRequest(t, path, "W", "c"),
	}
	w[1].watch(t, path, w[2])
	w[2].watch(t, path, w[1])
	if _, _, _, err := w[3].conn.ExistsW(path + "/W_0000009999"); err != nil {
		t.Fatal(err)
	}
	// A node of the cycle also watches a node that is gone: that watch is
	// dangling, not a wait of the cycle.
	if _, _, _, err := w[2].conn.ExistsW(path + "/W_0000009998"); err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, "--watch", path)
	tb := newTab(t)
	tb.open(srv.URL + "/lock?path=" + path)
	tb.until("four nodes", nodeCount(4))
	tb.until("deadlock alert", `document.querySelector('#alerts [data-kind=deadlock]')`)
	for _, pair := range [][2]*seedClient{{w[1], w[2]}, {w[2], w[1]}} {
		tb.until("cycle arrow", arrow(pair[0].name, pair[1].name, "actual")+`.dataset.edge === 'deadlock'`)
		tb.until("cycle ring", `document.querySelector(`+jsString(fmt.Sprintf(`#lane [data-node=%q]`, pair[0].name))+`).classList.contains('deadlock')`)
	}
	tb.until("dangling watch", arrow(w[3].name, "W_0000009999", "actual")+`.dataset.edge === 'dangling'`)
	tb.until("a cycle node's dangling watch", arrow(w[2].name, "W_0000009998", "actual")+`.dataset.edge === 'dangling'`)
	tb.until("its ghost", `document.querySelector('#lane [data-ghost="W_0000009999"]')`)
	// The two arcs of the cycle nest, one inside the other, and start below
	// the cycle rings (centre 122 + radius 32), clear of the shapes.
	fw, bw := arrow(w[1].name, w[2].name, "actual"), arrow(w[2].name, w[1].name, "actual")
	if got := eval[string](tb, `(() => { const f = `+fw+`.getBBox(), b = `+bw+`.getBBox(), ring = 122 + 32; return [f.x > b.x, f.x + f.width < b.x + b.width, f.y >= ring, b.y >= ring, b.height > f.height].join(); })()`); got != "true,true,true,true,true" {
		t.Errorf("deadlock arcs: inside left, inside right, below ring ×2, deeper = %s; want all true", got)
	}
	if os.Getenv("ZKLOCKVIZ_SCREENSHOTS") == "1" {
		tb.screenshot("lock-deadlock.png")
	}
	// At a past moment: the cycle's watches, the dangling ones and the
	// alerts, as live.
	checkPastIsLive(t, srv, "zookeeper", path)
}

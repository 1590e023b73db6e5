package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/zklockviz/zklockviz/redis/redislocal/redistest"
	"github.com/zklockviz/zklockviz/third_party/zk"
	"github.com/zklockviz/zklockviz/zookeeper/zklocal/zktest"
)

// The legend is page text that wraps, not a wide drawing shrunk to fit: at
// 1440 px and at a phone's width its labels are as large as the page's small
// print and it stays inside its card.
func TestLegendReadable(t *testing.T) {
	need(t)
	const path = "/e2e/legend"
	admin := connect(t)
	ensurePath(t, admin, path)
	l := takeLock(t, path, "holder")
	if err := <-l.got; err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, "--watch", path)
	tb := newTab(t)
	for _, width := range []int64{1440, 1000, 390} {
		tb.do(fmt.Sprintf("viewport %d", width), chromedp.EmulateViewport(width, 900))
		tb.open(srv.URL + "/lock?path=" + path)
		tb.until("the legend", `document.querySelectorAll('#legend li').length >= 10`)
		// Every label's rendered text height, and how far the legend sticks
		// out of its card.
		got := eval[map[string]float64](tb, `(() => {
			const spans = [...document.querySelectorAll('#legend li span')];
			const card = document.querySelector('.lane-card').getBoundingClientRect();
			const leg = document.getElementById('legend').getBoundingClientRect();
			return {
				minFont: Math.min(...spans.map(s => parseFloat(getComputedStyle(s).fontSize))),
				minHeight: Math.min(...spans.map(s => s.getBoundingClientRect().height)),
				overflow: Math.max(0, leg.right - card.right, document.getElementById('legend').scrollWidth - document.getElementById('legend').clientWidth),
			};
		})()`)
		if got["minFont"] < 12 || got["minHeight"] < 12 {
			t.Errorf("at %d px the legend's text is %.1f px (boxes %.1f px high), want ≥ 12", width, got["minFont"], got["minHeight"])
		}
		if got["overflow"] > 0 {
			t.Errorf("at %d px the legend sticks out of its card by %.0f px", width, got["overflow"])
		}
	}
	tb.do("viewport back", chromedp.EmulateViewport(1440, 900))
	for _, key := range []string{"children", "unexpected", "dangling", "deadlock", "holding"} {
		if !eval[bool](tb, fmt.Sprintf(`!!document.querySelector('#legend [data-legend=%s]')`, key)) {
			t.Errorf("the legend has no %s entry", key)
		}
	}
}

// A holder already holding when the page opens acquired at or after its
// node's creation: its clock counts from the node's ctime and says so
// ("holds ≤", with why in its tooltip); one seen acquiring says "holds".
func TestHoldClockIsHonest(t *testing.T) {
	need(t)
	const path = "/e2e/holdclock"
	admin := connect(t)
	ensurePath(t, admin, path)
	first := takeLock(t, path, "first")
	if err := <-first.got; err != nil {
		t.Fatal(err)
	}
	second := takeLock(t, path, "second")
	srv := startServer(t, "--watch", path)
	tb := newTab(t)
	tb.open(srv.URL + "/lock?path=" + path)
	tb.until("two nodes", nodeCount(2))
	q := queueNames(t, admin, path)
	clock := func(name string) string {
		return fmt.Sprintf(`document.querySelector('#lane [data-node=%s] .time').textContent`, jsString(name))
	}
	tb.until("the first holds, at most since its node was created", clock(q[0])+`.startsWith('holds ≤ ')`)
	tb.until("the table says the same", fmt.Sprintf(`document.querySelector('tr[data-row=%s] td.time').textContent.startsWith('holds ≤ ')`, jsString(q[0])))
	if page := get(t, srv.URL+"/lock?path="+path); !strings.Contains(page, "holds ≤ ") {
		t.Errorf("the server's first paint does not say the holder holds at most since its creation (holds ≤)")
	}
	// Its clock starts at the node's ctime, not when the page opened.
	ctime := fmt.Sprintf(`fetch('/api/v1/lock?path=%s').then(r => r.json()).then(s => Date.parse(s.nodes.find(n => n.name === %s).ctime))`, path, jsString(q[0]))
	if since, want := eval[float64](tb, fmt.Sprintf(`Number(document.querySelector('#lane [data-node=%s] .time').dataset.since)`, jsString(q[0]))), evalAwait[float64](tb, ctime); since != want {
		t.Errorf("the first holder's clock starts at %v, its node's ctime is %v", since, want)
	}
	if tip := eval[string](tb, fmt.Sprintf(`document.querySelector('#lane [data-node=%s] > title').textContent`, jsString(q[0]))); !strings.Contains(tip, "since its node was created") {
		t.Errorf("the first holder's tooltip %q does not say its clock counts from its creation", tip)
	}
	tb.until("the second waits", clock(q[1])+`.startsWith('waits ')`)

	if err := first.lock.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := <-second.got; err != nil {
		t.Fatal(err)
	}
	tb.until("the second holds, seen acquiring", node(q[1], "holding")+` && /^holds [0-9]/.test(`+clock(q[1])+`)`)

	// The watcher saw the second acquire and says when: a page opened
	// afterwards shows the same exact clock, from the same moment.
	heldSince := fmt.Sprintf(`fetch('/api/v1/lock?path=%s').then(r => r.json()).then(s => Date.parse(s.nodes.find(n => n.name === %s).heldSince || ''))`, path, jsString(q[1]))
	stamped := evalAwait[float64](tb, heldSince)
	if !(stamped > 0) {
		t.Fatalf("the API gives the second holder no heldSince")
	}
	if page := get(t, srv.URL+"/lock?path="+path); strings.Contains(page, "holds ≤ ") {
		t.Errorf("the first paint after the hand-off still says holds ≤")
	}
	late := newTab(t)
	late.open(srv.URL + "/lock?path=" + path)
	late.until("a page opened later: the second holds, exactly", `/^holds [0-9]/.test(`+clock(q[1])+`)`)
	if since := eval[float64](late, fmt.Sprintf(`Number(document.querySelector('#lane [data-node=%s] .time').dataset.since)`, jsString(q[1]))); since != stamped {
		t.Errorf("the later page's clock starts at %v, the watcher saw the hand-off at %v", since, stamped)
	}
}

// A holder with no creation time (a Redis key) already holding when the
// server first read it held at least since then: every page's clock says
// "holds ≥" from the server's first sight, the same in a page opened
// later, in its lane, its table and its details, not from when each page
// opened.
func TestHoldClockFromServerFirstSight(t *testing.T) {
	need(t)
	m := redistest.ForTest(t)
	redisCLI(t, m.Addr(), "SET", "clock-lock", "tok-A", "NX")
	srv := startServer(t, "--poll", "200ms", "--redis", m.Addr(), "--watch", "redis:clock-lock")
	const lock = "/lock?service=redis&path=clock-lock"
	api := `fetch('/api/v1/lock?service=redis&path=clock-lock').then(r => r.json()).then(s => s.nodes.find(n => n.name === 'tok-A'))`
	first := newTab(t)
	first.open(srv.URL + lock + "&node=tok-A")
	first.until("tok-A holds, live", node("tok-A", "holding")+` && document.body.dataset.live === 'true'`)
	bound := evalAwait[string](first, api+`.then(n => n.heldBound + ' ' + Date.parse(n.heldSince))`)
	kind, sinceText, _ := strings.Cut(bound, " ")
	if kind != "atLeast" {
		t.Fatalf("the API's clock of a holder the server first saw holding: %q, want heldBound atLeast", bound)
	}
	time.Sleep(1500 * time.Millisecond)
	late := newTab(t)
	opened := float64(time.Now().UnixMilli())
	late.open(srv.URL + lock + "&node=tok-A")
	late.until("tok-A holds, live", node("tok-A", "holding")+` && document.body.dataset.live === 'true'`)
	for _, where := range []string{`#lane [data-node="tok-A"] .time`, `#table tr[data-row="tok-A"] td.time`, `#details dd.time`} {
		q := fmt.Sprintf(`document.querySelector('%s')`, where)
		late.until(where+" says holds ≥", q+` && `+q+`.textContent.startsWith('holds ≥ ') || `+q+` && `+q+`.dataset.verb === '' && `+q+`.previousElementSibling.textContent === 'holding for at least'`)
		for _, tb := range []*tab{first, late} {
			if got := eval[string](tb, q+`.dataset.since`); got != sinceText {
				t.Errorf("%s: the clock starts at %s, the server first saw the holder at %s", where, got, sinceText)
			}
		}
	}
	if since, _ := strconv.ParseFloat(sinceText, 64); since >= opened {
		t.Errorf("the server's first sight %v is not before the later page opened (%v)", since, opened)
	}
}

// A 10,000-node lock made by a real client first paints with its middle
// folded (what is drawn says how much), and its table pages.
func TestTenThousandNodeLock(t *testing.T) {
	need(t)
	const path, n = "/e2e/big10k", 10000
	c := connect(t)
	ensurePath(t, c, path)
	acl := zk.WorldACL(zk.PermAll)
	for start := 0; start < n; start += 500 {
		var ops []any
		for i := start; i < start+500; i++ {
			ops = append(ops, &zk.CreateRequest{Path: fmt.Sprintf("%s/_c_%032x-lock-", path, i*7919+1), Data: []byte(fmt.Sprintf("worker-%d", i)), Acl: acl, Flags: zk.FlagEphemeral | zk.FlagSequence})
		}
		if _, err := c.Multi(ops...); err != nil {
			t.Fatalf("create children: %v", err)
		}
	}
	srv := startServer(t, "--watch", path)
	tb := newTab(t)
	tb.open(srv.URL + "/lock?path=" + path)
	tb.until("10,000 nodes read", fmt.Sprintf(`document.getElementById('lane').dataset.count === '%d'`, n))
	tb.until("first painted", `document.body.dataset.firstDraw`)

	lane := eval[map[string]string](tb, `({...document.getElementById('lane').dataset})`)
	drawn, folded := 0, 0
	fmt.Sscan(lane["drawn"], &drawn)
	fmt.Sscan(lane["folded"], &folded)
	if drawn+folded != n || drawn > 100+200 || drawn < 100 {
		t.Errorf("drawn %d + folded %d: want 10,000 with 100–300 drawn", drawn, folded)
	}
	if got := eval[int](tb, `document.querySelectorAll('#lane [data-node]').length`); got != drawn {
		t.Errorf("%d node elements, data-drawn says %d", got, drawn)
	}
	if got := eval[int](tb, `document.querySelectorAll('#lane [data-group]').length`); got < 1 {
		t.Error("no folded group drawn")
	}
	tb.until("the holder is drawn", `document.querySelector('#lane [data-node][data-state=holding]')`)
	note := eval[string](tb, `document.getElementById('fold-note').hidden ? '' : document.getElementById('fold-note').textContent`)
	for _, want := range []string{fmt.Sprintf("%s of 10,000 nodes are folded", formatThousands(folded)), "first 50", "last 50", "at most 50 nodes", "lists every node"} {
		if !strings.Contains(note, want) {
			t.Errorf("fold note %q lacks %q", note, want)
		}
	}

	tb.until("table page 1", `document.querySelector('#table .page-info').textContent.startsWith('rows 1–100 of 10,000')`)
	tb.click("next page", `#table .table-bar button:last-of-type`)
	tb.until("table page 2", `document.querySelector('#table .page-info').textContent.startsWith('rows 101–200 of 10,000') && document.querySelectorAll('#table tbody tr').length === 100`)
	tb.until("row 101", `document.querySelector('#table tbody tr td.num').textContent === '101'`)
}

func formatThousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// The dashboard says whether the watcher's own session is up, with no lock
// watched at all, and says NOT live while ZooKeeper is down.
func TestDashboardWhenZooKeeperStops(t *testing.T) {
	need(t)
	zks := zktest.ForTest(t)
	srv := startServerOn(t, zks)
	tb := newTab(t)
	tb.open(srv.URL + "/")
	ens := `document.getElementById('ensemble')`
	tb.until("connected, no lock watched", ens+`.dataset.state === 'connected' && `+ens+`.textContent.includes('connected') && `+ens+`.textContent.includes('no lock watched yet')`)

	if err := zks.Stop(); err != nil {
		t.Fatalf("stop ZooKeeper: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("ZooKeeper's output since its restart:\n%s", zks.Output())
		}
	})
	tb.until("not live", ens+`.dataset.state === 'reconnecting' && `+ens+`.textContent.includes('NOT live') && document.body.dataset.live === 'false'`)

	if err := zks.Start(t.Context()); err != nil {
		t.Fatalf("restart ZooKeeper: %v", err)
	}
	tb.until("connected again", ens+`.dataset.state === 'connected' && document.body.dataset.live === 'true'`)
}

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/zookeeper/zklocal/zktest"
)

// recorded is what GET /api/v1/lock/history answers, as far as these
// tests read it.
type recorded struct {
	Events []struct {
		Time time.Time `json:"time"`
		Kind string    `json:"kind"`
		Node string    `json:"node"`
		// Connection is the reader's, for a connection event.
		Connection string `json:"connection"`
	} `json:"events"`
}

// eventTime polls the lock's history until an event of kind on node is
// recorded, and returns when it happened (the recorder's clock).
func eventTime(t *testing.T, srv *server, path, kind, node string) time.Time {
	t.Helper()
	return eventWhere(t, srv, path, kind+" of "+node, time.Time{}, func(kind2, node2, _ string) bool { return kind2 == kind && node2 == node })
}

// eventWhere polls the lock's history until an event after after matches,
// and returns when it happened.
func eventWhere(t *testing.T, srv *server, path, what string, after time.Time, match func(kind, node, connection string) bool) time.Time {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		res, err := http.Get(srv.URL + "/api/v1/lock/history?path=" + url.QueryEscape(path))
		if err != nil {
			t.Fatalf("history of %s: %v", path, err)
		}
		var h recorded
		err = json.NewDecoder(res.Body).Decode(&h)
		res.Body.Close()
		if err != nil {
			t.Fatalf("history of %s: %v", path, err)
		}
		for _, e := range h.Events {
			if e.Time.After(after) && match(e.Kind, e.Node, e.Connection) {
				return e.Time
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no event %s recorded for %s after %s: %+v", what, path, waitFor, h.Events)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// queuedTwo starts a server watching path, and two go-zookeeper lockers
// on it: the first holds, the second waits. It returns them and the
// queue's node names, in order.
func queuedTwo(t *testing.T, path string) (*server, *gozkLock, *gozkLock, []string) {
	t.Helper()
	admin := connect(t)
	ensurePath(t, admin, path)
	srv := startServer(t, "--watch", path)
	// The server reads the lock live before anyone takes it, so the first's
	// acquisition is one it saw happen: a holder first seen already holding
	// is no acquisition in the figures.
	deadline := time.Now().Add(waitFor)
	for {
		var snap lockqueue.Snapshot
		if json.Unmarshal([]byte(get(t, srv.URL+"/api/v1/lock?path="+url.QueryEscape(path))), &snap) == nil && snap.Live() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not read live after %s", path, waitFor)
		}
		time.Sleep(50 * time.Millisecond)
	}
	first := takeLock(t, path, "first")
	if err := <-first.got; err != nil {
		t.Fatalf("first lock: %v", err)
	}
	second := takeLock(t, path, "second")
	q := queueNames(t, admin, path)
	for len(q) < 2 {
		q = queueNames(t, admin, path)
	}
	return srv, first, second, q
}

// A hand-off is recorded; the time bar goes back to before it (a drag, the
// arrow keys, a link) and the lock view shows who held and who waited then;
// L comes back to the live queue; the figures count the hand-off.
func TestTimeBarReplaysThePast(t *testing.T) {
	need(t)
	const path = "/e2e/replay"
	srv, first, second, q := queuedTwo(t, path)

	// The moment the second queued: the first held, the second waited.
	queued := eventTime(t, srv, path, "queued", q[1])
	before := queued.UnixMilli()

	if err := first.lock.Unlock(); err != nil {
		t.Fatalf("unlock: %v", err)
	}
	if err := <-second.got; err != nil {
		t.Fatalf("second lock: %v", err)
	}
	eventTime(t, srv, path, "acquired", q[1])

	tb := newTab(t)
	// The dashboard's sparkline counts both acquisitions.
	tb.open(srv.URL + "/")
	spark := fmt.Sprintf(`document.querySelector('tr[data-lock=%s] td.spark')`, jsString(path))
	tb.until("the dashboard's sparkline", spark)
	if n := eval[int](tb, `Number(`+spark+`.dataset.handoffs)`); n != 2 {
		t.Errorf("the sparkline counts %d hand-offs in the last hour, want 2", n)
	}
	if pts := eval[string](tb, spark+`.querySelector('polyline').getAttribute('points')`); strings.Count(pts, ",") != 12 {
		t.Errorf("the sparkline's points %q, want 12", pts)
	}

	tb.open(srv.URL + "/lock?path=" + url.QueryEscape(path))
	tb.until("the second holds, live", node(q[1], "holding"))
	tb.until("the time bar has the recorded changes", `Number(document.getElementById('timebar').dataset.moments) >= 2`)

	// A real drag with the mouse, from the thumb (live, at the right end) to
	// where the bar has a moment after the first acquired: the view shows
	// the moment it ends on, exactly as the history has it then.
	tb.run(`(() => { const w = document.getElementById('tb-window'); w.value = '900000'; w.dispatchEvent(new Event('change')); })()`)
	// The lock's history is younger than the window: the bar starts at
	// its first sight.
	tb.until("a 15-minute window", `(() => { const s = document.getElementById('tb-scrub'); return document.getElementById('timebar').dataset.span === '900000' && Number(s.max) - Number(s.min) <= 900000; })()`)
	type box struct{ Left, Right, Y, Min, Max float64 }
	b := eval[box](tb, `(() => { const s = document.getElementById('tb-scrub'), r = s.getBoundingClientRect(); return {left: r.left, right: r.right, y: r.top + r.height / 2, min: Number(s.min), max: Number(s.max)}; })()`)
	// The thumb's centre runs from 8 px in from either end.
	target := float64(before) + (b.Max-float64(before))/2
	x0, x1 := b.Right-8, b.Left+8+(b.Right-b.Left-16)*(target-b.Min)/(b.Max-b.Min)
	steps := []chromedp.Action[chromedp.Void]{chromedp.MouseEvent(input.DispatchMouseEventTypeMousePressed, x0, b.Y, chromedp.ButtonType(input.MouseButtonLeft), chromedp.ClickCount(1))}
	// Scrub all the way back, then forward to the target.
	for k := 1; k <= 10; k++ {
		steps = append(steps, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, x0+(b.Left-x0)*float64(k)/10, b.Y, chromedp.ButtonType(input.MouseButtonLeft)))
	}
	for k := 1; k <= 10; k++ {
		steps = append(steps, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, b.Left+(x1-b.Left)*float64(k)/10, b.Y, chromedp.ButtonType(input.MouseButtonLeft)))
	}
	steps = append(steps, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseReleased, x1, b.Y, chromedp.ButtonType(input.MouseButtonLeft), chromedp.ClickCount(1)))
	tb.do("drag the time bar", steps...)
	tb.until("the drag shows a past moment", `document.getElementById('timebar').dataset.at !== ''`)
	dragged := eval[string](tb, `document.getElementById('timebar').dataset.at`)
	res, err := http.Get(srv.URL + "/api/v1/lock?path=" + url.QueryEscape(path) + "&at=" + dragged)
	if err != nil {
		t.Fatal(err)
	}
	var then lockqueue.Snapshot
	if res.StatusCode == http.StatusOK {
		err = json.NewDecoder(res.Body).Decode(&then)
	}
	res.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(then.Holders()) == 0 {
		t.Errorf("the drag ended at %s, where the history has no holder: it should land after the first acquired (%d)", dragged, before)
	}
	tb.until("the lane is the history's at the dragged moment", fmt.Sprintf(`JSON.stringify([...document.querySelectorAll('#lane [data-node][data-state=holding]')].map((g) => g.dataset.node).sort()) === %s`, jsString(jsonOf(t, sorted(then.Holders())))))

	// Drag the bar to the moment the second queued (a drag ends in a change).
	tb.run(fmt.Sprintf(`(() => { const s = document.getElementById('tb-scrub'); s.value = '%d'; s.dispatchEvent(new Event('change')); })()`, before))
	tb.until("the first holds again", node(q[0], "holding"))
	tb.until("the second waits again", node(q[1], "waiting"))
	tb.until("the table row of the first holds", fmt.Sprintf(`document.querySelector('tr[data-row=%s]')?.dataset.state === 'holding'`, jsString(q[0])))
	// Who: each row names its node's session and data (the locker's name)
	// as the live view did.
	for i, who := range []string{"first", "second"} {
		tb.until("the table names the "+who+" by its data and session", fmt.Sprintf(
			`(() => { const r = document.querySelector('#table tr[data-row=%s]'); return !!r && r.textContent.includes(%s) && /0x[0-9a-f]+/.test(r.textContent); })()`,
			jsString(q[i]), jsString(who)))
	}
	tb.until("the status names the moment", `document.getElementById('replay-status').dataset.at === '`+fmt.Sprint(before)+`'`)
	if got := eval[string](tb, `new URL(location.href).searchParams.get('at')`); got != fmt.Sprint(before) {
		t.Errorf("the address says at=%s, want %d", got, before)
	}

	// → steps to the next recorded change; the hand-off is one of them.
	for range 10 {
		if eval[bool](tb, node(q[1], "holding")+` !== null && `+fmt.Sprintf(`!document.querySelector('#lane [data-node=%s]')`, jsString(q[0]))) {
			break
		}
		tb.key(kb.ArrowRight)
	}
	tb.until("stepping forward reaches the hand-off", node(q[1], "holding"))

	// Home goes to where the window's history begins, the lock's first
	// sight (read live before anyone queued); → from there is the window's
	// first recorded change.
	tb.key(kb.Home)
	tb.until("Home: the first sight", `document.getElementById('timebar').dataset.at === document.querySelector('#tb-ticks button.k-seen').dataset.seen`)
	tb.key(kb.ArrowRight)
	tb.until("→: the first change", `document.getElementById('timebar').dataset.at === document.querySelector('#tb-ticks button').dataset.at`)

	// ▶ plays the changes from there on, and ends live. The click waits for
	// the moment to be drawn: drawing it moves the bar, and a click aimed
	// before the move can land beside the button.
	tb.until("→: the first change drawn", `document.getElementById('replay-status').dataset.at === document.getElementById('timebar').dataset.at`)
	tb.do("play", chromedp.Click("#tb-play"))
	tb.until("▶ took the click", `document.getElementById('tb-play').textContent.includes('pause') || document.getElementById('timebar').dataset.at === ''`)
	tb.until("playing reaches the end and goes live", `document.getElementById('timebar').dataset.at === '' && !new URL(location.href).searchParams.has('at')`)
	tb.until("played to the hand-off", node(q[1], "holding"))

	// L is live again, from a past moment.
	tb.run(fmt.Sprintf(`(() => { const s = document.getElementById('tb-scrub'); s.value = '%d'; s.dispatchEvent(new Event('change')); })()`, before))
	tb.until("back at the moment before", node(q[0], "holding"))
	tb.key("l")
	tb.until("live: the address names no moment", `!new URL(location.href).searchParams.has('at')`)
	tb.until("live: the second holds", node(q[1], "holding"))
	tb.until("live: the first is gone", fmt.Sprintf(`!document.querySelector('#lane [data-node=%s]')`, jsString(q[0])))

	// A link to the past moment opens there, painted by the server.
	tb.open(srv.URL + "/lock?path=" + url.QueryEscape(path) + "&at=" + fmt.Sprint(before))
	first0 := eval[string](tb, fmt.Sprintf(`document.querySelector('#table tr[data-row=%s]')?.dataset.state || ''`, jsString(q[0])))
	if first0 != "holding" {
		t.Errorf("the link's first paint shows the first as %q, want holding", first0)
	}
	tb.until("the link shows the first holding", node(q[0], "holding"))
	tb.until("the link shows the second waiting", node(q[1], "waiting"))
	tb.until("the status says which moment", `document.getElementById('replay-status').textContent.includes('as it was at')`)

	// The figures count the acquisitions and the second's wait.
	tb.until("the figures count the second's wait", `Number(document.querySelector('#figures tr[data-figure=wait]').dataset.count) >= 1`)
	tb.until("the figures count the acquisitions", `Number(document.querySelector('#figures [data-stat=acquisitions] b').textContent) >= 2`)
	tb.until("the longest holds name the first by its data", `[...document.querySelectorAll('#figures .longest-holds li')].some((li) => li.textContent.includes('"first"'))`)
	tb.until("the hold histogram counts the first's hold", `[...document.querySelectorAll('#figures [data-histogram=hold] tr')].some((r) => Number(r.dataset.count) > 0)`)
	for _, f := range []string{"wait", "hold"} {
		hist := eval[int](tb, `[...document.querySelectorAll('#figures [data-histogram=`+f+`] tr')].reduce((n, r) => n + Number(r.dataset.count), 0)`)
		count := eval[int](tb, `Number(document.querySelector('#figures tr[data-figure=`+f+`]').dataset.count)`)
		if hist != count {
			t.Errorf("the %s histogram holds %d, the percentiles count %d: they should be the same set", f, hist, count)
		}
	}
	tb.screenshot("lock-history.png")
	second.lock.Unlock()
}

// The exported incident is one file that opens from disk with the network
// off and a quiet console, and steps through the window's changes.
func TestIncidentExportOpensOffline(t *testing.T) {
	need(t)
	const path = "/e2e/export"
	srv, first, second, q := queuedTwo(t, path)
	from := eventTime(t, srv, path, "acquired", q[0]).Add(-time.Second)
	first.lock.Unlock()
	if err := <-second.got; err != nil {
		t.Fatalf("second lock: %v", err)
	}
	// The reader sees snapshots, not every change: let it see the second
	// hold before it lets go, or the hand-off may read as a give-up.
	eventTime(t, srv, path, "acquired", q[1])
	second.lock.Unlock()
	to := eventTime(t, srv, path, "left", q[1]).Add(time.Second)

	// The page's button is the export of its window.
	tb := newTab(t)
	tb.open(srv.URL + "/lock?path=" + url.QueryEscape(path))
	href := eval[string](tb, `document.getElementById('export').href`)
	if !strings.Contains(href, "/api/v1/lock/export?") {
		t.Fatalf("the export button links %q", href)
	}

	res, err := http.Get(fmt.Sprintf("%s/api/v1/lock/export?path=%s&from=%d&to=%d", srv.URL, url.QueryEscape(path), from.UnixMilli(), to.UnixMilli()))
	if err != nil {
		t.Fatalf("export: %v", err)
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("export: %s, %v: %s", res.Status, err, body)
	}
	if cd := res.Header.Get("Content-Disposition"); !strings.HasPrefix(cd, "attachment;") {
		t.Errorf("Content-Disposition %q, want an attachment", cd)
	}
	file := filepath.Join(t.TempDir(), "incident.html")
	if err := os.WriteFile(file, body, 0o644); err != nil {
		t.Fatal(err)
	}

	// Network off, in a tab of its own: every http(s) and websocket request
	// is blocked, and any request the file makes but for itself (and the
	// lane's module, inlined as a data: URL) is counted.
	tb = newTab(t)
	var mu sync.Mutex
	var requests []string
	if err := chromedp.Listen(tb.ctx, func(ev any) {
		if r, ok := ev.(*network.EventRequestWillBeSent); ok && !strings.HasPrefix(r.Request.URL, "file:") && !strings.HasPrefix(r.Request.URL, "data:") {
			mu.Lock()
			requests = append(requests, r.Request.URL)
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	call(t, tb.ctx, "network on", func(ctx context.Context) error {
		_, err := chromedp.Call(ctx, network.Enable, network.EnableParams{})
		return err
	})
	call(t, tb.ctx, "network off", func(ctx context.Context) error {
		_, err := chromedp.Call(ctx, network.SetBlockedURLs, network.SetBlockedURLsParams{URLPatterns: []*network.BlockPattern{
			{URLPattern: "*://*:*/*", Block: true},
		}})
		return err
	})
	tb.open("file://" + file)
	tb.until("the incident's first change", `document.body.dataset.change === '0'`)
	n := eval[int](tb, `document.querySelectorAll('#changes .change').length`)
	if n < 3 {
		t.Errorf("the incident has %d changes, want at least 3 (two queued, a hand-off)", n)
	}
	tb.key(kb.End)
	tb.until("the last change shown", fmt.Sprintf(`document.body.dataset.change === '%d'`, n-1))
	if !eval[bool](tb, `[...document.querySelectorAll('#changes .change')].some((c) => c.textContent.includes('acquired'))`) {
		t.Error("no change of the incident says a node acquired")
	}
	tb.until("the figures in the file", `Number(document.querySelector('#figures [data-stat=acquisitions] b').textContent) >= 2`)
	mu.Lock()
	defer mu.Unlock()
	if len(requests) > 0 {
		t.Errorf("the incident file made network requests: %v", requests)
	}
}

// While ZooKeeper is down the history does not know the lock: the time bar
// draws the gap, and the view at a moment in it says it does not know.
func TestTimeBarShowsWhatItDidNotSee(t *testing.T) {
	need(t)
	const path = "/e2e/gap"
	zks := zktest.ForTest(t)
	admin := connectTo(t, zks)
	ensurePath(t, admin, path)
	l := takeLockVia(t, connectTo(t, zks), path, "holder")
	if err := <-l.got; err != nil {
		t.Fatal(err)
	}
	srv := startServerOn(t, zks, "--watch", path)
	connected := func(_, _, c string) bool { return c == "connected" }
	up := eventWhere(t, srv, path, "the reader connected", time.Time{}, connected)
	if err := zks.Stop(); err != nil {
		t.Fatalf("stop ZooKeeper: %v", err)
	}
	lost := eventWhere(t, srv, path, "the reader lost ZooKeeper", up, func(kind, _, c string) bool { return kind == "connection" && c != "connected" })
	if err := zks.Start(t.Context()); err != nil {
		t.Fatalf("restart ZooKeeper: %v", err)
	}
	back := eventWhere(t, srv, path, "the reader back", lost, connected)
	mid := lost.Add(back.Sub(lost) / 2)

	tb := newTab(t)
	tb.open(fmt.Sprintf("%s/lock?path=%s&at=%d", srv.URL, url.QueryEscape(path), mid.UnixMilli()))
	if txt := eval[string](tb, `document.getElementById('replay-status').textContent`); !strings.Contains(txt, "does not know") {
		t.Errorf("at a moment ZooKeeper was down the view says %q, want that it does not know", txt)
	}
	tb.until("the gap is drawn on the bar", `Number(document.getElementById('timebar').dataset.gaps) >= 1 && document.querySelector('#tb-ticks .gap')`)
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sorted is ss sorted, never nil (JSON's [] rather than null).
func sorted(ss []string) []string {
	out := append([]string{}, ss...)
	slices.Sort(out)
	return out
}

func call(t *testing.T, ctx context.Context, what string, fn func(context.Context) error) {
	t.Helper()
	if err := fn(ctx); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

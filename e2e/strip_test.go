package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/zklockviz/zklockviz/lockqueue"
)

// The strip chart over the time bar is drawn from a real recording: three
// in the queue at most (one holding, two waiting) until a hand-off; a
// click on it where the queue was longest shows the lock as it was then.
func TestStripChartJumpsTheTimeBar(t *testing.T) {
	need(t)
	const path = "/e2e/strip"
	srv, first, second, q := queuedTwo(t, path)
	takeLock(t, path, "third")
	full := eventWhere(t, srv, path, "the third queued", time.Time{}, func(kind, node, _ string) bool {
		return kind == "queued" && !slices.Contains(q, node)
	})
	// The queue stays three long for a few seconds: wide enough on the
	// chart to click in.
	time.Sleep(4 * time.Second)
	if err := first.lock.Unlock(); err != nil {
		t.Fatalf("unlock: %v", err)
	}
	if err := <-second.got; err != nil {
		t.Fatalf("second lock: %v", err)
	}
	handoff := eventTime(t, srv, path, "acquired", q[1])

	tb := newTab(t)
	tb.open(srv.URL + "/lock?path=" + url.QueryEscape(path))
	tb.until("the second holds, live", node(q[1], "holding"))
	tb.run(`(() => { const w = document.getElementById('tb-window'); w.value = '900000'; w.dispatchEvent(new Event('change')); })()`)
	const chart = `document.getElementById('strip-chart')`
	// The lock's history is younger than the window: the chart, as the
	// bar, starts a little before its first change.
	tb.until("the strip chart of a 15-minute window", `document.getElementById('timebar').dataset.span === '900000' && `+chart+`.dataset.to - `+chart+`.dataset.from <= 900000 && `+chart+`.querySelector('g.bar')`)
	if got := eval[int](tb, `Math.max(...[...`+chart+`.querySelectorAll('g.bar')].map((g) => Number(g.dataset.queue)))`); got != 3 {
		t.Errorf("the strip chart's longest queue is %d, want 3 (one holding, two waiting)", got)
	}
	if got := eval[string](tb, chart+`.dataset.maxQueue`); got != "3" {
		t.Errorf("the strip chart's scale goes to %s, want 3", got)
	}
	if eval[string](tb, `document.getElementById('timebar').dataset.at`) != "" {
		t.Fatal("the time bar shows a past moment before the click")
	}

	// A real click on the chart, halfway through the three-long queue.
	type box struct{ Left, Width, Y, From, To float64 }
	b := eval[box](tb, `(() => { const s = `+chart+`, r = s.getBoundingClientRect(); return {left: r.left, width: r.width, y: r.top + r.height / 2, from: Number(s.dataset.from), to: Number(s.dataset.to)}; })()`)
	target := float64(full.UnixMilli()+handoff.UnixMilli()) / 2
	x := b.Left + b.Width*(target-b.From)/(b.To-b.From)
	tb.do("click the strip chart",
		chromedp.MouseEvent(input.DispatchMouseEventTypeMousePressed, x, b.Y, chromedp.ButtonType(input.MouseButtonLeft), chromedp.ClickCount(1)),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseReleased, x, b.Y, chromedp.ButtonType(input.MouseButtonLeft), chromedp.ClickCount(1)))
	tb.until("the click shows a past moment", `document.getElementById('timebar').dataset.at !== ''`)
	var at int64
	fmt.Sscan(eval[string](tb, `document.getElementById('timebar').dataset.at`), &at)
	// A pixel of the chart is about a second of the window.
	if perPx := (b.To - b.From) / b.Width; math.Abs(float64(at)-target) > 2*perPx {
		t.Errorf("the click moved the time bar to %d, want within 2 px (%.0f ms) of %.0f", at, 2*perPx, target)
	}
	if got := eval[string](tb, `document.getElementById('tb-scrub').value`); got != fmt.Sprint(at) {
		t.Errorf("the time bar's slider is at %s, want the clicked moment %d", got, at)
	}
	res, err := http.Get(fmt.Sprintf("%s/api/v1/lock?path=%s&at=%d", srv.URL, url.QueryEscape(path), at))
	if err != nil {
		t.Fatal(err)
	}
	var then lockqueue.Snapshot
	err = json.NewDecoder(res.Body).Decode(&then)
	res.Body.Close()
	if err != nil || len(then.Nodes) != 3 {
		t.Fatalf("the history at the clicked moment: %v, %d nodes, want 3", err, len(then.Nodes))
	}
	tb.until("the lane shows the first holding then", node(q[0], "holding"))
	tb.until("and the second waiting", node(q[1], "waiting"))
}

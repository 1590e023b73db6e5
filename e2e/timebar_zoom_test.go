package e2e

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
)

// A drag across the times under the time bar zooms the bar, its axis and
// the strip to the span dragged; a double-click on the times, Z and the
// zoom out button each go back to the whole window.
func TestTimeBarDragToZoom(t *testing.T) {
	need(t)
	const path = "/e2e/timebar/zoom"
	r := recordQueue(t, path, 30, 10*time.Second, 2)
	_, tb := openRecorded(t, path, r, "the axis", `document.querySelectorAll('#tb-axis .tick').length >= 2 && Number(document.getElementById('strip-chart').dataset.buckets) > 0`)
	tb.run(`document.getElementById('timebar').scrollIntoView({ block: 'center' })`)

	type view struct {
		Min, Max           float64 // the bar's range
		StripFrom, StripTo float64
		First, Last        float64 // the axis' first and last ticks
		Ticks              int
		Zoom               string
		ZoomOut            bool // the zoom out button shown
		Left, Width, Y     float64
	}
	look := func() view {
		return eval[view](tb, `(() => {
  const s = document.getElementById('tb-scrub'), a = document.getElementById('tb-axis'), r = a.getBoundingClientRect();
  const ticks = [...a.querySelectorAll('.tick')].map((k) => Number(k.dataset.t));
  const c = document.getElementById('strip-chart').dataset;
  return {min: Number(s.min), max: Number(s.max), stripFrom: Number(c.from), stripTo: Number(c.to), first: ticks[0], last: ticks[ticks.length - 1], ticks: ticks.length,
    zoom: document.getElementById('timebar').dataset.zoom || '', zoomOut: !document.getElementById('tb-zoom-out').hidden, left: r.x, width: r.width, y: r.y + r.height / 2};
})()`)
	}
	whole := look()
	if whole.Zoom != "" || whole.ZoomOut {
		t.Fatalf("before any drag the bar is zoomed (%q) or offers to zoom out", whole.Zoom)
	}
	if whole.Min != float64(r.start.UnixMilli()) {
		t.Fatalf("the bar starts at %.0f, want the first sight %d", whole.Min, r.start.UnixMilli())
	}
	msPerPx := (whole.Max - whole.Min) / whole.Width

	// drag presses at a quarter of the times and lets go past the middle,
	// with real mouse events, and waits for the bar to be zoomed; it
	// returns the span the pointer crossed.
	drag := func(what string) (float64, float64) {
		x0, x1 := whole.Left+whole.Width/4, whole.Left+whole.Width*0.6
		steps := []chromedp.Action[chromedp.Void]{chromedp.MouseEvent(input.DispatchMouseEventTypeMousePressed, x0, whole.Y, chromedp.ButtonType(input.MouseButtonLeft), chromedp.ClickCount(1))}
		for k := 1; k <= 10; k++ {
			steps = append(steps, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, x0+(x1-x0)*float64(k)/10, whole.Y, chromedp.ButtonType(input.MouseButtonLeft)))
		}
		steps = append(steps, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseReleased, x1, whole.Y, chromedp.ButtonType(input.MouseButtonLeft), chromedp.ClickCount(1)))
		tb.do(what, steps...)
		tb.until(what+": the bar zoomed", `document.getElementById('timebar').dataset.zoom !== '' && !document.getElementById('tb-zoom-out').hidden`)
		return whole.Min + (x0-whole.Left)*msPerPx, whole.Min + (x1-whole.Left)*msPerPx
	}
	zoomedOut := func(what string) {
		tb.until(what+": the whole window again", fmt.Sprintf(`document.getElementById('timebar').dataset.zoom === '' && document.getElementById('tb-zoom-out').hidden && Number(document.getElementById('tb-scrub').min) === %.0f`, whole.Min))
		if v := look(); v.StripFrom != whole.Min || v.Max-v.Min < whole.Max-whole.Min {
			t.Errorf("%s: the bar covers [%.0f, %.0f] and the strip starts at %.0f, want the whole window from %.0f", what, v.Min, v.Max, v.StripFrom, whole.Min)
		}
	}

	from, to := drag("a drag across the times")
	z := look()
	near := func(got, want float64) bool { return math.Abs(got-want) <= 2*msPerPx }
	// Over the times, as over the bar, the time under the pointer is
	// shown: where the drag ended.
	if h := eval[float64](tb, `Number(document.getElementById('tb-hover').dataset.t)`); !near(h, to) {
		t.Errorf("where the drag ended the hover time says %s, want %s", clockOf(h), clockOf(to))
	}
	if !near(z.Min, from) || !near(z.Max, to) {
		t.Errorf("zoomed, the bar covers [%s, %s], want the span dragged [%s, %s]", clockOf(z.Min), clockOf(z.Max), clockOf(from), clockOf(to))
	}
	if z.StripFrom != z.Min || z.StripTo != z.Max {
		t.Errorf("zoomed, the strip covers [%s, %s], want the bar's [%s, %s]", clockOf(z.StripFrom), clockOf(z.StripTo), clockOf(z.Min), clockOf(z.Max))
	}
	if z.Ticks < 2 || z.First < z.Min || z.Last > z.Max || z.First == whole.First && z.Last == whole.Last {
		t.Errorf("zoomed, the axis' ticks run %s to %s (%d), want new ticks inside [%s, %s]", clockOf(z.First), clockOf(z.Last), z.Ticks, clockOf(z.Min), clockOf(z.Max))
	}
	if z.Last-z.First >= whole.Last-whole.First {
		t.Errorf("zoomed, the axis spans %v, not less than the whole window's %v", time.Duration(z.Last-z.First)*time.Millisecond, time.Duration(whole.Last-whole.First)*time.Millisecond)
	}

	tb.do("a double-click on the times",
		chromedp.MouseClickXY(whole.Left+whole.Width/2, whole.Y, chromedp.ClickCount(2)))
	zoomedOut("double-click")

	drag("a second drag")
	tb.key("z")
	zoomedOut("Z")

	drag("a third drag")
	tb.run(`document.getElementById('tb-zoom-out').click()`)
	zoomedOut("the zoom out button")
}

// clockOf words ms as a time of day in UTC, for messages.
func clockOf(ms float64) string {
	return time.UnixMilli(int64(ms)).UTC().Format("15:04:05.000")
}

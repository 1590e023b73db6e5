package e2e

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// A lock whose history began a few minutes ago fills the live time bar of
// an hour's window: its marks spread over the bar, not crowded into its
// last twelfth. A lock with a history older than the window keeps the
// whole hour, each mark where its time is.
func TestTimeBarMarksSpreadAcrossTheWindow(t *testing.T) {
	need(t)
	const young, old = "/e2e/timebar/young", "/e2e/timebar/old"
	// Ten changes 20 s apart, and seventy a minute apart, each ending a
	// minute ago.
	ry := recordQueue(t, young, 10, 20*time.Second, 2)
	ro := recordQueue(t, old, 70, time.Minute, 2)

	open := func(path string, r queueRecord) *tab {
		_, tb := openRecorded(t, path, r, "the time bar's marks", fmt.Sprintf(`!!document.querySelector('#tb-ticks button[data-at="%d"]')`, r.last.UnixMilli()))
		return tb
	}
	// left is the centre of the mark of the change at t along the bar, in
	// percent, as drawn.
	left := func(tb *tab, t time.Time) float64 {
		return eval[float64](tb, fmt.Sprintf(`(() => { const bar = document.getElementById('tb-ticks').getBoundingClientRect(); const b = document.querySelector('#tb-ticks button[data-at="%d"]').getBoundingClientRect(); return 100 * (b.x + b.width / 2 - bar.x) / bar.width; })()`, t.UnixMilli()))
	}
	bar := func(tb *tab) (min, max float64) {
		return eval[float64](tb, `Number(document.getElementById('tb-scrub').min)`), eval[float64](tb, `Number(document.getElementById('tb-scrub').max)`)
	}

	tb := open(young, ry)
	first, last := left(tb, ry.first), left(tb, ry.last)
	if first > 25 || last-first < 60 {
		t.Errorf("a history of the last 4 minutes: its marks span %.1f%% to %.1f%% of an hour's bar, want them over most of it", first, last)
	}

	tb = open(old, ro)
	lo, hi := bar(tb)
	if hi-lo != float64(time.Hour.Milliseconds()) {
		t.Errorf("a history older than the window: the bar spans %v, want the hour", time.Duration(hi-lo)*time.Millisecond)
	}
	for _, at := range []time.Time{ro.last.Add(-50 * time.Minute), ro.last.Add(-20 * time.Minute), ro.last} {
		want := 100 * (float64(at.UnixMilli()) - lo) / (hi - lo)
		if got := left(tb, at); math.Abs(got-want) > 2 {
			t.Errorf("the mark of %s is at %.1f%% of the bar, want %.1f%%", at.Format(time.TimeOnly), got, want)
		}
	}
}

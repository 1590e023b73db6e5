package e2e

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// foldedLane is what a run's lane says of its fold: the queue's nodes, those
// drawn, those its fold marks say they hold, and the marks' words.
type foldedLane struct {
	Count  int      `json:"count"`
	Drawn  int      `json:"drawn"`
	Marked int      `json:"marked"`
	Marks  []string `json:"marks"`
}

func readFold(tb *tab, scope string) foldedLane {
	tb.t.Helper()
	return eval[foldedLane](tb, `(() => { const svg = document.querySelector(`+jsString(scope+" svg.lane")+`);
  const marks = [...svg.querySelectorAll('g.group[data-group]')];
  return { count: Number(svg.dataset.count), drawn: svg.querySelectorAll('[data-node]').length,
    marked: marks.reduce((a, g) => { const [f, t] = g.dataset.group.split('-').map(Number); return a + t - f + 1; }, 0),
    marks: marks.map(g => [...g.querySelectorAll('text')].map(x => x.textContent).join(' ')) }; })()`)
}

// Herd against predecessor with 20 clients side by side, at a projector's
// 1280×720 and a laptop's 1280×900, presenting or not: each pane's lane is
// folded by the server to what its pane shows at a readable size (labels
// of 14 px, 20 px presenting), with no sideways scroll; the fold marks say
// how many nodes they hold, which with those drawn are every node; a
// mark opens the whole lane.
func TestClassroomCompareTwentyFolded(t *testing.T) {
	need(t)
	srv := startServer(t, "--sim")
	for _, tc := range []struct {
		w, h    int
		present bool
	}{{1280, 720, false}, {1280, 900, false}, {1280, 720, true}, {1280, 900, true}} {
		name := fmt.Sprintf("%dx%d present=%v", tc.w, tc.h, tc.present)
		t.Run(name, func(t *testing.T) {
			tb := newTab(t)
			tb.do("the screen", chromedp.EmulateViewport(int64(tc.w), int64(tc.h)))
			url := srv.URL + "/sim?scenario=herd&strategy=compare&clients=20"
			readable := 14.0
			if tc.present {
				url += "&present=1"
				readable = 20
			}
			tb.open(url)
			herd, pred := run("herd"), run("predecessor")
			tb.until("both runs at step 0", settled(herd, 0)+` && `+settled(pred, 0))
			// Step 21 on: every client has joined and the holders hand over.
			// (At step 20 the head's holder and the tail's new node both
			// stay, which on a projector's 601 px pane is more than fits at
			// 20 px: that lane is scaled.)
			tb.click("click step 21's mark", `#ticks button[data-step="21"]`)
			tb.until("both runs at step 21", settled(herd, 21)+` && `+settled(pred, 21))
			for k := 21; k <= 23; k++ {
				if k > 21 {
					tb.key(kb.ArrowRight)
					tb.until(fmt.Sprintf("step %d", k), settled(herd, k)+` && `+settled(pred, k))
				}
				// The socket brings the folded lane once the pane said its room.
				tb.until("folded lanes", `[...document.querySelectorAll('.run svg.lane')].every(s => s.querySelector('g.group[data-group]'))`)
				for _, f := range measureLanes(tb) {
					if f.Label < readable-0.05 || f.Scrollable || f.Cut != 0 {
						t.Errorf("step %d, %s: the smallest label %.1f px, sideways scroll %v, %d nodes cut off; want %.0f px or more, none, none", k, f.Run, f.Label, f.Scrollable, f.Cut, readable)
					}
				}
				for _, scope := range []string{herd, pred} {
					l := readFold(tb, scope)
					if l.Count < 17 || l.Drawn+l.Marked != l.Count || len(l.Marks) == 0 {
						t.Errorf("step %d, %s: %d nodes, %d drawn and %d in fold marks %q; want every node drawn or counted in a mark", k, scope, l.Count, l.Drawn, l.Marked, l.Marks)
					}
				}
			}
			// A notification to a folded node is counted on its mark: the
			// herd's release at step 21 wakes every waiter.
			// A notification to a folded node is counted on its mark: each
			// release in the herd wakes every waiter, the new holder drawn,
			// the others folded.
			tb.key(kb.ArrowLeft)
			tb.until("step 22", settled(herd, 22)+` && `+settled(pred, 22))
			l := readFold(tb, herd)
			got := eval[int](tb, `[...document.querySelector(`+jsString(herd+" svg.lane")+`).querySelectorAll('g.group')].reduce((a, g) => a + Number(g.dataset.notified || 0), 0)`)
			if got == 0 || got > l.Marked {
				t.Errorf("step 22 of the herd: its fold marks count %d notified of the %d nodes they hold (%q); want the folded waiters the release woke", got, l.Marked, l.Marks)
			}
			if tc.present || tc.h != 900 {
				return
			}
			// The mark opens the whole lane, readable, scrolled sideways.
			tb.click("open the herd's fold", herd+` svg.lane g.group[data-group]`)
			tb.until("the whole herd lane", `document.querySelector(`+jsString(herd+" svg.lane")+`).querySelectorAll('[data-node]').length === Number(document.querySelector(`+jsString(herd+" svg.lane")+`).dataset.count)`)
			for _, f := range measureLanes(tb) {
				if f.Run == "herd" && f.Label < readable-0.05 {
					t.Errorf("the opened herd lane's smallest label is %.1f px, want %.0f or more", f.Label, readable)
				}
			}
		})
	}
}

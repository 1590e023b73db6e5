package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// projector is the screen presentation mode is for.
const projectorW, projectorH = 1280, 720

// laneFit measures, in the page, whether scope's lanes show every node: for
// each run, its drawn nodes, how many lie outside the viewport or outside
// the run's own lane box (cut off), the lowest node's bottom, the smallest
// label as drawn on screen (its font size times the lane's scale) and the
// narration's bottom.
type laneFit struct {
	Run        string  `json:"run"`
	Nodes      int     `json:"nodes"`
	Cut        int     `json:"cut"`
	Bottom     float64 `json:"bottom"`
	Label      float64 `json:"label"`
	Narration  float64 `json:"narration"`
	Scrollable bool    `json:"scrollable"`
}

func measureLanes(tb *tab) []laneFit {
	tb.t.Helper()
	return eval[[]laneFit](tb, `[...document.querySelectorAll('.run')].map(run => {
  const svg = [...run.querySelectorAll('svg.lane, svg.locks')].find(s => !s.parentElement.hidden);
  const box = svg.parentElement.getBoundingClientRect();
  const nodes = [...svg.querySelectorAll('[data-node]')].map(g => g.getBoundingClientRect());
  const out = (r) => r.left < Math.max(0, box.left) - 0.5 || r.right > Math.min(innerWidth, box.right) + 0.5;
  const labels = [...svg.querySelectorAll('text.label')].map(t => parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a);
  return {
    run: run.dataset.scenario || run.dataset.strategy, nodes: nodes.length, cut: nodes.filter(out).length,
    bottom: Math.max(0, ...nodes.map(r => r.bottom)), label: labels.length ? Math.min(...labels) : 0,
    narration: run.querySelector('.narration').getBoundingClientRect().bottom,
    scrollable: svg.parentElement.scrollWidth > svg.parentElement.clientWidth + 1,
  };
})`)
}

// onProjector opens url in a new tab the size of a projector's screen.
func onProjector(t *testing.T, url string) *tab {
	t.Helper()
	tb := newTab(t)
	tb.do("a projector's screen", chromedp.EmulateViewport(projectorW, projectorH))
	tb.open(url)
	return tb
}

// allAt is true once the page shows n runs matching sel, all settled at
// step k.
func allAt(sel string, n, k int) string {
	runs := `[...document.querySelectorAll(` + jsString(sel) + `)]`
	return fmt.Sprintf(`%s.length === %d && %s.every(p => p.dataset.step === '%d' && p.dataset.busy === 'false') && document.body.dataset.busy === 'false'`, runs, n, runs, k)
}

// shoot saves what the screen shows (the viewport, a projector's picture)
// in the test's own directory, and says where.
func shoot(tb *tab, name string) {
	tb.t.Helper()
	buf, err := chromedp.Run(tb.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		tb.t.Fatalf("screenshot: %v", err)
	}
	path := filepath.Join(tb.t.TempDir(), name)
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		tb.t.Fatalf("write %s: %v", path, err)
	}
	tb.t.Logf("screenshot: %s", path)
}

// Presentation mode at 1280×720: the key turns it on, and the queue of
// LOCK1–LOCK5 and its narration are above the fold, every label 20 px or
// more, the controls one row. The URL keeps it, so a bookmark opens in it.
func TestPresentationMode(t *testing.T) {
	need(t)
	srv := startServer(t, "--sim")
	tb := onProjector(t, srv.URL+"/sim?scenario=lock1-5&strategy=predecessor")
	scope := run("predecessor")
	tb.until("the run", settled(scope, 0))
	for k := 1; k <= 5; k++ {
		tb.key(kb.ArrowRight)
		tb.until(fmt.Sprintf("step %d", k), settled(scope, k))
	}
	tb.key("p")
	tb.until("presentation mode", `document.body.dataset.present === 'true' && new URLSearchParams(location.search).get('present') === '1' && document.getElementById('present').getAttribute('aria-pressed') === 'true'`)
	check := func(when string) {
		t.Helper()
		fits := measureLanes(tb)
		if len(fits) != 1 {
			t.Fatalf("%s: %d runs, want 1", when, len(fits))
		}
		f := fits[0]
		if f.Nodes != 5 || f.Cut != 0 || f.Bottom > projectorH || f.Narration > projectorH {
			t.Errorf("%s: %d nodes, %d of them out of sight, the lowest ends at %.0f px, the narration at %.0f px; want 5 nodes, all within %d×%d",
				when, f.Nodes, f.Cut, f.Bottom, f.Narration, projectorW, projectorH)
		}
		if f.Label < 20 {
			t.Errorf("%s: the smallest label is %.1f px on screen, want 20 or more", when, f.Label)
		}
		if h := eval[float64](tb, `document.querySelector('.sim-controls').getBoundingClientRect().height`); h > 48 {
			t.Errorf("%s: the controls are %.0f px high, want one row", when, h)
		}
	}
	check("turned on")
	shoot(tb, "present.png")

	// A bookmark opens in presentation mode, from the first paint.
	url := eval[string](tb, `location.href`)
	tb2 := onProjector(t, url)
	tb2.until("the bookmarked step", settled(scope, 5))
	if on := eval[bool](tb2, `document.body.dataset.present === 'true' && document.getElementById('present').getAttribute('aria-pressed') === 'true'`); !on {
		t.Errorf("the bookmark %s did not open in presentation mode", url)
	}
	tb = tb2
	check("bookmarked")

	// p again is the everyday page.
	tb.key("p")
	tb.until("presentation mode off", `document.body.dataset.present === undefined && !new URLSearchParams(location.search).has('present')`)
	if w := eval[string](tb, `document.querySelector(`+jsString(scope+" svg.lane")+`).style.width`); w != "" {
		t.Errorf("off: the lane is still sized for presentation (%s)", w)
	}
}

// Side by side in presentation mode, herd against predecessor (the page's
// "both", which the URL may say too): each pane shows every node of its
// lane, none cut off at the pane's edge or the screen's.
func TestPresentationCompare(t *testing.T) {
	need(t)
	srv := startServer(t, "--sim")
	tb := onProjector(t, srv.URL+"/sim?scenario=lock1-5&strategy=both&present=1")
	atStep := func(k int) string { return allAt(".run", 2, k) }
	tb.until("herd and predecessor", atStep(0))
	for k := 1; k <= 5; k++ {
		tb.key(kb.ArrowRight)
		tb.until(fmt.Sprintf("step %d", k), atStep(k))
	}
	for _, f := range measureLanes(tb) {
		if f.Nodes != 5 || f.Cut != 0 || f.Scrollable || f.Bottom > projectorH {
			t.Errorf("%s: %d nodes, %d cut off (scrolls sideways: %v), the lowest ends at %.0f px; want all 5 in sight", f.Run, f.Nodes, f.Cut, f.Scrollable, f.Bottom)
		}
	}
	// A queued waiter's mark draws its pause bars with its own borders: the
	// page's fonts have no "⏸", which showed as a box.
	marks := eval[[]string](tb, `[...document.querySelectorAll('.client .queued')].map(q => { const b = getComputedStyle(q, '::before'); return b.content + ' ' + b.borderLeftWidth; })`)
	if len(marks) == 0 {
		t.Errorf("no queued waiter's mark shown")
	}
	for _, m := range marks {
		if !strings.HasPrefix(m, `"" `) || strings.HasSuffix(m, " 0px") {
			t.Errorf("a queued mark's ::before is %q: want no glyph, and bars drawn by its borders", m)
		}
	}
	shoot(tb, "present-compare.png")
}

// The every-service view in presentation mode: five panes, one per
// service, each showing every node of its lane at every step of the story.
func TestPresentationEveryService(t *testing.T) {
	need(t)
	needServers(t, "redis-server", "etcd")
	srv := startServer(t, "--sim")
	tb := onProjector(t, srv.URL+"/sim?scenario=side-by-side&present=1")
	atStep := func(k int) string { return allAt(".run.side-pane", 5, k) }
	tb.until("five panes", atStep(0))
	total := eval[int](tb, `Number(document.getElementById('scrub').max)`)
	most := 0
	for k := 1; k <= total; k++ {
		tb.key(kb.ArrowRight)
		tb.until(fmt.Sprintf("step %d", k), atStep(k))
		for _, f := range measureLanes(tb) {
			most = max(most, f.Nodes)
			if f.Cut != 0 || f.Scrollable || f.Bottom > projectorH {
				t.Errorf("step %d, %s: %d of %d nodes cut off (scrolls sideways: %v), the lowest ends at %.0f px", k, f.Run, f.Cut, f.Nodes, f.Scrollable, f.Bottom)
			}
		}
		if k == 7 {
			shoot(tb, "present-every-service.png")
		}
	}
	if most < 2 {
		t.Errorf("at most %d nodes in a pane: the check saw nothing to cut off", most)
	}
}

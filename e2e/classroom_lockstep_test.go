package e2e

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp/kb"
)

// Switching the strategy while the new runs' sockets are still connecting
// closes them without a word in the console (the harness fails the test on
// "WebSocket is closed before the connection is established"), and leaves
// no run behind but the one shown.
func TestClassroomSwitchWhileConnecting(t *testing.T) {
	need(t)
	srv := startServer(t, "--sim")
	tb := newTab(t)
	tb.open(srv.URL + "/sim?scenario=lock1-5&strategy=predecessor")
	tb.until("the run", settled(run("predecessor"), 0)+` && document.querySelector('.run').dataset.socket === 'open'`)

	// The moment the first compare run has its id, its socket has just been
	// made (the observer runs before the browser can open it): switch again.
	tb.run(`window.__connecting = null;
new MutationObserver((ms, obs) => {
  if (!document.querySelector('.run[data-run]')) return;
  obs.disconnect();
  window.__connecting = window.zklockvizSim.panels.filter(p => p.ws).map(p => p.ws.readyState);
  const s = document.getElementById('strategy');
  s.value = 'herd';
  s.dispatchEvent(new Event('change'));
}).observe(document.getElementById('runs'), {subtree: true, attributes: true, attributeFilter: ['data-run']});
{ const s = document.getElementById('strategy'); s.value = 'compare'; s.dispatchEvent(new Event('change')); }`)
	herd := run("herd")
	tb.until("the herd run alone", settled(herd, 0)+` && document.querySelectorAll('.run').length === 1 && document.querySelector('.run').dataset.socket === 'open'`)
	if got := eval[[]int](tb, `window.__connecting`); len(got) == 0 || got[0] != 0 {
		t.Fatalf("sockets when the strategy changed: %v, want one still connecting (0): the test did not catch the moment", got)
	}
	tb.until("only the shown run is left on the server", `fetch('/api/v1/sim/runs').then(r => r.json()).then(rs => window.__runs = rs.map(r => r.id)) && window.__runs && window.__runs.length === 1 && window.__runs[0] === document.querySelector('.run').dataset.run`)
}

// Herd and predecessor side by side step in lockstep: at every moment both
// runs show the same step, whether stepped forward, back, or played (the
// herd's steps take longer on ZooKeeper, so each run on its own timer, or
// shown as soon as its own answer came, drifts a step apart).
func TestClassroomCompareLockstep(t *testing.T) {
	need(t)
	srv := startServer(t, "--sim")
	tb := newTab(t)
	tb.open(srv.URL + "/sim?scenario=lock1-5&strategy=compare")
	herd, pred := run("herd"), run("predecessor")
	both := func(k int) string { return settled(herd, k) + ` && ` + settled(pred, k) }
	tb.until("both runs at step 0", both(0))

	// Note both runs' steps at every change of either, as a person sees them
	// (a MutationObserver runs after the page has finished a change).
	tb.run(`window.__pairs = [];
new MutationObserver(() => {
  const step = (s) => document.querySelector('.run[data-strategy=' + s + ']').dataset.step;
  window.__pairs.push([step('herd'), step('predecessor')]);
}).observe(document.getElementById('runs'), {subtree: true, attributes: true, attributeFilter: ['data-step']});`)
	apart := func(when string) {
		t.Helper()
		pairs := eval[[][2]string](tb, `window.__pairs`)
		for _, p := range pairs {
			if p[0] != p[1] {
				t.Fatalf("%s: herd showed step %s while predecessor showed %s (steps seen: %v)", when, p[0], p[1], pairs)
			}
		}
	}
	steps := func() [2]int {
		return eval[[2]int](tb, `[Number(document.querySelector(`+jsString(herd)+`).dataset.step), Number(document.querySelector(`+jsString(pred)+`).dataset.step)]`)
	}

	for k := 1; k <= 5; k++ {
		tb.key(kb.ArrowRight)
		tb.until(fmt.Sprintf("step %d on both", k), both(k))
		apart(fmt.Sprintf("→ to step %d", k))
	}
	for k := 4; k >= 3; k-- {
		tb.key(kb.ArrowLeft)
		tb.until(fmt.Sprintf("back to step %d on both", k), both(k))
		apart(fmt.Sprintf("← to step %d", k))
	}

	// Play from the start to the end, at 4× (a step every 0.3 s).
	for range 4 {
		tb.key("]")
	}
	tb.until("4×", `document.getElementById('speed-out').textContent === '4×'`)
	tb.key(kb.Home)
	tb.until("both at the start", both(0))
	tb.run(`window.__pairs = []`)
	tb.key(" ")
	tb.until("playing", `document.body.dataset.playing === 'true'`)
	tb.until("played to the end on both", both(10)+` && document.body.dataset.playing === 'false'`)
	apart("playing")
	seen := map[string]bool{}
	for _, p := range eval[[][2]string](tb, `window.__pairs`) {
		seen[p[0]] = true
	}
	if len(seen) < 5 {
		t.Errorf("play showed only steps %v: too few to tell lockstep", seen)
	}
	if got := steps(); got != [2]int{10, 10} {
		t.Errorf("after play: steps %v, want both 10", got)
	}

	// Pausing mid-play leaves both on the same step, and it stays.
	tb.key(kb.Home)
	tb.until("both at the start again", both(0))
	tb.run(`window.__pairs = []`)
	tb.key(" ")
	tb.until("two steps played", `Number(document.body.dataset.step) >= 2`)
	tb.key(" ")
	tb.until("paused", `document.body.dataset.playing === 'false' && document.body.dataset.busy === 'false'`)
	got := steps()
	tb.until("both settled on one step", both(got[1]))
	apart("play, then pause")
}

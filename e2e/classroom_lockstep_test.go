package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
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
  window.__connecting = [...document.querySelectorAll('.run[data-socket]')].map(r => r.dataset.socket);
  const s = document.getElementById('strategy');
  s.value = 'herd';
  s.dispatchEvent(new Event('change'));
}).observe(document.getElementById('runs'), {subtree: true, attributes: true, attributeFilter: ['data-run']});
{ const s = document.getElementById('strategy'); s.value = 'compare'; s.dispatchEvent(new Event('change')); }`)
	herd := run("herd")
	tb.until("the herd run alone", settled(herd, 0)+` && document.querySelectorAll('.run').length === 1 && document.querySelector('.run').dataset.socket === 'open'`)
	if got := eval[[]string](tb, `window.__connecting`); len(got) == 0 || got[0] != "connecting" {
		t.Fatalf("sockets when the strategy changed: %v, want one still connecting: the test did not catch the moment", got)
	}
	tb.until("only the shown run is left on the server", `fetch('/api/v1/sim/runs').then(r => r.json()).then(rs => window.__runs = rs.map(r => r.id)) && window.__runs && window.__runs.length === 1 && window.__runs[0] === document.querySelector('.run').dataset.run`)
}

// A run deleted on the server (by another tab, or the API) ends the page's
// socket with a normal closure: the page says so and does not knock again
// (a reconnect to a run that is gone is a 404, which the harness fails on).
func TestClassroomRunEndedOnServer(t *testing.T) {
	need(t)
	srv := startServer(t, "--sim")
	tb := newTab(t)
	tb.open(srv.URL + "/sim?scenario=lock1-5&strategy=predecessor")
	scope := run("predecessor")
	tb.until("the run", settled(scope, 0)+` && document.querySelector('.run').dataset.socket === 'open'`)
	// Deleted by another tab of this browser: with the run's owner secret.
	tb.run(`fetch('/api/v1/sim/runs/' + document.querySelector('.run').dataset.run, {method: 'DELETE', headers: {'X-Zklockviz-Run-Owner': Object.values(JSON.parse(localStorage.getItem('zklockviz.runOwners') || '{}')).join(', ')}})`)
	tb.until("the page says the run ended", `document.querySelector('.run').dataset.socket === 'closed' && document.getElementById('sim-error').textContent.includes('the run ended')`)
	// Longer than the page's reconnect delay (1 s), so a reconnect would
	// have shown in the console.
	tb.stays("no reconnect", `document.querySelector('.run').dataset.socket`, 2*time.Second)
}

// Herd and predecessor side by side step in lockstep: at every moment both
// runs show the same step, whether stepped forward, back, played or paused.
// The herd's steps take longer on ZooKeeper (every release wakes every
// waiter), so a run shown as soon as its own answer came, or played on its
// own timer, drifts a step apart.
func TestClassroomCompareLockstep(t *testing.T) {
	need(t)
	srv := startServer(t, "--sim")
	tb := newTab(t)
	tb.open(srv.URL + "/sim?scenario=herd&strategy=compare&clients=10")
	herd, pred := run("herd"), run("predecessor")
	both := func(k int) string { return settled(herd, k) + ` && ` + settled(pred, k) }
	tb.until("both runs at step 0", both(0))
	total := eval[int](tb, `Number(document.getElementById('scrub').max)`)

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
	// noSkips checks that playing showed every step, one after the other: a
	// run played on its own timer is shown only when the two happen to agree.
	noSkips := func(when string) {
		t.Helper()
		pairs := eval[[][2]int](tb, `window.__pairs.map(p => p.map(Number))`)
		for i := 1; i < len(pairs); i++ {
			if d := pairs[i][0] - pairs[i-1][0]; d != 0 && d != 1 {
				t.Fatalf("%s: the runs went from step %d to %d (steps seen: %v)", when, pairs[i-1][0], pairs[i][0], pairs)
			}
		}
	}
	steps := func() [2]int {
		return eval[[2]int](tb, `[Number(document.querySelector(`+jsString(herd)+`).dataset.step), Number(document.querySelector(`+jsString(pred)+`).dataset.step)]`)
	}

	for k := 1; k <= 4; k++ {
		tb.key(kb.ArrowRight)
		tb.until(fmt.Sprintf("step %d on both", k), both(k))
		apart(fmt.Sprintf("→ to step %d", k))
	}
	for k := 3; k >= 2; k-- {
		tb.key(kb.ArrowLeft)
		tb.until(fmt.Sprintf("back to step %d on both", k), both(k))
		apart(fmt.Sprintf("← to step %d", k))
	}

	// Play at 8× (a step every 0.15 s), pause half-way: both runs stop on
	// the same step, and stay there.
	for range 6 {
		tb.key("]")
	}
	tb.until("8×", `document.getElementById('speed-out').textContent === '8×'`)
	tb.run(`window.__pairs = []`)
	tb.key(" ")
	tb.until("playing", `document.body.dataset.playing === 'true'`)
	tb.until("half-way", fmt.Sprintf(`Number(document.body.dataset.step) >= %d`, total/2))
	tb.key(" ")
	tb.until("paused", `document.body.dataset.playing === 'false'`)
	tb.until("both runs settled", `document.body.dataset.busy === 'false' && [...document.querySelectorAll('.run')].every(r => r.dataset.busy === 'false')`)
	if got := steps(); got[0] != got[1] {
		t.Fatalf("paused: herd at step %d, predecessor at %d", got[0], got[1])
	}
	apart("playing, then pause")
	noSkips("playing, then pause")

	// Play on to the end.
	tb.run(`window.__pairs = []`)
	tb.key(" ")
	tb.until("played to the end on both", both(total)+` && document.body.dataset.playing === 'false'`)
	apart("playing to the end")
	noSkips("playing to the end")
}

// A 20-client herd beside its predecessor twin, at 1280 wide: each pane
// shows all 20 nodes without scrolling sideways (the lane is scaled to its
// pane, as presentation mode does).
func TestClassroomCompareTwentyFit(t *testing.T) {
	need(t)
	srv := startServer(t, "--sim")
	tb := newTab(t)
	tb.do("a 1280 wide screen", chromedp.EmulateViewport(1280, 900))
	tb.open(srv.URL + "/sim?scenario=herd&strategy=compare&clients=20")
	herd, pred := run("herd"), run("predecessor")
	tb.until("both runs at step 0", settled(herd, 0)+` && `+settled(pred, 0))
	tb.click("click step 20's mark", `#ticks button[data-step="20"]`)
	tb.until("both runs at step 20", settled(herd, 20)+` && `+settled(pred, 20))
	for _, scope := range []string{herd, pred} {
		// The lane is folded to its pane (web/runframe.go's foldRun): every
		// node is drawn or counted in a fold mark.
		got := eval[[]float64](tb, `(() => { const svg = document.querySelector(`+jsString(scope+` svg.lane`)+`); const box = svg.parentElement.getBoundingClientRect();`+
			`const nodes = [...svg.querySelectorAll('[data-node], g.group[data-group]')]; const right = Math.max(...nodes.map(n => n.getBoundingClientRect().right));`+
			`const folded = [...svg.querySelectorAll('g.group[data-group]')].reduce((a, g) => { const [f, t] = g.dataset.group.split('-').map(Number); return a + t - f + 1; }, 0);`+
			`return [svg.querySelectorAll('[data-node]').length + folded, svg.parentElement.scrollWidth - svg.parentElement.clientWidth, right - box.right]; })()`)
		if got[0] != 20 || got[1] > 1 || got[2] > 1 {
			t.Errorf("%s at step 20: %v nodes drawn or folded, %v px to scroll sideways, the last node or mark %v px past the pane; want 20, none, none", scope, got[0], got[1], got[2])
		}
	}
}

package e2e

import (
	"testing"
)

// While a scenario plays, the status line, the timeline's bar, its current
// mark, every run's panel and this tab's entry in the open runs list say
// the same step on every frame the browser paints: none lags another.
func TestClassroomStatusFollowsTheBar(t *testing.T) {
	need(t)
	srv := startServer(t, "--sim")
	for _, scenario := range []string{"lock1-5&strategy=predecessor", "redis-px-pause"} {
		tb := newTab(t)
		tb.open(srv.URL + "/sim?scenario=" + scenario)
		tb.until(scenario+": the run", `document.querySelector('.run') && document.querySelector('.run').dataset.step === '0' && document.body.dataset.step === '0'`)
		tb.run(`document.getElementById('run-list').open = true`)
		tb.until(scenario+": the open runs listed", `[...document.querySelectorAll('#run-items li')].some(l => l.textContent.includes('(this tab)'))`)
		// Each frame: the status line's step, the bar's, the current mark's,
		// each panel's, and the run list's.
		tb.run(`window.__frames = []; (function f() {
  const step = (re, text) => { const m = re.exec(text || ''); return m ? +m[1] : -1; };
  const listed = [...document.querySelectorAll('#run-items li')].find(l => l.textContent.includes('(this tab)'));
  window.__frames.push([step(/step (\d+) of/, document.getElementById('step-info').textContent), +document.getElementById('scrub').value,
    +(document.querySelector('#ticks button.current')?.dataset.step ?? -1), ...[...document.querySelectorAll('.run')].map(r => +r.dataset.step),
    step(/step (\d+) of/, listed && listed.textContent)]);
  if (document.body.dataset.done !== 'true') requestAnimationFrame(f);
})()`)
		tb.key(" ")
		tb.until(scenario+": playing", `document.body.dataset.playing === 'true'`)
		tb.until(scenario+": played to the end", `document.body.dataset.playing === 'false' && document.getElementById('step-info').textContent.includes('done')`)
		tb.run(`document.body.dataset.done = 'true'`)
		frames := eval[[][]int](tb, `window.__frames`)
		moved, bad := 0, 0
		for i, f := range frames {
			if i > 0 && f[0] != frames[i-1][0] {
				moved++
			}
			for k, v := range f[1:] {
				// Step 0 is before the first mark: none is current.
				if v != f[0] && !(k == 1 && f[0] == 0 && v == -1) {
					if bad++; bad <= 5 {
						t.Errorf("%s: frame %d of %d: status, bar, mark, panels, run list %v", scenario, i, len(frames), f)
					}
					break
				}
			}
		}
		if moved < 3 {
			t.Errorf("%s: the status line moved %d times over %d frames, want a scenario played", scenario, moved, len(frames))
		}
		t.Logf("%s: %d frames, the step moved %d times, %d frames disagree", scenario, len(frames), moved, bad)
	}
}

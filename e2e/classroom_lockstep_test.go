package e2e

import (
	"testing"
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

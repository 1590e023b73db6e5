package e2e

import (
	"fmt"
	"maps"
	"testing"

	"github.com/chromedp/chromedp/kb"
)

// timesJS maps each drawn node's client (its data label) to its time label
// in a run's lane, and adds the client pane's time and the narration (which
// tells an expiry's delay).
func timesJS(scope string) string {
	return `(() => {
	  const out = {};
	  for (const g of document.querySelectorAll(` + jsString(scope+` svg.lane [data-node]`) + `)) {
	    out[g.querySelector('.label.data').textContent.replace(/[“”]/g, '')] = g.querySelector('.label.time').textContent;
	  }
	  const pane = document.querySelector(` + jsString(scope+` .client-pane dd.time`) + `);
	  if (pane) out['pane'] = pane.textContent;
	  out['narration'] = document.querySelector(` + jsString(scope+` .narration`) + `).textContent;
	  return out;
	})()`
}

// Every time the classroom shows comes from the run's clock at the shown
// step: the same live, after scrubbing back and forth, and opened from a
// shared link (a fresh run on ZooKeeper, whose real timing differs).
func TestClassroomTimesFollowTheRunClock(t *testing.T) {
	need(t)
	srv := startServer(t, "--sim")
	tb := newTab(t)
	const base = "/sim?scenario=session-expiry&strategy=predecessor"
	tb.open(srv.URL + base)
	scope := run("predecessor")
	shown := func(k int) {
		t.Helper()
		tb.until(fmt.Sprintf("step %d shown", k), fmt.Sprintf(`document.querySelector(%s) && document.querySelector(%s).dataset.step === '%d' && document.querySelector(%s).dataset.busy === 'false'`,
			jsString(scope), jsString(scope), k, jsString(scope)))
	}
	shown(0)
	// The pane shows LOCK3's wait once it is selected, at every step after.
	read := func() map[string]string {
		t.Helper()
		if eval[bool](tb, `!!document.querySelector(`+jsString(scope+` .client[data-client=LOCK3]`)+`) && !document.querySelector(`+jsString(scope+` .client[data-client=LOCK3].selected`)+`)`) {
			tb.run(`document.querySelector(` + jsString(scope+` .client[data-client=LOCK3]`) + `).click()`)
		}
		return eval[map[string]string](tb, timesJS(scope))
	}

	live := map[int]map[string]string{}
	for k := 1; k <= 6; k++ {
		tb.key(kb.ArrowRight)
		shown(k)
		live[k] = read()
	}
	// The run's clock moves 1.2 s a step: at step 3 LOCK1 has held since
	// step 1, LOCK2 waited since step 2, LOCK3 just joined.
	want3 := map[string]string{"LOCK1": "holds 2.4s", "LOCK2": "waits 1.2s", "LOCK3": "waits 0.0s", "pane": "0.0s"}
	for k, v := range want3 {
		if live[3][k] != v {
			t.Errorf("step 3 live: %s reads %q, want %q", k, live[3][k], v)
		}
	}
	// Step 4 crashes LOCK1, step 5 waits for its session to expire and
	// step 6 hands the lock over: LOCK2 has just acquired; LOCK3 has waited
	// three steps and the session timeout.
	if live[6]["LOCK2"] != "holds 0.0s" || live[6]["LOCK3"] == live[3]["LOCK3"] || live[6]["LOCK3"] == "waits 3.6s" {
		t.Errorf("step 6 live: %v: LOCK2 should have just acquired, LOCK3 waited 3.6s plus the session timeout", live[6])
	}

	// Scrub: back to the start, then forward through the recorded steps,
	// then back one.
	tb.key(kb.Home)
	shown(0)
	for k := 1; k <= 6; k++ {
		tb.key(kb.ArrowRight)
		shown(k)
		if got := read(); !maps.Equal(got, live[k]) {
			t.Errorf("step %d after scrubbing: %v, live it was %v", k, got, live[k])
		}
	}
	tb.key(kb.ArrowLeft)
	shown(5)
	if got := read(); !maps.Equal(got, live[5]) {
		t.Errorf("step 5, stepped back: %v, live it was %v", got, live[5])
	}

	// A shared link replays the run on a fresh lock and shows the same.
	for _, k := range []int{3, 6} {
		tb.open(fmt.Sprintf("%s%s&step=%d", srv.URL, base, k))
		shown(k)
		if got := read(); !maps.Equal(got, live[k]) {
			t.Errorf("step %d from a shared link: %v, live it was %v", k, got, live[k])
		}
	}
}

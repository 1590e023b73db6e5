package e2e

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp/kb"
)

// A what-if in LOCK1–LOCK5 keeps the script: a writer added at step 3 (w)
// leaves it, the page says so and what became of the seven steps left, and
// s goes back to step 3, from where the script plays on as seed 000's table
// says. The note's button does the same for a branch that still follows
// the script.
func TestWhatIfKeepsTheScript(t *testing.T) {
	need(t)
	srv := startServer(t, "--sim")
	tb := newTab(t)
	tb.open(srv.URL + "/sim?scenario=lock1-5&strategy=predecessor")
	scope := run("predecessor")
	for k := 0; k <= 3; k++ {
		if k > 0 {
			tb.key(kb.ArrowRight)
		}
		checkStep(t, tb, scope, k, predecessorWatch)
	}
	note := func() string {
		return eval[string](tb, `document.getElementById('off-script').hidden ? '' : document.getElementById('off-script-text').textContent`)
	}
	if n := note(); n != "" {
		t.Fatalf("on the script, the page says %q", n)
	}

	tb.key("w")
	tb.until("the writer added, off the script", settled(scope, 4)+` && !document.getElementById('off-script').hidden && document.body.dataset.branch === '3'`)
	n := note()
	for _, want := range []string{"Off the script since step 3", "7 remaining steps no longer fit", "back to the script (s) returns to step 3"} {
		if !strings.Contains(n, want) {
			t.Errorf("the note %q does not say %q", n, want)
		}
	}
	if info := eval[string](tb, `document.getElementById('step-info').textContent`); !strings.Contains(info, "done") {
		t.Errorf("step info %q: the branch ends with the act", info)
	}
	tb.until("the URL carries the act", `new URLSearchParams(location.search).get('acts') === '3::add-writer'`)

	tb.key("s")
	tb.until("back to the script at step 3", settled(scope, 3)+` && document.getElementById('off-script').hidden && !document.querySelector(`+jsString(scope+` .client[data-client="LOCK6"]`)+`)`)
	checkStep(t, tb, scope, 3, predecessorWatch)
	if info := eval[string](tb, `document.getElementById('step-info').textContent`); !strings.Contains(info, "next: LOCK4 add-reader") {
		t.Errorf("step info %q: want the script's next step, LOCK4 add-reader", info)
	}
	tb.until("the URL drops the branch's act", `!new URLSearchParams(location.search).has('acts')`)

	for k := 4; k <= 10; k++ {
		tb.key(kb.ArrowRight)
		checkStep(t, tb, scope, k, predecessorWatch)
		if k != 5 {
			continue
		}
		// A write by the holder still fits the script: the branch plays
		// it on, and the button returns to step 5 all the same.
		tb.click("click LOCK1", scope+` .client[data-client="LOCK1"]`)
		tb.click("write", scope+` .client-pane button[data-action=write]`)
		tb.until("the write, off the script", settled(scope, 6)+` && document.body.dataset.branch === '5'`)
		if n := note(); !strings.Contains(n, "this branch still plays the script's 5 remaining steps") {
			t.Errorf("after the write, the note says %q", n)
		}
		tb.click("back to the script", `#to-script`)
		tb.until("back at step 5", settled(scope, 5)+` && document.getElementById('off-script').hidden`)
	}
	if msg := eval[string](tb, `document.getElementById('sim-error').textContent`); msg != "" {
		t.Errorf("error shown: %q", msg)
	}
}

package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// lock15 is seed 000's table, step by step: after each step, who holds and
// whom each waiter waits for (by client name; the page labels each node with
// its client's name, its data).
var lock15 = []struct {
	holders []string
	waits   map[string]string
}{
	0:  {},
	1:  {holders: []string{"LOCK1"}},
	2:  {holders: []string{"LOCK1"}, waits: map[string]string{"LOCK2": "LOCK1"}},
	3:  {holders: []string{"LOCK1"}, waits: map[string]string{"LOCK2": "LOCK1", "LOCK3": "LOCK2"}},
	4:  {holders: []string{"LOCK1"}, waits: map[string]string{"LOCK2": "LOCK1", "LOCK3": "LOCK2", "LOCK4": "LOCK3"}},
	5:  {holders: []string{"LOCK1"}, waits: map[string]string{"LOCK2": "LOCK1", "LOCK3": "LOCK2", "LOCK4": "LOCK3", "LOCK5": "LOCK3"}},
	6:  {holders: []string{"LOCK2"}, waits: map[string]string{"LOCK3": "LOCK2", "LOCK4": "LOCK3", "LOCK5": "LOCK3"}},
	7:  {holders: []string{"LOCK3"}, waits: map[string]string{"LOCK4": "LOCK3", "LOCK5": "LOCK3"}},
	8:  {holders: []string{"LOCK4", "LOCK5"}},
	9:  {holders: []string{"LOCK5"}},
	10: {},
}

// run scopes selectors to one run of the classroom.
func run(strategy string) string { return fmt.Sprintf(`.run[data-strategy=%q]`, strategy) }

// nodesJS maps client names to the znode names drawn in a run's lane, read
// from each node's data label ("LOCK3").
func nodesJS(scope string) string {
	return `Object.fromEntries([...document.querySelectorAll(` + jsString(scope+` svg.lane [data-node]`) + `)].map(g => [g.querySelector('.label.data').textContent.replace(/[“”]/g, ''), g.dataset.node]))`
}

// checkStep waits until the run shows step k, then checks every node's state
// and both arrows of every waiter against the seed's table.
func checkStep(t *testing.T, tb *tab, scope string, k int, actualTo func(waiter, target string) string) {
	t.Helper()
	want := lock15[k]
	tb.until(fmt.Sprintf("step %d shown", k), fmt.Sprintf(`document.querySelector(%s).dataset.step === '%d' && document.querySelector(%s).dataset.busy === 'false' && document.querySelectorAll(%s).length === %d`,
		jsString(scope), k, jsString(scope), jsString(scope+" svg.lane [data-node]"), len(want.holders)+len(want.waits)))
	nodes := eval[map[string]string](tb, nodesJS(scope))
	for _, h := range want.holders {
		if nodes[h] == "" {
			t.Fatalf("step %d: %s not drawn; lane has %v", k, h, nodes)
		}
		if st := eval[string](tb, fmt.Sprintf(`document.querySelector(%s).dataset.state`, jsString(fmt.Sprintf(`%s svg.lane [data-node=%q]`, scope, nodes[h])))); st != "holding" {
			t.Errorf("step %d: %s is %s, want holding", k, h, st)
		}
	}
	for w, target := range want.waits {
		sel := func(kind, to string) string {
			return fmt.Sprintf(`%s svg.lane [data-from=%q][data-to=%q][data-kind=%s]`, scope, nodes[w], to, kind)
		}
		if st := eval[string](tb, fmt.Sprintf(`(document.querySelector(%s) || {dataset: {}}).dataset.state`, jsString(fmt.Sprintf(`%s svg.lane [data-node=%q]`, scope, nodes[w])))); st != "waiting" {
			t.Errorf("step %d: %s is %q, want waiting", k, w, st)
		}
		if !eval[bool](tb, fmt.Sprintf(`!!document.querySelector(%s)`, jsString(sel("rule", nodes[target])))) {
			t.Errorf("step %d: no rule arrow %s → %s", k, w, target)
		}
		to := actualTo(nodes[w], nodes[target])
		tb.until(fmt.Sprintf("step %d: %s's watch arrow to %s", k, w, to), fmt.Sprintf(`!!document.querySelector(%s)`, jsString(sel("actual", to))))
	}
}

// The LOCK1–LOCK5 walkthrough, stepped with the arrow keys, shows the seed's
// holders and arrows at every step; Space plays and pauses; a shared URL
// reopens a step.
func TestClassroomLock1to5(t *testing.T) {
	need(t)
	srv := startServer(t, "--sim")
	tb := newTab(t)
	tb.open(srv.URL + "/sim?scenario=lock1-5&strategy=predecessor")
	scope := run("predecessor")
	tb.until("the run", `document.querySelector(`+jsString(scope)+`) && document.querySelector(`+jsString(scope)+`).dataset.step === '0'`)
	predecessor := func(waiter, target string) string { return target }

	for k := 1; k <= 10; k++ {
		tb.key(kb.ArrowRight)
		checkStep(t, tb, scope, k, predecessor)
		if k == 3 {
			if got := eval[string](tb, `document.querySelector(`+jsString(scope+" .narration")+`).textContent`); !strings.Contains(got, "LOCK3") {
				t.Errorf("step 3 narration %q does not name LOCK3", got)
			}
			if got := eval[int](tb, `document.querySelectorAll(`+jsString(scope+" .pseudo li.current")+`).length`); got != 1 {
				t.Errorf("step 3: %d pseudocode lines lit, want 1", got)
			}
		}
	}
	if got := eval[string](tb, `document.querySelector(`+jsString(scope+` .meter[data-meter=wastedWakeups]`)+`).dataset.value`); got != "0" {
		t.Errorf("predecessor watching wasted %s wake-ups, want 0", got)
	}

	// Back through the recorded steps.
	tb.key(kb.ArrowLeft)
	checkStep(t, tb, scope, 9, predecessor)
	tb.key(kb.ArrowLeft)
	checkStep(t, tb, scope, 8, predecessor)
	tb.until("the URL says where we are", `location.search.includes('step=8')`)

	// Space plays from the start, Space again pauses.
	tb.key(kb.Home)
	checkStep(t, tb, scope, 0, predecessor)
	tb.key(" ")
	tb.until("playing", `document.body.dataset.playing === 'true'`)
	tb.key(" ")
	tb.until("paused", `document.body.dataset.playing === 'false'`)

	// The help lists the keys.
	tb.key("?")
	tb.until("shortcuts help", `!document.getElementById('shortcuts').hidden`)
	tb.key(kb.Escape)
	tb.until("help closed", `document.getElementById('shortcuts').hidden`)

	// A shared link reopens the scenario at its step, on a fresh run.
	tb.open(srv.URL + "/sim?scenario=lock1-5&strategy=predecessor&step=6")
	checkStep(t, tb, scope, 6, predecessor)
}

// Herd and predecessor side by side on the same scenario: the herd run's
// waiters all watch the lock's children, and a release wakes them all.
func TestClassroomCompare(t *testing.T) {
	need(t)
	srv := startServer(t, "--sim")
	tb := newTab(t)
	tb.open(srv.URL + "/sim?scenario=lock1-5&strategy=compare&step=5")
	herd, pred := run("herd"), run("predecessor")
	checkStep(t, tb, pred, 5, func(_, target string) string { return target })
	path := eval[string](tb, `document.querySelector(`+jsString(herd)+`).dataset.path`)
	checkStep(t, tb, herd, 5, func(_, _ string) string { return path })

	// Count the notifications animated along the watch arrows: every dot
	// that enters each lane.
	tb.run(`window.__dots = {herd: 0, predecessor: 0}; for (const s of ['herd', 'predecessor']) new MutationObserver(ms => { for (const m of ms) for (const n of m.addedNodes) if (n.classList && n.classList.contains('notify-dot')) window.__dots[s]++; }).observe(document.querySelector('.run[data-strategy=' + s + '] svg.lane'), {childList: true});`)
	tb.key(kb.ArrowRight)
	checkStep(t, tb, pred, 6, func(_, target string) string { return target })
	checkStep(t, tb, herd, 6, func(_, _ string) string { return path })
	meter := func(scope, m string) int {
		return eval[int](tb, `Number(document.querySelector(`+jsString(scope+` .meter[data-meter=`+m+`]`)+`).dataset.value)`)
	}
	if h, p := meter(herd, "notifications"), meter(pred, "notifications"); h <= p {
		t.Errorf("notifications: herd %d, predecessor %d; the herd should hear more", h, p)
	}
	if h := meter(herd, "wastedWakeups"); h == 0 {
		t.Error("the herd run wasted no wake-ups")
	}
	// LOCK1's release: all four waiters hear of it in the herd, only LOCK2
	// with predecessor watching.
	if dots := eval[map[string]int](tb, `window.__dots`); dots["herd"] != 4 || dots["predecessor"] != 1 {
		t.Errorf("notifications animated: %v, want herd 4, predecessor 1", dots)
	}
	tb.screenshot("classroom.png")
}

// Clicking a client shows its session and node and acts on it: a crashed
// holder's node goes with its session and the next waiter holds; a writer
// added from the toolbar queues behind it.
func TestClassroomActOnClient(t *testing.T) {
	need(t)
	srv := startServer(t, "--sim")
	tb := newTab(t)
	tb.open(srv.URL + "/sim?scenario=lock1-5&strategy=predecessor&step=2")
	scope := run("predecessor")
	checkStep(t, tb, scope, 2, func(_, target string) string { return target })
	nodes := eval[map[string]string](tb, nodesJS(scope))

	tb.do("click LOCK1", chromedp.Click(chromedp.CSS(scope+` .client[data-client="LOCK1"]`)))
	tb.until("its details", `document.querySelector(`+jsString(scope+" .client-pane")+`).textContent.includes(`+jsString(nodes["LOCK1"])+`) && /0x[0-9a-f]+/.test(document.querySelector(`+jsString(scope+" .client-pane")+`).textContent)`)
	tb.do("crash it", chromedp.Click(chromedp.CSS(scope+` .client-pane button[data-action=crash]`)))
	tb.until("LOCK1 crashed", `document.querySelector(`+jsString(scope+` .client[data-client="LOCK1"]`)+`).dataset.state === 'crashed'`)
	// Acting replays the run on a fresh lock path: read the names again.
	tb.until("LOCK2 holds alone", `document.querySelectorAll(`+jsString(scope+" svg.lane [data-node]")+`).length === 1 && document.querySelector(`+jsString(scope+" svg.lane [data-node]")+`).dataset.state === 'holding'`)
	nodes = eval[map[string]string](tb, nodesJS(scope))
	if nodes["LOCK2"] == "" {
		t.Fatalf("the holder left is not LOCK2: %v", nodes)
	}

	tb.key("w")
	tb.until("a writer queued behind LOCK2", fmt.Sprintf(`document.querySelectorAll(%s).length === 2 && !!document.querySelector(%s)`,
		jsString(scope+" svg.lane [data-node]"), jsString(fmt.Sprintf(`%s svg.lane [data-kind=rule][data-to=%q]`, scope, nodes["LOCK2"]))))
}

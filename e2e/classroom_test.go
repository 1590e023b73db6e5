package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

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

// watching says where a strategy's arrows go: the recipe's rule and the
// actual watch of a waiter, given the znode names of the waiter and of the
// node the seed's table says it waits for, and the edge kind both carry.
type watching struct {
	rule, actual func(waiter, target string) string
	edge         string
	// parent is set when a holder that waited keeps the children watch of
	// its last getChildren (the herd recipe): one watch arrow from it into
	// the parent bar, and nothing else.
	parent string
}

// predecessorWatch: each waiter waits for and watches one node, as its
// recipe says (confirmed).
var predecessorWatch = watching{
	rule:   func(_, target string) string { return target },
	actual: func(_, target string) string { return target },
	edge:   "confirmed",
}

// herdWatch: every waiter waits on, and watches, all the lock's children:
// both arrows go into the parent bar.
func herdWatch(path string) watching {
	to := func(_, _ string) string { return path }
	return watching{rule: to, actual: to, edge: "children", parent: path}
}

// vermilion is --alert in app.css: "watches something else". Herd arrows
// must not be drawn in it: the herd does what its recipe says.
const vermilion = "rgb(213, 94, 0)"

// checkStep waits until the run shows step k, then checks every node's state
// and both arrows of every waiter against the seed's table: where they go,
// their edge kind, and that no other arrow is drawn.
func checkStep(t *testing.T, tb *tab, scope string, k int, how watching) {
	t.Helper()
	want := lock15[k]
	tb.until(fmt.Sprintf("step %d shown", k), fmt.Sprintf(`document.querySelector(%s).dataset.step === '%d' && document.querySelector(%s).dataset.busy === 'false' && document.querySelectorAll(%s).length === %d`,
		jsString(scope), k, jsString(scope), jsString(scope+" svg.lane [data-node]"), len(want.holders)+len(want.waits)))
	// The lane may be redrawn between the wait and the read (a frame that
	// brings the same step): read it until it names every holder, or 5 s.
	var nodes map[string]string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		nodes = eval[map[string]string](tb, nodesJS(scope))
		if !slices.ContainsFunc(want.holders, func(h string) bool { return nodes[h] == "" }) || time.Now().After(deadline) {
			break
		}
	}
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
		for _, kind := range []string{"rule", "actual"} {
			to := how.rule(nodes[w], nodes[target])
			if kind == "actual" {
				to = how.actual(nodes[w], nodes[target])
			}
			a := `document.querySelector(` + jsString(sel(kind, to)) + `)`
			tb.until(fmt.Sprintf("step %d: %s's %s arrow to %s, %s", k, w, kind, to, how.edge),
				fmt.Sprintf(`%s && %s.dataset.edge === %q && %s.classList.contains(%q)`, a, a, how.edge, a, "edge-"+how.edge))
			if how.edge == "children" {
				if c := eval[string](tb, `getComputedStyle(`+a+`).stroke`); c == vermilion {
					t.Errorf("step %d: %s's herd %s arrow is vermilion, the colour of a wrong watch", k, w, kind)
				}
			}
		}
	}
	// Nothing else: a rule and a watch per waiter; from a holder none, or
	// with the herd one children watch left from its last getChildren
	// (LOCK1 acquired at once, without a watch).
	arrows := 2 * len(want.waits)
	for _, h := range want.holders {
		if how.parent == "" || h == "LOCK1" {
			continue
		}
		arrows++
		a := fmt.Sprintf(`document.querySelector(%s)`, jsString(fmt.Sprintf(`%s svg.lane .from-holder[data-from=%q][data-to=%q][data-kind=actual]`, scope, nodes[h], how.parent)))
		tb.until(fmt.Sprintf("step %d: holder %s's leftover children watch", k, h), a)
	}
	if n := eval[int](tb, `document.querySelectorAll(`+jsString(scope+" svg.lane [data-kind]")+`).length`); n != arrows {
		got := eval[[]string](tb, `[...document.querySelectorAll(`+jsString(scope+" svg.lane [data-kind]")+`)].map(a => a.dataset.from + ' → ' + a.dataset.to + ' ' + a.dataset.kind + '/' + a.dataset.edge)`)
		t.Errorf("step %d: %d arrows drawn, want %d (a rule and a watch per waiter): %v", k, n, arrows, got)
	}
}

// stays fails t if expr's value changes within d, polling all along.
func (tb *tab) stays(what, expr string, d time.Duration) {
	tb.t.Helper()
	first := eval[string](tb, `String(`+expr+`)`)
	checks := 0
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if got := eval[string](tb, `String(`+expr+`)`); got != first {
			tb.t.Fatalf("%s: %s changed from %q to %q", what, expr, first, got)
		}
		checks++
	}
	if checks < 2 {
		tb.t.Fatalf("%s: checked only %d times", what, checks)
	}
}

// narration is the text narrating the current step of a run.
func narration(tb *tab, scope string) string {
	return eval[string](tb, `document.querySelector(`+jsString(scope+" .narration")+`).textContent`)
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
	predecessor := predecessorWatch

	for k := 1; k <= 10; k++ {
		tb.key(kb.ArrowRight)
		checkStep(t, tb, scope, k, predecessor)
		if k == 6 {
			// LOCK1 released: only LOCK2, which watched it, heard of it.
			if got := narration(tb, scope); !strings.Contains(got, "LOCK1 released") || !strings.Contains(got, "only LOCK2, which watched it, was notified") {
				t.Errorf("step 6 narration %q should say LOCK1 released and only LOCK2 was notified", got)
			}
		}
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

	// Space plays from the start, Space again pauses, and paused it stays:
	// the step does not move while steps remain. It plays at ⅛× (a step
	// every 9.6 s), so that the pause lands with steps left however slow
	// the machine is; paused, it goes to 8× (a step every 0.15 s), so that
	// three seconds without a step prove the pause holds.
	tb.key(kb.Home)
	checkStep(t, tb, scope, 0, predecessor)
	setSpeed := func(v string) {
		tb.run(`{ const s = document.getElementById('speed'); s.value = '` + v + `'; s.dispatchEvent(new Event('input', {bubbles: true})); }`)
	}
	setSpeed("-3")
	tb.until("⅛× sent", `document.querySelector('.run').dataset.speed === '0.125'`)
	tb.key(" ")
	tb.until("playing", `document.body.dataset.playing === 'true'`)
	tb.until("a step played", `Number(document.body.dataset.step) >= 1`)
	tb.key(" ")
	tb.until("paused", `document.body.dataset.playing === 'false' && document.body.dataset.busy === 'false'`)
	if k, total := eval[int](tb, `Number(document.body.dataset.step)`), eval[int](tb, `Number(document.getElementById('scrub').max)`); k >= total {
		t.Fatalf("paused at step %d of %d: nothing left to play, so the pause proves nothing", k, total)
	}
	setSpeed("3")
	tb.until("8× sent", `document.querySelector('.run').dataset.speed === '8'`)
	tb.stays("paused", `document.body.dataset.step + '/' + document.body.dataset.playing`, 3*time.Second)
	setSpeed("0")
	tb.until("1× sent", `document.querySelector('.run').dataset.speed === '1'`)

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
	checkStep(t, tb, pred, 5, predecessorWatch)
	path := eval[string](tb, `document.querySelector(`+jsString(herd)+`).dataset.path`)
	checkStep(t, tb, herd, 5, herdWatch(path))
	// The fan-in is named on the parent bar; the legend explains it.
	tb.until("the parent bar counts the herd", `document.querySelector(`+jsString(herd+" svg.lane .parent.herd")+`).dataset.childrenWatchers === '4'`)
	tb.until("the legend explains the herd", `/watches all children \(herd\)/.test(document.querySelector('#legend [data-legend=children]').textContent)`)

	// Count the notifications animated along the watch arrows: every dot
	// that enters each lane.
	tb.run(`window.__dots = {herd: 0, predecessor: 0}; for (const s of ['herd', 'predecessor']) new MutationObserver(ms => { for (const m of ms) for (const n of m.addedNodes) if (n.classList && n.classList.contains('notify-dot')) window.__dots[s]++; }).observe(document.querySelector('.run[data-strategy=' + s + '] svg.lane'), {childList: true});`)
	tb.key(kb.ArrowRight)
	checkStep(t, tb, pred, 6, predecessorWatch)
	checkStep(t, tb, herd, 6, herdWatch(path))
	if got := narration(tb, pred); !strings.Contains(got, "only LOCK2, which watched it, was notified") {
		t.Errorf("predecessor step 6 narration %q: only LOCK2 should be notified", got)
	}
	if got := narration(tb, herd); !strings.Contains(got, "every client watching the children was notified") {
		t.Errorf("herd step 6 narration %q: every waiter should be notified", got)
	}
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
	// The meters' bars are scaled to N(N−1)/2 = 10 for five clients (or to
	// the larger run's figure), not each to its own value: one release to
	// one waiter is a short bar, not a full one.
	hv, pv := meter(herd, "notifications"), meter(pred, "notifications")
	for _, tc := range []struct {
		scope string
		v     int
	}{{herd, hv}, {pred, pv}} {
		bar := `document.querySelector(` + jsString(tc.scope+" .meter[data-meter=notifications] .bar") + `)`
		want := fmt.Sprintf("%d %d%%", max(10, hv, pv), int(100*float64(tc.v)/float64(max(10, hv, pv))+0.5))
		if got := eval[string](tb, bar+`.dataset.max + ' ' + `+bar+`.firstElementChild.style.width`); got != want {
			t.Errorf("%s notifications bar (value %d): max and width %q, want %q", tc.scope, tc.v, got, want)
		}
		if title := eval[string](tb, bar+`.title`); !strings.Contains(title, "of") {
			t.Errorf("%s bar title %q does not say what it is scaled to", tc.scope, title)
		}
	}
	if pv != 1 {
		t.Errorf("predecessor notifications after one release: %d, want 1", pv)
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
	checkStep(t, tb, scope, 2, predecessorWatch)
	nodes := eval[map[string]string](tb, nodesJS(scope))

	tb.click("click LOCK1", scope+` .client[data-client="LOCK1"]`)
	tb.until("its details", `document.querySelector(`+jsString(scope+" .client-pane")+`).textContent.includes(`+jsString(nodes["LOCK1"])+`) && /0x[0-9a-f]+/.test(document.querySelector(`+jsString(scope+" .client-pane")+`).textContent)`)
	tb.click("crash it", scope+` .client-pane button[data-action=crash]`)
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

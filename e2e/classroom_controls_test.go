package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// clientStates maps each client of a run to its state, as its button says.
func clientStates(tb *tab, scope string) map[string]string {
	return eval[map[string]string](tb, `Object.fromEntries([...document.querySelectorAll(`+jsString(scope+" .client")+`)].map(b => [b.dataset.client, b.dataset.state]))`)
}

// holdersJS lists the data labels of a run's holding nodes, in queue order.
func holdersJS(scope string) string {
	return `[...document.querySelectorAll(` + jsString(scope+` svg.lane [data-node][data-state=holding]`) + `)].map(g => g.querySelector('.label.data').textContent).join(',')`
}

// settled is true once a run shows step k and no step is in progress.
func settled(scope string, k int) string {
	return fmt.Sprintf(`document.querySelector(%s) && document.querySelector(%s).dataset.step === '%d' && document.querySelector(%s).dataset.busy === 'false' && document.body.dataset.busy === 'false'`,
		jsString(scope), jsString(scope), k, jsString(scope))
}

// A shared link replays the run it was copied from: the teacher's actions
// (a crash, an added writer), at the steps they were taken, then the step.
func TestClassroomShareLinkReplaysActions(t *testing.T) {
	need(t)
	srv := startServer(t, "--sim")
	tb := newTab(t)
	tb.open(srv.URL + "/sim?scenario=lock1-5&strategy=predecessor&step=2")
	scope := run("predecessor")
	checkStep(t, tb, scope, 2, predecessorWatch)

	tb.click("click LOCK1", scope+` .client[data-client="LOCK1"]`)
	tb.click("crash it", scope+` .client-pane button[data-action=crash]`)
	tb.until("LOCK1 crashed", `document.querySelector(`+jsString(scope+` .client[data-client="LOCK1"]`)+`).dataset.state === 'crashed'`)
	tb.until("after the crash", settled(scope, 3))
	// The crash cut the rest of the plan (LOCK1 can no longer release), so
	// each added writer takes the next free name: LOCK3, then LOCK4.
	tb.key("w")
	tb.until("a writer added", settled(scope, 4)+` && document.querySelectorAll(`+jsString(scope+" .client")+`).length === 3`)
	tb.key("w")
	tb.until("another", settled(scope, 5)+` && document.querySelectorAll(`+jsString(scope+" .client")+`).length === 4`)
	tb.key(kb.ArrowLeft)
	tb.until("one step back", settled(scope, 4))
	// The clients' states and the lane are read in three evaluations: wait
	// until both show the step's holder, so that none reads a pane
	// mid-redraw (CI once read LOCK2 waiting beside a lane of LOCK2 holding).
	tb.until("LOCK2 holding in the lane and in its button", holdersJS(scope)+` === '“LOCK2”' && document.querySelector(`+jsString(scope+` .client[data-client="LOCK2"]`)+`).dataset.state === 'holding'`)

	step := eval[int](tb, `Number(document.querySelector(`+jsString(scope)+`).dataset.step)`)
	states := clientStates(tb, scope)
	holders := eval[string](tb, holdersJS(scope))
	nodes := eval[int](tb, `document.querySelectorAll(`+jsString(scope+" svg.lane [data-node]")+`).length`)
	tb.until("the URL carries the actions", `new URLSearchParams(location.search).get('acts') === '2:LOCK1:crash,3::add-writer,4::add-writer' && new URLSearchParams(location.search).get('step') === '4'`)
	url := eval[string](tb, `location.href`)

	// Share: open the link in a new tab.
	tb2 := newTab(t)
	tb2.open(url)
	tb2.until("the replay reaches the step", settled(scope, step)+fmt.Sprintf(` && document.querySelectorAll(%s).length === %d`, jsString(scope+" .client"), len(states)))
	if holders != "“LOCK2”" || len(states) != 3 || states["LOCK1"] != "crashed" || states["LOCK3"] != "waiting" {
		t.Fatalf("before sharing: holders %s, clients %v; want LOCK2 holding, LOCK1 crashed, LOCK3 waiting", holders, states)
	}
	if got := clientStates(tb2, scope); fmt.Sprint(got) != fmt.Sprint(states) {
		t.Errorf("shared link: clients %v, the original shows %v", got, states)
	}
	if got := eval[string](tb2, holdersJS(scope)); got != holders {
		t.Errorf("shared link: holders %q, the original shows %q", got, holders)
	}
	if got := eval[int](tb2, `document.querySelectorAll(`+jsString(scope+" svg.lane [data-node]")+`).length`); got != nodes {
		t.Errorf("shared link: %d nodes drawn, the original %d", got, nodes)
	}
	if msg := eval[string](tb2, `document.getElementById('sim-error').textContent`); msg != "" {
		t.Errorf("shared link: error %q", msg)
	}
	tb2.until("its URL is the same", `location.href === `+jsString(url))
	// And the replayed run goes on from there like the original: one step on
	// is the second added writer.
	tb2.key(kb.ArrowRight)
	tb2.until("step 5 on the replay", settled(scope, 5)+` && document.querySelector(`+jsString(scope+` .client[data-client="LOCK4"]`)+`).dataset.state === 'waiting'`)
}

// The keys keep working after a select was used: changing the strategy with
// the keyboard hands the focus back to the page.
func TestClassroomKeysAfterSelect(t *testing.T) {
	need(t)
	srv := startServer(t, "--sim")
	tb := newTab(t)
	tb.open(srv.URL + "/sim?scenario=lock1-5&strategy=predecessor")
	tb.until("the run", settled(run("predecessor"), 0))
	tb.do("choose herd", chromedp.SendKeys(chromedp.CSS("#strategy"), "h"))
	herd := run("herd")
	tb.until("the herd run", settled(herd, 0)+` && document.getElementById('strategy').value === 'herd'`)
	if tag := eval[string](tb, `document.activeElement ? document.activeElement.tagName : ''`); tag == "SELECT" {
		t.Errorf("the select kept the focus")
	}
	tb.key(kb.ArrowRight)
	tb.until("→ stepped", settled(herd, 1))
	tb.key(kb.ArrowRight)
	tb.until("→ stepped again", settled(herd, 2))
	tb.key(kb.ArrowLeft)
	tb.until("← stepped back", settled(herd, 1))
	tb.key(" ")
	tb.until("Space plays", `document.body.dataset.playing === 'true'`)
	tb.key(" ")
	tb.until("Space pauses", `document.body.dataset.playing === 'false'`)
}

// The timeline scrubs: dragging the slider or clicking a tick shows that
// step; the speed control is logarithmic and reaches the simulator.
func TestClassroomScrubAndSpeed(t *testing.T) {
	need(t)
	srv := startServer(t, "--sim")
	tb := newTab(t)
	tb.open(srv.URL + "/sim?scenario=lock1-5&strategy=predecessor")
	scope := run("predecessor")
	tb.until("the run", settled(scope, 0))
	tb.until("the timeline knows the plan", `document.getElementById('scrub').max === '10'`)

	scrub := func(k int) {
		tb.run(fmt.Sprintf(`{ const s = document.getElementById('scrub'); s.value = '%d'; s.dispatchEvent(new Event('input', {bubbles: true})); s.dispatchEvent(new Event('change', {bubbles: true})); }`, k))
	}
	scrub(4)
	checkStep(t, tb, scope, 4, predecessorWatch)
	scrub(1)
	checkStep(t, tb, scope, 1, predecessorWatch)
	tb.until("the slider follows", `document.getElementById('scrub').value === '1'`)
	tb.click("click tick 7", `#ticks button[data-step="7"]`)
	checkStep(t, tb, scope, 7, predecessorWatch)
	tb.until("tick 7 is current", `document.querySelector('#ticks button[data-step="7"]').classList.contains('current')`)

	speed := func() float64 {
		return eval[float64](tb, `Number(document.querySelector('.run').dataset.speed)`)
	}
	tb.key("]")
	tb.key("]")
	tb.until("2× shown", `document.getElementById('speed-out').textContent === '2×'`)
	tb.until("2× sent", `document.querySelector('.run').dataset.speed === '2'`)
	tb.run(`{ const s = document.getElementById('speed'); s.value = '-2'; s.dispatchEvent(new Event('input', {bubbles: true})); }`)
	tb.until("¼× shown", `document.getElementById('speed-out').textContent === '0.25×'`)
	tb.until("¼× sent", `document.querySelector('.run').dataset.speed === '0.25'`)
	tb.key("[")
	tb.key("[")
	tb.until("⅛×", `document.querySelector('.run').dataset.speed === '0.125' && document.getElementById('speed-out').textContent === '0.125×'`)
	if s := speed(); s != 0.125 {
		t.Errorf("speed %v, want 0.125", s)
	}
}

// Release and pause from a client's pane: a release passes the lock on and
// wakes only the watcher; a paused holder keeps holding while its session
// lives, then loses the lock when the session expires.
func TestClassroomReleaseAndPause(t *testing.T) {
	need(t)
	srv := startServer(t, "--sim")
	tb := newTab(t)
	tb.open(srv.URL + "/sim?scenario=lock1-5&strategy=predecessor&step=3")
	scope := run("predecessor")
	checkStep(t, tb, scope, 3, predecessorWatch)

	tb.click("click LOCK1", scope+` .client[data-client="LOCK1"]`)
	tb.until("its pane", `document.querySelector(`+jsString(scope+` .client-pane button[data-action=release]`)+`)`)
	tb.click("release it", scope+` .client-pane button[data-action=release]`)
	tb.until("LOCK1 released", settled(scope, 4)+` && document.querySelector(`+jsString(scope+` .client[data-client="LOCK1"]`)+`).dataset.state === 'released'`)
	tb.until("LOCK2 holds", holdersJS(scope)+` === '“LOCK2”'`)
	if got := narration(tb, scope); !strings.Contains(got, "LOCK1 released") || !strings.Contains(got, "only LOCK2, which watched it, was notified") {
		t.Errorf("release narration %q: should say only LOCK2 was notified", got)
	}
	if got := eval[int](tb, `document.querySelectorAll(`+jsString(scope+" svg.lane [data-node]")+`).length`); got != 2 {
		t.Errorf("%d nodes after the release, want 2 (LOCK2 holding, LOCK3 waiting)", got)
	}

	tb.click("click LOCK2", scope+` .client[data-client="LOCK2"]`)
	tb.until("its pane", `document.querySelector(`+jsString(scope+` .client-pane`)+`).textContent.includes('LOCK2')`)
	tb.click("pause it", scope+` .client-pane button[data-action=pause]`)
	// The step lasts until its session expires (the State shows it busy
	// meanwhile); then LOCK3 holds, and LOCK2, back from its pause, still
	// believes it holds (stale).
	tb.until("the session expired", settled(scope, 5)+` && `+holdersJS(scope)+` === '“LOCK3”'`)
	tb.until("the pause is in the events", `[...document.querySelectorAll(`+jsString(scope+` .events li[data-step="5"]`)+`)].some(li => li.textContent.includes('pause'))`)
	if st := clientStates(tb, scope)["LOCK2"]; st != "stale" {
		t.Errorf("LOCK2 after its pause outlasted its session: %q, want stale", st)
	}
	if got := narration(tb, scope); !strings.Contains(got, "expired") {
		t.Errorf("pause narration %q does not say the session expired", got)
	}
}

// A link to a scenario the server does not have says so, and names the
// scenario shown instead, rather than quietly showing the first one.
func TestClassroomUnknownScenarioSaysSo(t *testing.T) {
	need(t)
	srv := startServer(t, "--sim")
	tb := newTab(t)
	tb.open(srv.URL + "/sim?scenario=nope")
	tb.until("the run", settled(run("predecessor"), 0))
	tb.until("the error line", `!document.getElementById('sim-error').hidden`)
	msg := eval[string](tb, `document.getElementById('sim-error').textContent`)
	if !strings.Contains(msg, `unknown scenario "nope"`) || !strings.Contains(msg, "instead") {
		t.Errorf("error line %q: want it to name the unknown scenario and what is shown instead", msg)
	}
}

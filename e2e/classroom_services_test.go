package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp/kb"
)

// The classroom's one run on a service other than ZooKeeper.
const serviceRun = ".run"

// playToEnd opens a scenario of any service in the classroom and plays it
// to its end (End), as a teacher would.
func playToEnd(t *testing.T, tb *tab, base, scenario string) {
	t.Helper()
	tb.open(base + "/sim?scenario=" + scenario)
	tb.until(scenario+"'s run", settled(serviceRun, 0)+` && document.getElementById('scenario').value === `+jsString(scenario))
	tb.key(kb.End)
	tb.until(scenario+" played to its end", `document.getElementById('step-info').textContent.includes('done') && `+
		`document.querySelector('#ticks button.current') && document.body.dataset.busy === 'false' && `+
		`document.querySelector('.run').dataset.step === document.querySelector('.run').dataset.steps`)
	if msg := eval[string](tb, `document.getElementById('sim-error').textContent`); msg != "" {
		t.Errorf("%s: error %q", scenario, msg)
	}
}

// seekTo clicks step k's mark on the timeline and waits for the run to
// show it.
func seekTo(t *testing.T, tb *tab, k int) {
	t.Helper()
	tb.click(fmt.Sprintf("click step %d's mark", k), fmt.Sprintf(`#ticks button[data-step="%d"]`, k))
	tb.until(fmt.Sprintf("step %d shown", k), settled(serviceRun, k))
}

// doneTicks counts the step marks drawn as done (a tick in the colour of
// the step's event) and those drawn ahead.
func doneTicks(tb *tab) (done, ahead int) {
	got := eval[[]int](tb, `(() => { const b = [...document.querySelectorAll('#ticks button')]; `+
		`const done = b.filter(x => getComputedStyle(x, '::after').content.includes('✓')).length; return [done, b.length - done]; })()`)
	return got[0], got[1]
}

// Redis in the browser: the watchdog's saw-tooth, Redlock's five masters,
// the spin lock's polling waiters as pulses and redsync's give-ups.
func TestClassroomServicesRedis(t *testing.T) {
	need(t)
	srv := startServer(t, "--sim")
	tb := newTab(t)

	playToEnd(t, tb, srv.URL, "redis-watchdog")
	if done, ahead := doneTicks(tb); done != 14 || ahead != 0 {
		t.Errorf("step marks at the end: %d ticked, %d ahead; want all 14 ticked", done, ahead)
	}
	serviceWords(t, tb, "retries SET NX")
	ttl := `document.querySelector('.run figure.ttl svg')`
	rises := eval[int](tb, `Number(`+ttl+`?.dataset.rises ?? -1)`)
	points := eval[int](tb, `Number(`+ttl+`?.dataset.points ?? -1)`)
	renewals := eval[int](tb, `document.querySelectorAll('.run figure.ttl circle.renewal').length`)
	if rises < 2 || renewals != rises || points < 20 {
		t.Errorf("the ttl line: %d points, %d rises, %d renewal marks; want a saw-tooth renewed at least twice", points, rises, renewals)
	}
	holders := eval[string](tb, `[...new Set([...document.querySelectorAll('.run figure.ttl polyline.held')].map(l => l.dataset.holder))].join(',')`)
	if holders != "C1,C2,C3,C4" {
		t.Errorf("the ttl line's holders: %q, want C1,C2,C3,C4 in turn", holders)
	}
	seekTo(t, tb, 3)
	if done, ahead := doneTicks(tb); done != 3 || ahead != 11 {
		t.Errorf("step marks at step 3: %d ticked, %d ahead; want 3 and 11", done, ahead)
	}

	playToEnd(t, tb, srv.URL, "redis-redlock-restart")
	// Step 9 ends the hazard; the delayed restart that fixes it follows.
	seekTo(t, tb, 9)
	masters := eval[string](tb, `[...document.querySelectorAll('.run .masters[data-masters="5"] .master')].map(m => m.dataset.master + ':' + (m.dataset.client || (m.dataset.up === 'true' ? '-' : 'down'))).join(' ')`)
	if masters != "M1:C1 M2:C1 M3:C2 M4:C2 M5:C2" {
		t.Errorf("masters at step 9: %q, want C1's copies on M1, M2 and C2's on M3–M5", masters)
	}
	if n := eval[int](tb, `document.querySelectorAll('.run .master.majority').length`); n != 3 {
		t.Errorf("%d masters marked as a majority's, want C2's 3", n)
	}
	seekTo(t, tb, 2)
	masters = eval[string](tb, `[...document.querySelectorAll('.run .master')].map(m => m.dataset.master + ':' + (m.dataset.up === 'true' ? 'up' : m.querySelector('.who').textContent)).join(' ')`)
	if masters != "M1:up M2:up M3:up M4:down M5:down" {
		t.Errorf("masters after M4 and M5 stop: %q", masters)
	}

	playToEnd(t, tb, srv.URL, "redis-spin-cost")
	pulses := eval[map[string]int](tb, `Object.fromEntries([...document.querySelectorAll('.run .client')].filter(b => b.querySelector('.pulses')).map(b => [b.dataset.client, Number(b.querySelector('.pulses').dataset.retries)]))`)
	if len(pulses) != 19 {
		t.Errorf("%d clients drawn polling, want the 19 waiters left after the hand-off: %v", len(pulses), pulses)
	}
	for name, n := range pulses {
		dots := eval[int](tb, `document.querySelectorAll('.run .client[data-client=`+jsString(name)+`] .pulses i.pulse').length`)
		if !strings.HasPrefix(name, "W") || n < 10 || dots != min(n, 8) {
			t.Errorf("%s: %d failed tries, %d pulses drawn", name, n, dots)
		}
	}
	states := clientStates(tb, serviceRun)
	for _, r := range []string{"R1", "R2", "R3"} {
		if states[r] != "gave-up" {
			t.Errorf("%s: %q, want gave-up", r, states[r])
		}
	}
	tb.click("open the event log", `.run details:last-of-type summary`)
	gaveUp := eval[[]string](tb, `[...document.querySelectorAll('.run .events li[data-kind="give-up"]')].map(li => li.textContent)`)
	if len(gaveUp) != 3 {
		t.Errorf("the event log shows %d give-ups, want R1, R2, R3's: %q", len(gaveUp), gaveUp)
	}
	for _, text := range gaveUp {
		if !strings.Contains(text, "gave up after 32 tries") {
			t.Errorf("give-up in the log: %q", text)
		}
	}
	costs := eval[[]string](tb, `[...document.querySelectorAll('.run .events li[data-kind="queue-cost"]')].map(li => li.textContent)`)
	if len(costs) != 2 || !strings.Contains(costs[0], "queued on ZooKeeper") || !strings.Contains(costs[1], "queued on etcd") {
		t.Errorf("the queue costs in the log: %q, want ZooKeeper's and etcd's", costs)
	}
	if n := eval[int](tb, `Number(document.querySelector('.run [data-meter=serverCalls]').dataset.value)`); n == 0 {
		t.Errorf("the server-counted meter reads 0 after the waiters spun")
	}
}

// TestClassroomRedisPauseWords: Redis's pause in the browser. Its warning
// says how long the two holders overlapped, in the sentence the CLI prints
// (Violation.Said), and the server-counted meter, at 0 beside the failed
// tries, says why the server counts no waiters.
func TestClassroomRedisPauseWords(t *testing.T) {
	need(t)
	srv := startServer(t, "--sim")
	tb := newTab(t)
	playToEnd(t, tb, srv.URL, "redis-px-pause")
	warning := eval[string](tb, `document.querySelector('.run .violation[data-kind="unfenced-write"]')?.textContent ?? ''`)
	if !strings.Contains(warning, "C1") || !regexp.MustCompile(`; it lasted \d+\.\ds on the run's clock$`).MatchString(warning) {
		t.Errorf("the pause's warning: %q, want how long it lasted, as the CLI says it", warning)
	}
	meter := eval[[]string](tb, `(() => { const m = document.querySelector('.run [data-meter=serverCalls]'); const r = document.querySelector('.run [data-meter=retries]'); return [m.dataset.value, r.dataset.value, m.textContent]; })()`)
	if meter[0] != "0" || meter[1] == "0" || !strings.Contains(meter[2], "keeps no queue, so it counts no waiters") || !strings.Contains(meter[2], "the clients' own") {
		t.Errorf("server-counted %s beside failed tries %s, saying %q: want 0 beside the tries, and why", meter[0], meter[1], meter[2])
	}
	// C1, back from its pause, is described in words every service shares.
	seekTo(t, tb, 7)
	tb.click("click C1", serviceRun+` .client[data-client="C1"]`)
	tb.until("C1's pane", `document.querySelector('.run .client-pane')?.textContent.includes('C1')`)
	if pane := eval[string](tb, `document.querySelector('.run .client-pane').textContent`); !strings.Contains(pane, "outlasted its hold on the lock (its session, lease or key)") || strings.Contains(pane, "outlasted its session") {
		t.Errorf("C1's pane: %q, want its pause said in every service's words", pane)
	}
	// The home page's cards speak of every service.
	tb.open(srv.URL + "/")
	cards := eval[string](tb, `document.querySelector('.cards').textContent`)
	for _, want := range []string{"ZooKeeper, Redis, etcd or PostgreSQL", "Teach how distributed locks work", "session, lease or key"} {
		if !strings.Contains(cards, want) {
			t.Errorf("the home page's cards %q: want %q", cards, want)
		}
	}
	if strings.Contains(cards, "whom its session really watches") {
		t.Errorf("the home page's cards %q: ZooKeeper's words for every lock", cards)
	}
}

// queuedAt reads which clients a run draws as queued on the server, and
// as polling.
func queuedAt(tb *tab) (queued, polling []string) {
	got := eval[[][]string](tb, `[[...document.querySelectorAll('.run .client')].filter(b => b.querySelector('.queued')).map(b => b.dataset.client + (b.querySelector('.queued').textContent.includes('after') ? '>' + b.querySelector('.queued').textContent.split('after ')[1] : '')), `+
		`[...document.querySelectorAll('.run .client .pulses')].map(p => p.closest('.client').dataset.client)]`)
	return got[0], got[1]
}

// queuedService plays a queue service's scenario to its end, then goes
// back to step k, where the waiters must be drawn as want says (name, or
// name>predecessor when the server names whom each waits after) and none
// as polling.
func queuedService(t *testing.T, scenario string, steps, k int, want string) {
	need(t)
	srv := startServer(t, "--sim")
	tb := newTab(t)
	playToEnd(t, tb, srv.URL, scenario)
	if done, ahead := doneTicks(tb); done != steps || ahead != 0 {
		t.Errorf("step marks at the end: %d ticked, %d ahead; want all %d ticked", done, ahead, steps)
	}
	seekTo(t, tb, k)
	queued, polling := queuedAt(tb)
	if strings.Join(queued, " ") != want || len(polling) != 0 {
		t.Errorf("at step %d: queued %v, polling %v; want %s queued, nobody polling", k, queued, polling, want)
	}
	if n := eval[int](tb, `Number(document.querySelector('.run [data-meter=commands]').dataset.value)`); n == 0 {
		t.Errorf("the requests meter reads 0 with four clients in")
	}
	serviceWords(t, tb, "queue")
	// Fencing is offered where the recipe gives a token (etcd's create
	// revision), not on a PostgreSQL lock, which gives none: there the box
	// is off and says why.
	fencing := eval[[]string](tb, `[String(document.getElementById('fencing').disabled), String(document.getElementById('fencing').checked), document.getElementById('fencing').title]`)
	if strings.HasPrefix(scenario, "pg-") != (fencing[0] == "true") || fencing[0] == "true" && (fencing[1] != "false" || !strings.Contains(fencing[2], "no fencing token")) {
		t.Errorf("%s: fencing disabled %s, checked %s, title %q: want it offered only where the recipe gives a token", scenario, fencing[0], fencing[1], fencing[2])
	}
}

// serviceWords: another service's run is named for its service and says
// how its waiters wait beside the disabled strategy control, once (not
// again as the run's title), with none of ZooKeeper's watch-strategy words.
func serviceWords(t *testing.T, tb *tab, want string) {
	t.Helper()
	got := eval[[]string](tb, `[document.querySelector('.run .strategy').textContent, document.querySelector('.run .run-title').textContent, document.getElementById('strategy-fixed').textContent, String(document.getElementById('strategy').disabled)]`)
	name, title, note, disabled := got[0], got[1], got[2], got[3]
	if name == "predecessor" || strings.Contains(title, "predecessor") || strings.Contains(title, "watches one node") {
		t.Errorf("run named %q titled %q: ZooKeeper's strategy words on another service", name, title)
	}
	if !strings.Contains(note, want) || strings.Contains(title, want) || disabled != "true" {
		t.Errorf("title %q, note %q, strategy disabled %s: want the service's waiting words (with %q) once, beside the disabled control", title, note, disabled, want)
	}
}

// etcd in the browser: the waiters queue by create revision, each after
// its predecessor, and nobody polls.
func TestClassroomServicesEtcd(t *testing.T) {
	queuedService(t, "etcd-mutex-queue", 11, 5, "C2>C1 C3>C2 C4>C3")
}

// PostgreSQL in the browser: the waiters sleep in the server's lock
// manager, drawn as queued; nobody polls.
func TestClassroomServicesPostgres(t *testing.T) {
	queuedService(t, "pg-advisory-fifo", 11, 5, "C2 C3 C4")
}

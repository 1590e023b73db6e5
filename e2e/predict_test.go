package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// quizAsk is the selector of a run's questions about step k.
func quizAsk(scope string, k int) string {
	return fmt.Sprintf(`%s .quiz-ask[data-step="%d"]`, scope, k)
}

// answerQuiz picks choices for question q of step k and sends the answer.
func answerQuiz(tb *tab, scope string, k int, q string, choices ...string) {
	tb.t.Helper()
	ask := quizAsk(scope, k)
	tb.until(fmt.Sprintf("step %d's questions", k), `document.querySelector(`+jsString(ask)+`)`)
	// Clicked by the page's own click(): a frame may redraw the box
	// between a query and a pointer's click (the picks outlive it).
	for _, c := range choices {
		sel := jsString(fmt.Sprintf(`%s fieldset[data-q=%q] button[data-choice=%q]`, ask, q, c))
		tb.until("choice "+c, `document.querySelector(`+sel+`)`)
		tb.run(`document.querySelector(` + sel + `).click()`)
		tb.until("picked "+c, `document.querySelector(`+sel+`).getAttribute('aria-pressed') === 'true'`)
	}
	send := jsString(ask + ` .quiz-send`)
	tb.until("the answer may be sent", `!document.querySelector(`+send+`).disabled`)
	tb.run(`document.querySelector(` + send + `).click()`)
}

// markOf is how a run's reveal of step k marks question q: right, wrong or
// none (” while not shown).
func markOf(tb *tab, scope string, k int, q string) string {
	return eval[string](tb, fmt.Sprintf(`(document.querySelector(%s) || {dataset: {}}).dataset.mark || ''`,
		jsString(fmt.Sprintf(`%s .quiz-reveal[data-step="%d"] .quiz-row[data-q=%q]`, scope, k, q))))
}

// Predict then reveal on LOCK1–LOCK5, in one browser that drives its run:
// with q, the page asks step 1's question (who holds after LOCK1 joins) and
// shows neither the step's narration nor its state; answering reveals the
// step, with the answer marked.
func TestPredictThenReveal(t *testing.T) {
	need(t)
	srv := startServer(t, "--sim")
	tb := newTab(t)
	tb.open(srv.URL + "/sim?scenario=lock1-5&strategy=predecessor")
	scope := run("predecessor")
	tb.until("step 0", settled(scope, 0))
	tb.key("q")
	tb.until("predict mode asks step 1", `document.body.dataset.predict === 'true' && document.querySelector(`+jsString(quizAsk(scope, 1))+`)`)
	if got := eval[string](tb, `document.querySelector(`+jsString(quizAsk(scope, 1)+` legend`)+`).textContent`); !strings.Contains(got, "Who holds the lock after this step?") {
		t.Errorf("step 1's question: %q", got)
	}
	if n := eval[int](tb, `document.querySelectorAll(`+jsString(scope+` svg.lane [data-node]`)+`).length`); n != 0 {
		t.Errorf("before answering, the lane draws %d nodes: step 1's state is shown", n)
	}
	answerQuiz(tb, scope, 1, "holds", "LOCK1")
	tb.until("step 1 revealed", settled(scope, 1)+` && document.querySelector(`+jsString(scope+` .quiz-reveal[data-step="1"]`)+`)`)
	if m := markOf(tb, scope, 1, "holds"); m != "right" {
		t.Errorf("LOCK1 holds after step 1, answered LOCK1: marked %q, want right", m)
	}
	if got := narration(tb, scope); got == "" {
		t.Errorf("step 1 revealed without its narration")
	}
	tb.until("step 2 asked", `document.querySelector(`+jsString(quizAsk(scope, 2))+`)`)
	answerQuiz(tb, scope, 2, "holds", "LOCK1", "LOCK2")
	tb.until("step 2 revealed", settled(scope, 2)+` && document.querySelector(`+jsString(scope+` .quiz-reveal[data-step="2"]`)+`)`)
	if m := markOf(tb, scope, 2, "holds"); m != "wrong" {
		t.Errorf("LOCK2 waits after step 2, answered LOCK1 and LOCK2: marked %q, want wrong", m)
	}
	if got := eval[string](tb, `document.querySelector(`+jsString(scope+` .quiz-reveal[data-step="2"] .quiz-right`)+`).textContent`); got != "LOCK1" {
		t.Errorf("step 2's right answer: %q, want LOCK1", got)
	}
	tb.until("the URL keeps predict mode", `new URLSearchParams(location.search).get('predict') === '1'`)
}

// A class predicts the lecturer's run: two students, each in a browser of
// its own, open the run's student link. They see no step controls and are
// told why; when the lecturer steps, each is held at the step it answered
// (the page shows neither the new step's narration nor its state) until it
// answers; then the step is revealed and marked, and the lecturer's page
// counts the class's answers per choice.
func TestPredictAClass(t *testing.T) {
	need(t)
	srv := startServer(t, "--sim")
	lecturer := newTab(t)
	lecturer.open(srv.URL + "/sim?scenario=lock1-5&strategy=predecessor&predict=1")
	scope := run("predecessor")
	lecturer.until("step 0, asked", settled(scope, 0)+` && document.querySelector(`+jsString(quizAsk(scope, 1))+`)`)
	lecturer.key(kb.ArrowRight)
	lecturer.until("step 1", settled(scope, 1))
	id := eval[string](lecturer, `document.querySelector(`+jsString(scope)+`).dataset.run`)

	student := func() *tab {
		tb := newTab(t, chromedp.WithNewBrowserContext())
		tb.open(srv.URL + "/sim?run=" + id + "&predict=1")
		tb.until("the run joined at step 1", `document.querySelector('.run') && document.querySelector('.run').dataset.step === '1' && document.querySelector(`+jsString(quizAsk(".run", 2))+`)`)
		if hidden := eval[bool](tb, `['step', 'play', 'back', 'add-reader', 'restart', 'run-list', 'export-svg'].every(id => document.getElementById(id).hidden)`); !hidden {
			t.Errorf("a student's page shows the step controls, the run list (every run's newest state) or the export (every recorded step)")
		}
		if note := eval[string](tb, `document.getElementById('watch-note').hidden ? '' : document.getElementById('watch-note').textContent`); !strings.Contains(note, "watching run "+id) || !strings.Contains(note, "answer its questions") {
			t.Errorf("a student's page says %q, want why it has no controls", note)
		}
		return tb
	}
	alice, bob := student(), student()

	lecturer.key(kb.ArrowRight)
	lecturer.until("step 2", settled(scope, 2))
	step2 := narration(lecturer, scope)
	for _, tb := range []*tab{alice, bob} {
		tb.until("held at step 1", `document.querySelector('.run').dataset.held === 'true' && document.querySelector('.run').dataset.step === '1'`)
		if txt := eval[string](tb, `document.body.innerText`); strings.Contains(txt, step2) {
			t.Errorf("a student who has not answered sees step 2's narration %q", step2)
		}
		if n := eval[int](tb, `document.querySelectorAll('.run svg.lane [data-node]').length`); n != 1 {
			t.Errorf("a held student's lane draws %d nodes, want step 1's one", n)
		}
	}
	answerQuiz(alice, ".run", 2, "holds", "LOCK1")
	answerQuiz(bob, ".run", 2, "holds", "LOCK1", "LOCK2")
	for _, s := range []struct {
		tb   *tab
		mark string
	}{{alice, "right"}, {bob, "wrong"}} {
		s.tb.until("step 2 revealed", `document.querySelector('.run').dataset.step === '2' && document.querySelector('.run').dataset.held === 'false' && document.querySelector('.run .quiz-reveal[data-step="2"]')`)
		if m := markOf(s.tb, ".run", 2, "holds"); m != s.mark {
			t.Errorf("a student's step 2: marked %q, want %s", m, s.mark)
		}
		if got := narration(s.tb, ".run"); got != step2 {
			t.Errorf("revealed narration %q, want the lecturer's %q", got, step2)
		}
		s.tb.run(`document.querySelector('.run .client[data-client="LOCK1"]').click()`)
		s.tb.until("LOCK1's pane", `document.querySelector('.run .client-pane .acts')`)
		if shown := eval[bool](s.tb, `getComputedStyle(document.querySelector('.run .client-pane .acts')).display !== 'none' || !document.getElementById('scrub').disabled`); shown {
			t.Errorf("a student's page offers a client's acts or the timeline's scrubbing")
		}
	}
	counts := `document.querySelector(` + jsString(scope+` .quiz-reveal[data-step="2"] .quiz-row[data-q="holds"] .quiz-counts`) + `)`
	lecturer.until("the class's counts", counts+` && `+counts+`.textContent.includes('1 said LOCK1, LOCK2') && `+counts+`.textContent.includes('1 said LOCK1')`)
}

package views

import "maps"

// predictPhrases are the classroom's sentences of predict-then-reveal, of
// a run watched by someone who may not move it, and of an edited
// scenario's share link (static/sim-predict.js, sim.js), kept apart from
// classPhrases so the two can grow separately.
var predictPhrases = map[string]string{
	"predict.ask":      "Predict step {step} ({act}):",
	"predict.many":     " (pick every one; none: nobody)",
	"predict.send":     "answer",
	"predict.sent":     "answered ✓",
	"predict.answered": "{n} {n|browser has|browsers have} answered",
	"predict.held":     "The lecturer is at step {step}: answer to see the next step.",
	"predict.revealed": "Step {step}:",
	"predict.noAnswer": "(the step gave none)",
	"predict.youRight": "✓ you said {answer}",
	"predict.youWrong": "✗ you said {answer}",
	"predict.said":     "{n} said {answer}",
	"predict.failed":   "answer: {why}",
	"watching.note":    "You are watching run {id}: {why}",
	"watching.open":    "Run {id} is open to all: anyone may step it.",
	"runs.watch":       "student link",
	"runs.watchAria":   "a link for students to watch run {id} and predict its steps",
	// An edited scenario's share link (sim.js's reopenEdited).
	"editor.linkLost":    "this link names the edited scenario \"{want}\" without its JSON, so it cannot reopen it: showing {title} instead; load the scenario's file in the editor",
	"editor.linkRefused": "this link's edited scenario \"{want}\" could not be reopened: {why}",
}

func init() { maps.Copy(classPhrases, predictPhrases) }

package views

import "maps"

// predictPhrases are the classroom's sentences of predict-then-reveal and
// of a run watched by someone who may not move it (static/sim-predict.js,
// sim.js), kept apart from classPhrases so the two can grow separately.
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
}

func init() { maps.Copy(classPhrases, predictPhrases) }

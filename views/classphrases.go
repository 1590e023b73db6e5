package views

import "maps"

// classPhrases are the classroom's own sentences and labels, said by
// static/sim*.js as the lane's are (say, {x} a value, {n|one|many} a
// count's word). A service's classroom words a sentence in its own terms
// (lockservice.ClassroomWords.Say) and overrides one of these by key; the
// sentences only one service's runs show are its own alone.
var classPhrases = map[string]string{
	"run.aria":             "run: {name}",
	"run.ended":            "{name}: the run ended on the server; press restart for a new one",
	"run.unavailable":      "unavailable: {why}",
	"run.unavailableBadge": "unavailable",
	"run.startFailed":      "could not start the run: {why}",

	"side.fixed":     "every pane runs its own service's scenario with its own settings",
	"side.fixedNote": "side by side: {why}",
	"strategy.fixed": "{strategy}: {why}",

	"step.of":        "step {step} of {total}",
	"step.none":      "no run",
	"step.starting":  "starting…",
	"step.done":      " · done",
	"step.playing":   " · playing",
	"step.working":   " · working on {services}…",
	"step.next":      " · next: {act}",
	"step.forward":   "step forward (→)",
	"step.forwardTo": "step forward (→): {act}",
	"step.mark":      "step {step}: {what}",
	"step.recorded":  "step {step} (recorded)",
	"step.planned":   "step {step} (not played yet)",
	"play.play":      "▶ play",
	"play.pause":     "❚❚ pause",
	"play.ariaPlay":  "play",
	"play.ariaPause": "pause",
	"add.reader":     "+ reader",
	"add.client":     "+ client",

	"script.kept":    "What if? Off the script since step {from}: this branch still plays the script's {left} remaining {left|step|steps} after your acts. Back to the script (s) returns to step {from} without your acts.",
	"script.dropped": "What if? Off the script since step {from}: the script's {left} remaining {left|step|steps} no longer fit after your acts, so this branch ends with them. They are kept: back to the script (s) returns to step {from} and plays them.",
	"script.ended":   "What if? Off the script since step {from}, where it had ended. Back to the script (s) returns to step {from} without your acts.",

	"replay.failed":    "could not replay {act} at step {step}",
	"replay.link":      "shared link: {why}",
	"runs.failed":      "(could not list: {why})",
	"runs.count":       "({n})",
	"runs.mine":        "(this tab)",
	"runs.others":      "(started elsewhere: only its starter deletes it)",
	"runs.delete":      "delete",
	"runs.deleteAria":  "delete run {id} ({title})",
	"runs.line":        "{what} · step {step} of {total}{playing}",
	"scenario.unknown": "unknown scenario \"{want}\": showing {title} instead; pick one from the list",
	"scenario.none":    "none",
	"scenario.failed":  "could not load the scenarios: {why}",
	// The scenario editor's (sim-editor.js).
	"editor.ok":           "✓ {title}: {n} {n|step|steps}, checked as zklockviz sim --scenario checks a file",
	"editor.noDefinition": "this view runs several services' scenarios side by side: pick one scenario to edit it",
	"editor.option":       "{title} (edited)",
	"share.copied":        "link copied ✓",
	"share.byHand":        "link in the address bar",
	"share.link":          "share link",
}

// dashPhrases are the dashboard's sentences its script says: the one
// state the server cannot render (itself gone), and the watch form's
// answer (page.watching is the lock page's).
var dashPhrases = map[string]string{
	"dash.unreachable": "zklockviz server unreachable — retrying; nothing below is live",
	"dash.watchFailed": "Could not watch {path}: {why}",
}

// pagePhrases are the sections a page adds to the lane's phrases, by
// Page.Active: each page's script says only its own.
var pagePhrases = map[string]map[string]string{"sim": classPhrases, "dashboard": dashPhrases}

// Phrases are what a page of kind active (Page.Active) says: the lane's
// phrases and its own section.
func Phrases(active string) map[string]string {
	own := pagePhrases[active]
	if own == nil {
		return lanePhrases
	}
	out := maps.Clone(lanePhrases)
	maps.Copy(out, own)
	return out
}

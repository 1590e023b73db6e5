package simulator

import (
	"fmt"
	"strings"
)

// Said is an event's text told of its client, as a narration part: "C2
// writes …", and "C2's 2 s lease ran out …" for a text that begins with
// the client's "its" (the event log shows "C2: its 2 s lease …").
func Said(client, text string) string {
	if rest, ok := strings.CutPrefix(text, "its "); ok && client != "" {
		return client + "'s " + rest
	}
	return strings.TrimSpace(client + " " + text)
}

// Sentence joins a step's narration parts into one capitalised sentence
// with the step's note; with no parts it says what the action was. Every
// backend's narration ends here, so steps read alike whatever the service.
func Sentence(a Action, parts []string) string {
	if len(parts) == 0 {
		return fmt.Sprintf("%s %s", a.Client, a.Action)
	}
	s := strings.Join(parts, "; ") + "."
	if a.Note != "" {
		s += " (" + a.Note + ")"
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

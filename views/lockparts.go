package views

import "github.com/a-h/templ"

// LockPartSections are the parts of the lock page that follow the lock, one
// section at a time: the banner, the summary, the alerts, the
// table's page and the node's details (and the replay status of a past
// moment). Each is one element the page swaps in by itself, so a socket
// can bring only the sections a change changed.
func LockPartSections(l Lock) []templ.Component {
	out := []templ.Component{lockBanner(l), lockSummary(l), lockAlerts(l), QueueTable(l.Table), NodeDetailsView(l.Details)}
	if l.Replay.On {
		out = append(out, ReplayStatus(l.Replay))
	}
	return out
}

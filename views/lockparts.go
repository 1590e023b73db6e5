package views

import (
	"slices"

	"github.com/a-h/templ"
)

// PartSection is one section of the lock page's parts (LockPartSections):
// what it renders, and what tells whether it changed when that is not all
// of it (nil: all of it).
type PartSection struct {
	templ.Component
	Changed templ.Component
}

// LockPartSections are the parts of the lock page that follow the lock, one
// section at a time: the banner, the summary, the alerts, the table's page
// and its counts, and the node's details (and the replay status of a past
// moment). Each is one element the page swaps in by itself, so a socket
// can bring only the sections a change changed: the table's rows are
// told apart from its counts (QueueTableMeta), which move with every node
// that joins or leaves, past the page too.
func LockPartSections(l Lock) []PartSection {
	out := []PartSection{
		{Component: lockBanner(l)}, {Component: lockSummary(l)}, {Component: lockAlerts(l)},
		{Component: QueueTable(l.Table), Changed: QueueTable(queueTableRows(l.Table))},
		{Component: QueueTableMeta(l.Table)},
		{Component: NodeDetailsView(l.Details)},
	}
	if l.Replay.On {
		out = append(out, PartSection{Component: ReplayStatus(l.Replay)})
	}
	return out
}

// queueTableRows is the table's page without what QueueTableMeta says and
// without its clocks' words (the page ticks them from data-since), to tell
// whether its rows changed: not every second a row waits longer.
func queueTableRows(t Table) Table {
	t.Caption, t.Info, t.Pages = "", "", 0
	t.Rows = slices.Clone(t.Rows)
	for i := range t.Rows {
		r := &t.Rows[i]
		r.Time = ""
		if r.Lease != nil {
			l := *r.Lease
			l.Left = ""
			r.Lease = &l
		}
	}
	return t
}

package views

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// QueueText is a lock's whole state as plain text, for a bug report: the
// lock page's "copy as text" (GET /parts/lock-text). Its columns are the
// table's, in the table's words.
func QueueText(sv Service, s lockqueue.Snapshot, now time.Time) string {
	var b strings.Builder
	writeTextHeader(&b, sv, s)
	b.WriteString("\n")
	b.WriteString(pad(textRows(s, now)))
	b.WriteString("\n")
	if len(s.Alerts) > 0 {
		b.WriteString("\nalerts:\n")
		for _, a := range s.Alerts {
			fmt.Fprintf(&b, "- %s: %s", a.Kind, a.Message)
			if len(a.Nodes) > 0 {
				fmt.Fprintf(&b, " [%s]", strings.Join(a.Nodes, ", "))
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

// writeTextHeader writes the lock's own lines: its path, how it is read,
// and whatever is wrong with it or not shown in the table.
func writeTextHeader(b *strings.Builder, sv Service, s lockqueue.Snapshot) {
	fmt.Fprintf(b, "lock %s\n", s.Path)
	fmt.Fprintf(b, "recipe %s · revision %d · connection %s", cmp.Or(string(s.Recipe), "(none)"), s.Revision, s.Connection)
	if term, value := SourceWords(sv, s); term != "" {
		fmt.Fprintf(b, " · %s %s", term, value)
	}
	if s.Leases > 0 {
		fmt.Fprintf(b, " · leases %d", s.Leases)
	}
	fmt.Fprintf(b, " · updated %s\n", s.UpdatedAt.Format(time.RFC3339Nano))
	switch {
	case !s.Live():
		b.WriteString(unknownText(s) + "\n")
	case !s.Exists:
		b.WriteString(sv.Missing() + "\n")
	}
	if s.Error != "" {
		fmt.Fprintf(b, "error: %s\n", s.Error)
	}
	if s.InvisibleChildWatches > 0 {
		fmt.Fprintf(b, "children watches the server cannot list: %d\n", s.InvisibleChildWatches)
	}
	if s.AnonymousWaiters > 0 {
		fmt.Fprintf(b, "more waiting, unnamed: %d\n", s.AnonymousWaiters)
	}
	if s.Note != "" {
		fmt.Fprintf(b, "note: %s\n", s.Note)
	}
}

// neutralAt is where a service-neutral snapshot's extra columns go: after
// session, before data.
const neutralAt = 8

// textRows is the node table, its head first.
func textRows(s lockqueue.Snapshot, now time.Time) [][]string {
	neutral := s.UsesNeutralFields()
	head := []string{"#", "node", "mode", "state", "waits-for", "watches", "edge", "session", "data", "time", "alerts"}
	if neutral {
		head = slices.Insert(head, neutralAt, "order", "client", "lease", "blocked-by")
	}
	rows := [][]string{head}
	alerts := map[string][]string{}
	for _, a := range s.Alerts {
		for _, n := range a.Nodes {
			alerts[n] = append(alerts[n], a.Kind)
		}
	}
	prefix := childPrefix(s.Path)
	for i, n := range s.Nodes {
		state := stateClass(n)
		if n.Zombie {
			state += "(zombie)"
		}
		if n.StalledOn() != "" {
			state += "(stalled)"
		}
		waits := WaitsText(n)
		if neutral {
			var es []string
			for _, e := range waitEdges(n) {
				es = append(es, e.To+"("+e.Provenance+")")
			}
			waits = strings.Join(es, ",")
		}
		row := []string{
			fmt.Sprint(i + 1), n.Name, ModeLabel(n.Mode), state, cmp.Or(waits, "-"), cmp.Or(WatchText(n, prefix), "-"),
			cmp.Or(EdgeText(n), "-"), cmp.Or(n.Session, "-"), quote(DataText(n)), cmp.Or(ClockOf(n).Label(now), "-"), cmp.Or(strings.Join(alerts[n.Name], ","), "-"),
		}
		if neutral {
			row = slices.Insert(row, neutralAt, neutralTextCells(s, n, now)...)
		}
		rows = append(rows, row)
	}
	return rows
}

// neutralTextCells are a node's order, client, lease and blockers.
func neutralTextCells(s lockqueue.Snapshot, n lockqueue.Node, now time.Time) []string {
	lease := ""
	if l := nodeLease(n, s.UpdatedAt, now); l != nil {
		lease = strings.TrimSpace(l.ID + " " + l.Left)
	}
	order := ""
	if n.Order() != 0 {
		order = fmt.Sprint(n.Order())
	}
	return []string{cmp.Or(order, "-"), cmp.Or(n.Client(), "-"), cmp.Or(lease, "-"), cmp.Or(strings.Join(n.BlockedBy(), ","), "-")}
}

// pad lines the columns up, two spaces apart; the last is left ragged.
func pad(rows [][]string) string {
	var widths []int
	for _, r := range rows {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	lines := make([]string, 0, len(rows))
	for _, r := range rows {
		var line strings.Builder
		for i, c := range r {
			if i > 0 {
				line.WriteString("  ")
			}
			line.WriteString(c)
			if i < len(r)-1 {
				line.WriteString(strings.Repeat(" ", widths[i]-len([]rune(c))))
			}
		}
		lines = append(lines, strings.TrimRight(line.String(), " "))
	}
	return strings.Join(lines, "\n")
}

// quote writes data as a JSON string, so a newline or a quote in it cannot
// break the table.
func quote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

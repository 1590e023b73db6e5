package views

import (
	"fmt"
	"html"
	"strings"
	"time"

	"github.com/a-h/templ"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/lockservice"
)

// The queue's table is rendered here only: the lock page's first paint, the
// parts its socket brings (and GET /parts/lock) and the classroom run's
// socket's are the same templ component over the same Table, so
// the browser words no label of its own. The page script adds what only it
// knows: its own clock for the time column.

// TableQuery is what a viewer asks of the table: a page of Size rows, the
// rows matching Filter, the selected node, and Show, a node whose page to
// jump to.
type TableQuery struct {
	Page     int
	Size     int
	Filter   string
	Selected string
	Show     string
}

// Table is one page of a queue's table.
type Table struct {
	Path    string
	Caption string
	// Neutral: some node carries the service-neutral fields (order,
	// client, lease, waits-for provenance, blocked by), so the table shows
	// their columns.
	Neutral bool
	// Cols are the columns the lock's service has: a ZooKeeper lock's
	// watches, edge and session; another service's order, client, lease
	// and blockers, each under its service's own word.
	Cols Columns
	Rows []Row
	// Total counts the nodes; Matching those the filter keeps.
	Total    int
	Matching int
	// Page counts from 0; Pages is at least 1.
	Page, Pages int
	// Info says which rows are shown ("rows 1–100 of 10,000 · page 1/100").
	Info     string
	Selected string
}

// Row is one queue node as a table row.
type Row struct {
	Index int
	Name  string
	// NameParts are where the name may wrap (NameParts).
	NameParts []string
	// ModeClass is the node's mode as a CSS class; Mode its label.
	ModeClass string
	Mode      string
	// StateClass is holding, waiting, part or foreign; State its label.
	StateClass string
	State      string
	// WaitsFor and Watches are the columns as text; WaitsRefs and
	// WatchRefs the same as the nodes they name, when they name any.
	WaitsFor  string
	WaitsRefs []Ref
	Watches   string
	WatchRefs []Ref
	Edge      string
	Session   string
	Data      string
	// Time is the node's clock at the page's now, which the page ticks
	// from Clock.
	Time   string
	Clock  Clock
	Alerts string
	// StalledOn: the node a stalled holder's client still waits for.
	StalledOn string

	// The service-neutral fields, shown when Table.Neutral.
	Order  int64
	Client string
	Lease  *Lease
	// Edges are the waits-for edges with who vouches for each;
	// BlockedBy the blockers the server itself reports.
	Edges     []EdgeView
	BlockedBy []string
}

// Columns says which of the table's optional columns a lock's service has,
// and the header of each it names in its own terms
// (lockservice.Columns).
type Columns = lockservice.Columns

// columnsOf are the columns of a table of sv's lock. neutral: the
// snapshot carries the service-neutral fields (lockqueue's
// UsesNeutralFields); without them the table shows only the columns every
// lock has and the service's own.
func columnsOf(sv Service, neutral bool) Columns {
	c := sv.Words.Columns
	if !neutral {
		c.Order, c.Client, c.Lease, c.BlockedBy = "", "", "", ""
	}
	return c
}

// Ref is a node a cell names: a sibling by its short name (Short, the full
// name in a tooltip), or a path outside the node's folder whole (Short
// empty).
type Ref struct {
	Short string
	Full  string
}

// NewTable builds the page of the table of s, a lock of sv, that q asks
// for.
func NewTable(sv Service, s lockqueue.Snapshot, q TableQuery, now time.Time) Table {
	return newTable(sv, s, q, now, nil)
}

// newTable is NewTable with s's facts f, when the caller has them (nil
// reads them from s). Without a filter a page's rows are found by their
// positions: the cost is the page, not the queue.
func newTable(sv Service, s lockqueue.Snapshot, q TableQuery, now time.Time, f *QueueFacts) Table {
	if f == nil {
		f = FactsOf(s)
	}
	size := q.Size
	if size <= 0 {
		size = FirstPageRows
	}
	t := Table{Path: s.Path, Total: len(s.Nodes), Neutral: s.UsesNeutralFields(), Selected: q.Selected}
	t.Cols = columnsOf(sv, t.Neutral)
	filter := strings.ToLower(strings.TrimSpace(q.Filter))
	// keep lists the positions of the rows that match a filter; without
	// one every node is a row, the k-th row the k-th node.
	var keep []int
	if filter != "" {
		for i, n := range s.Nodes {
			if strings.Contains(strings.ToLower(n.Name), filter) || strings.Contains(n.Session, filter) ||
				strings.Contains(strings.ToLower(n.Data), filter) {
				keep = append(keep, i)
			}
		}
		t.Matching = len(keep)
	} else {
		t.Matching = len(s.Nodes)
	}
	t.Pages = max(1, (t.Matching+size-1)/size)
	t.Page = min(max(0, q.Page), t.Pages-1)
	if q.Show != "" {
		if filter == "" {
			if i, ok := f.Position(s.Nodes, q.Show); ok {
				t.Page = i / size
			}
		}
		for k, i := range keep {
			if s.Nodes[i].Name == q.Show {
				t.Page = k / size
			}
		}
	}
	holders := f.Holding
	others := len(s.Nodes) - holders
	t.Caption = fmt.Sprintf("%s: %d holding, %d other %s", s.Path, holders, others, plural(others, "node", "nodes"))
	if filter != "" {
		t.Caption += fmt.Sprintf(" (%d match the filter)", len(keep))
	}
	from := t.Page * size
	to := min(from+size, t.Matching)
	from = min(from, t.Matching)
	t.Info = "no rows"
	if t.Matching > 0 {
		t.Info = fmt.Sprintf("rows %d–%d of %s · page %d/%d", from+1, to, thousands(t.Matching), t.Page+1, t.Pages)
	}
	byNode := map[string][]string{}
	for _, a := range s.Alerts {
		for _, n := range a.Nodes {
			byNode[n] = append(byNode[n], a.Kind)
		}
	}
	for k := from; k < to; k++ {
		i := k
		if filter != "" {
			i = keep[k]
		}
		t.Rows = append(t.Rows, newRow(s, i, t.Neutral, strings.Join(byNode[s.Nodes[i].Name], ", "), now))
	}
	return t
}

func newRow(s lockqueue.Snapshot, i int, neutral bool, alerts string, now time.Time) Row {
	n := s.Nodes[i]
	prefix := childPrefix(s.Path)
	// A semaphore's node names the siblings in its own folder.
	np := prefix
	if n.Folder() != "" {
		np = n.Folder() + "/"
	}
	mode := n.Mode
	if n.Foreign || mode == "" {
		mode = lockqueue.Unknown
	}
	r := Row{
		Index: i + 1, Name: n.Name, NameParts: NameParts(n.Name), ModeClass: string(mode), Mode: ModeLabel(n.Mode),
		StateClass: stateClass(n), State: NodeState(n), WaitsFor: WaitsText(n), Watches: WatchText(n, prefix),
		Edge: EdgeText(n), Session: n.Session, Data: DataText(n), Clock: ClockOf(n), Alerts: alerts, StalledOn: n.StalledOn(),
	}
	r.Time = r.Clock.Label(now)
	if n.WaitsFor != "" && n.WaitsOn != lockqueue.OnChildren {
		r.WaitsRefs = refs([]string{np + n.WaitsFor}, np)
	}
	if len(n.Watching) > 0 {
		r.WatchRefs = refs(n.Watching, np)
	}
	if n.Label() != "" {
		r.Data = n.Label()
	}
	if neutral {
		if n.Watching == nil {
			// The service keeps no list of watchers: nothing to show, and
			// "unknown" would suggest ZooKeeper's missing watch table.
			r.Watches = "—"
		}
		r.Order, r.Client, r.Lease = n.Order(), n.Client(), nodeLease(n, s.UpdatedAt, now)
		r.Edges, r.BlockedBy = waitEdges(n), n.BlockedBy()
	}
	return r
}

// refs names paths as the lane labels them: a sibling in the node's folder
// (prefix) by its short name, anything else whole. Whole names in two more
// columns (kazoo's have 32 hex digits and no hyphen to wrap at) made the
// table 1,700 px wide.
func refs(paths []string, prefix string) []Ref {
	out := make([]Ref, 0, len(paths))
	for _, p := range paths {
		name, ok := strings.CutPrefix(p, prefix)
		if !ok || name == "" || strings.Contains(name, "/") {
			out = append(out, Ref{Full: p})
			continue
		}
		seq := int64(-1)
		if nm, ok := lockqueue.ParseName(name); ok {
			seq = nm.Seq
		}
		out = append(out, Ref{Short: ShortName(name, seq), Full: name})
	}
	return out
}

// childPrefix is what a child's path starts with under the lock path.
func childPrefix(path string) string {
	if path == "/" {
		return "/"
	}
	return path + "/"
}

// stateClass is a node's state as a class and a data-state: what the lane
// calls it too (LaneOf).
func stateClass(n lockqueue.Node) string {
	switch {
	case n.Foreign:
		return "foreign"
	case n.PartOf() != "":
		return "part" // its acquirer's other node: not a waiter of its own
	case n.Holding:
		return "holding"
	}
	return "waiting"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// thousands writes n with commas, as the browser's en-US numbers read.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// The cells below are written as HTML here, not in templ: templ puts a
// space between inline elements, and a name must read whole ("R_<wbr>01",
// "k0 (inferred), k1 (confirmed)") in the page and in its copied text.

// nameWithBreaks is name as HTML with a <wbr> between its NameParts.
func nameWithBreaks(name string) templ.Component {
	return templ.Raw(breaks(name))
}

func breaks(name string) string {
	parts := NameParts(name)
	for i, p := range parts {
		parts[i] = html.EscapeString(p)
	}
	return strings.Join(parts, "<wbr>")
}

// refList names nodes as the lane labels them, the full name in the
// tooltip; a path outside the node's folder stays whole.
func refList(rs []Ref) templ.Component {
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		if r.Short == "" {
			out = append(out, "<span>"+breaks(r.Full)+"</span>")
			continue
		}
		out = append(out, `<abbr title="`+html.EscapeString(r.Full)+`">`+html.EscapeString(r.Short)+"</abbr>")
	}
	return templ.Raw(strings.Join(out, ", "))
}

// edges lists a node's waits-for edges with who vouches for each: the
// recipe's rule ("inferred") or the server ("confirmed").
func edges(es []EdgeView) templ.Component {
	out := make([]string, 0, len(es))
	for _, e := range es {
		to, p := html.EscapeString(e.To), html.EscapeString(e.Provenance)
		out = append(out, `<span class="wait-edge prov-`+p+`" data-to="`+to+`" data-provenance="`+p+`">`+to+` <small>(`+p+`)</small></span>`)
	}
	return templ.Raw(strings.Join(out, ", "))
}

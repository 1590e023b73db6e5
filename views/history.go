package views

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"github.com/a-h/templ"
	"strconv"
	"strings"
	"time"

	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/lockqueue"
)

// Replay is the lock view's time bar and the moment it shows: live (At
// zero) or a past moment rebuilt from the history.
type Replay struct {
	// On: the server keeps a history, so the page has a time bar.
	On bool
	At time.Time
	// Known: the history has the lock at At. Seen: its reader saw it
	// then; otherwise the history does not know what happened (a gap).
	Known bool
	Seen  bool
	// Why the reader did not see it (the gap's reason), when !Seen.
	Why string
	// Off says why the history cannot be read now (its database gone), so
	// the moment At cannot be shown until it can.
	Off string
	// ExportHref downloads the incident around the shown moment.
	ExportHref string
	// Cluster is the cluster the shown history was recorded on, when
	// Known (history.UnknownCluster for a recording that does not say).
	Cluster string
}

// AtMillis is At in Unix milliseconds, "" when live.
func (r Replay) AtMillis() string {
	if r.At.IsZero() {
		return ""
	}
	return strconv.FormatInt(r.At.UnixMilli(), 10)
}

// When words a moment for the time bar: UTC to the second, as a ticket
// would quote it.
func When(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }

// RecorderRole says which of the replicas sharing a history database
// records it, and since when ("" without one: the built-in store), and
// its state for the status line: "connected" while a replica is known to
// record, "reconnecting" otherwise.
func RecorderRole(r *history.Role, now time.Time) (text, state string) {
	if r == nil {
		return "", ""
	}
	state = "connected"
	if r.Why != "" || (!r.Recording && (r.Recorder == "" || r.Stale(now))) {
		state = "reconnecting"
	}
	return recorderRole(r, now), state
}

func recorderRole(r *history.Role, now time.Time) string {
	switch {
	case r.Recording:
		return fmt.Sprintf("history recorded by this replica (%s) since %s", r.Replica, When(r.Since))
	case r.Why != "":
		return fmt.Sprintf("this replica (%s) lost its session to the history database, and does not know who records: %s", r.Replica, r.Why)
	case r.Recorder == "":
		return fmt.Sprintf("this replica (%s) stands by; no replica records the history yet", r.Replica)
	case r.Stale(now):
		return fmt.Sprintf("history recorded by replica %s since %s, last heard from %s ago; this replica (%s) stands by",
			r.Recorder, When(r.Since), now.Sub(r.Alive).Round(time.Second), r.Replica)
	}
	return fmt.Sprintf("history recorded by replica %s since %s; this replica (%s) stands by, and takes over if it stops", r.Recorder, When(r.Since), r.Replica)
}

// Status is what the lock view says about the moment it shows.
// offAttrs are the replay status's data-off, only while the history
// cannot be read: the time bar's words for the moment then.
func (r Replay) offAttrs() templ.Attributes {
	if r.Off == "" {
		return nil
	}
	return templ.Attributes{"data-off": "history off"}
}

func (r Replay) Status() string {
	switch {
	case r.At.IsZero():
		return "Live."
	case r.Off != "":
		return "History off: " + When(r.At) + " cannot be shown now (" + r.Off + "); the page shows it once the history records again."
	case !r.Known:
		return "No history of this lock at " + When(r.At) + ": nothing was recorded then."
	case !r.Seen:
		why := r.Why
		if why == "" {
			why = "the reader was not connected"
		}
		return "zklockviz does not know what happened at " + When(r.At) + " (" + why + "); the queue shown is the last one it saw before."
	}
	return "Showing the queue as it was at " + When(r.At) + " on " + ClusterText(r.Cluster) + "."
}

// ClusterText words the cluster a history was recorded on.
func ClusterText(c string) string {
	if c == "" || c == history.UnknownCluster {
		return "an unknown cluster (recorded before clusters were told apart)"
	}
	return "cluster " + c
}

// ReplayOf is the replay of a lock at t from the history's state then.
func ReplayOf(st history.State, known bool, t time.Time) Replay {
	r := Replay{On: true, At: t, Known: known, Seen: known && st.Live()}
	if known {
		r.Cluster = history.ClusterOf(st.Lock)
	}
	if known && !r.Seen {
		r.Why = st.Error
		if r.Why == "" {
			r.Why = "the reader was " + string(st.Connection)
		}
	}
	return r
}

// Bar is one bucket of a histogram.
type Bar struct {
	Label string
	Count int
	// Pct is the bar's length, of the largest bucket.
	Pct int
}

// Figures are a lock's wait and hold figures over a window, as the lock
// view and the incident export show them.
type Figures struct {
	From, To time.Time
	Window   string
	// Rows: wait, hold, and the waits that gave up; p50…max worded.
	Rows   []FigureRow
	Counts []Stat
	// Busiest are the busiest clock hours, busiest first.
	Busiest []string
	Wait    []Bar
	Hold    []Bar
	Gaps    []string
	// Longest are the longest holds that ended in the window, each with
	// who held, longest first.
	Longest []string
	// Pending: only the window is known; the page fetches the figures
	// (GET /parts/lock-figures).
	Pending bool
}

// PendingFigures are the figures of [from, to] before they are read.
func PendingFigures(from, to time.Time) Figures {
	return Figures{From: from, To: to, Window: Duration(to.Sub(from)), Pending: true}
}

// FigureRow is one line of percentiles.
type FigureRow struct {
	Name                     string
	Count                    int
	P50, P95, P99, Max       string
	RawP50, RawP99, RawCount string
}

// histogramEdges are the upper bounds of the histograms' buckets: decades
// from 10 ms, which is how wait and hold times spread in practice; their
// labels are worded here, where "10 ms" reads better than a clock.
var histogramEdges = []time.Duration{10 * time.Millisecond, 100 * time.Millisecond, time.Second, 10 * time.Second, time.Minute, 10 * time.Minute}

var histogramLabels = []string{"< 10 ms", "< 100 ms", "< 1 s", "< 10 s", "< 1 min", "< 10 min", "≥ 10 min"}

func histogram(secs []float64) []Bar {
	bars := make([]Bar, len(histogramEdges)+1)
	for i := range bars {
		bars[i].Label = histogramLabels[i]
	}
	top := 0
	for _, s := range secs {
		d := time.Duration(s * float64(time.Second))
		i := len(histogramEdges)
		for k, e := range histogramEdges {
			if d < e {
				i = k
				break
			}
		}
		bars[i].Count++
		top = max(top, bars[i].Count)
	}
	for i := range bars {
		if top > 0 {
			bars[i].Pct = 100 * bars[i].Count / top
		}
	}
	return bars
}

func seconds(s float64) string {
	return Duration(time.Duration(s * float64(time.Second)))
}

func figureRow(name string, f history.Figures) FigureRow {
	r := FigureRow{Name: name, Count: f.Count, RawCount: strconv.Itoa(f.Count)}
	if f.Count == 0 {
		r.P50, r.P95, r.P99, r.Max = "—", "—", "—", "—"
		return r
	}
	r.P50, r.P95, r.P99, r.Max = seconds(f.P50), seconds(f.P95), seconds(f.P99), seconds(f.Max)
	r.RawP50, r.RawP99 = strconv.FormatFloat(f.P50, 'f', 3, 64), strconv.FormatFloat(f.P99, 'f', 3, 64)
	return r
}

// NewFigures words st; evs (the window's events) give the histograms, of
// the same waits and holds as st's percentiles.
func NewFigures(st history.Stats, evs []history.Event) Figures {
	f := Figures{From: st.From, To: st.To, Window: Duration(st.To.Sub(st.From))}
	f.Rows = []FigureRow{figureRow("wait", st.Wait), figureRow("hold", st.Hold), figureRow("gave up after", st.GiveUpWait)}
	f.Counts = []Stat{
		{Name: "acquisitions", Value: strconv.Itoa(st.Acquisitions)},
		{Name: "hand-offs/min", Value: strconv.FormatFloat(st.HandoffsPerMin, 'f', 2, 64)},
		{Name: "released", Value: strconv.Itoa(st.Released)},
		{Name: "gave up", Value: strconv.Itoa(st.GaveUp)},
		{Name: "expired", Value: strconv.Itoa(st.Expired)},
	}
	for _, h := range st.BusiestHours {
		f.Busiest = append(f.Busiest, fmt.Sprintf("%s: %d acquisitions, longest wait %s", h.Hour.UTC().Format("2006-01-02 15:00 UTC"), h.Acquisitions, seconds(h.MaxWait)))
	}
	var waits, holds []float64
	for _, e := range evs {
		if w, ok := e.MeasuredWait(); ok {
			waits = append(waits, w.Seconds())
		}
		if h, ok := e.MeasuredHold(); ok {
			holds = append(holds, h.Seconds())
		}
	}
	f.Wait, f.Hold = histogram(waits), histogram(holds)
	for _, h := range st.LongestHolds {
		line := fmt.Sprintf("%s: %s from %s", seconds(h.Hold), h.Node, When(h.Acquired))
		if who := Who(h.Owner); who != "" {
			line = fmt.Sprintf("%s: %s (%s) from %s", seconds(h.Hold), h.Node, who, When(h.Acquired))
		}
		f.Longest = append(f.Longest, line)
	}
	for _, g := range st.Gaps {
		f.Gaps = append(f.Gaps, GapText(g))
	}
	return f
}

// GapText words a stretch the history does not know about.
func GapText(g history.Span) string {
	why := g.Why
	if why == "" {
		why = "the reader was disconnected"
	}
	return "unknown from " + When(g.From) + " to " + When(g.To) + " (" + why + ")"
}

// Export is an incident: a lock's window, every change in it with the
// queue after it, the alerts and the figures, in one file.
type Export struct {
	Service Service
	Path    string
	// Cluster is the cluster the incident was recorded on.
	Cluster string
	From    time.Time
	To      time.Time
	Figures Figures
	Changes []Change
	// Truncated: the window had more changes than the file keeps.
	Truncated bool
	// CSS and Script are inlined, so the file needs no network; Modules
	// are the pages' modules Script imports (static/queue.js, the lane;
	// static/tz.js, the time zone), by file name, through an import map
	// (ImportMap).
	CSS     string
	Script  string
	Modules map[string]string
}

// ImportMap maps each of the pages' modules the file imports, as the pages
// name it ("./queue.js"), to its source inlined as a data: URL: the
// incident file draws and words with the pages' own code and no request.
func (e Export) ImportMap() string {
	imports := map[string]string{}
	for name, src := range e.Modules {
		imports["./"+name] = "data:text/javascript;base64," + base64.StdEncoding.EncodeToString([]byte(src))
	}
	// A map of strings always marshals.
	b, _ := json.Marshal(map[string]map[string]string{"imports": imports})
	return string(b)
}

// Lane is what the change's lane draws: its snapshot, with the window that
// says which part of the queue its nodes are.
func (c Change) Lane() any {
	if c.Window == nil {
		return c.Snapshot
	}
	return struct {
		lockqueue.Snapshot
		Window any `json:"window"`
	}{c.Snapshot, c.Window}
}

// Change is one moment of an incident: what changed, and the queue after.
type Change struct {
	At   time.Time
	What []string
	// Snapshot is the queue after the change, drawn as the lane; Table
	// the same as the lock page's table, every row; Queue as text.
	Snapshot lockqueue.Snapshot
	// Window, when set, says which part of a long queue Snapshot's nodes
	// are (web's Window: what a lock page's lane draws of it); nil: every
	// node.
	Window  any
	Table   Table
	Queue   string
	Alerts  []string
	Seen    bool
	Holders string
	Waiting int
}

// NewChange words the events at one moment and the queue they left.
func NewChange(sv Service, at time.Time, evs []history.Event, st history.State) Change {
	c := Change{At: at, Seen: st.Live()}
	if len(evs) == 0 {
		c.What = []string{"the queue as the window starts"}
	}
	for _, e := range evs {
		c.What = append(c.What, EventText(e))
	}
	snap := st.Snapshot()
	c.Snapshot = snap
	c.Table = NewTable(sv, snap, TableQuery{Size: max(len(snap.Nodes), 1)}, at)
	c.Queue = QueueText(sv, snap, at)
	var holders []string
	for _, n := range snap.Nodes {
		if n.Holding {
			h := n.Name
			if who := NodeWho(n); who != "" {
				h += " (" + who + ")"
			}
			holders = append(holders, h)
		} else if n.Waiting() {
			c.Waiting++
		}
	}
	c.Holders = strings.Join(holders, ", ")
	for _, a := range snap.Alerts {
		c.Alerts = append(c.Alerts, string(a.Kind)+": "+a.Message)
	}
	return c
}

// EventText words one recorded event.
func EventText(e history.Event) string {
	var b strings.Builder
	b.WriteString(string(e.Kind))
	if e.Node != "" {
		b.WriteString(" " + e.Node)
	}
	switch {
	case e.How != "":
		b.WriteString(" (" + string(e.How) + ")")
	case e.Alert != "":
		b.WriteString(" " + e.Alert)
		if e.Message != "" {
			b.WriteString(": " + e.Message)
		}
	case e.Connection != "":
		b.WriteString(" " + e.Connection)
	case e.To != "":
		b.WriteString(" → " + e.To)
	}
	if who := Who(e.Owner()); e.Kind == history.Queued && who != "" {
		b.WriteString(" by " + who)
	}
	if w, ok := e.MeasuredWait(); ok && w > 0 {
		b.WriteString(", waited " + Duration(w))
	}
	if h, ok := e.MeasuredHold(); ok && h > 0 {
		// A node gone while unseen held for an unknown part of the gap.
		b.WriteString(", held " + Duration(h))
	}
	return b.String()
}

// Who words who a node's owner is, as the history recorded it: its label
// or its data (binary data as base64), then its client and lease.
func Who(o history.Owner) string {
	var parts []string
	switch {
	case o.Label != "":
		parts = append(parts, o.Label)
	case o.DataBinary && o.Data != "":
		parts = append(parts, "base64:"+o.Data)
	case o.Data != "":
		parts = append(parts, strconv.Quote(o.Data))
	}
	if o.Client != "" {
		parts = append(parts, o.Client)
	}
	if o.Lease != "" && o.Lease != o.Client {
		parts = append(parts, "lease "+o.Lease)
	}
	return strings.Join(parts, " · ")
}

// NodeWho is Who of a node of a snapshot (one the history rebuilt).
func NodeWho(n lockqueue.Node) string {
	return Who(history.Owner{Client: cmp.Or(n.Client(), n.Session), Data: n.Data, DataBinary: n.DataBinary, Label: n.Label(), Lease: n.LeaseID()})
}

// ExportName is the incident file's name.
func (e Export) ExportName() string {
	name := strings.NewReplacer("/", "_", ":", "_", " ", "_").Replace(strings.Trim(e.Path, "/"))
	return "zklockviz-incident-" + name + "-" + e.From.UTC().Format("20060102T150405Z") + ".html"
}

// SparkBins is how many bars a sparkline has: five minutes each over the
// last hour.
const SparkBins = 12

// Sparkline is a lock's hand-offs (acquisitions) over the last hour, in
// SparkBins bins, oldest first.
type Sparkline struct {
	Bins  []int
	Total int
}

// NewSparkline bins the acquisitions among evs over the hour up to now.
func NewSparkline(evs []history.Event, now time.Time) Sparkline {
	s := Sparkline{Bins: make([]int, SparkBins)}
	from := now.Add(-time.Hour)
	width := time.Hour / SparkBins
	for _, e := range evs {
		if !e.SeenAcquired() || e.Time.Before(from) || e.Time.After(now) {
			continue
		}
		i := min(int(e.Time.Sub(from)/width), SparkBins-1)
		s.Bins[i]++
		s.Total++
	}
	return s
}

// Points are the sparkline's polyline in a 60×16 box.
func (s Sparkline) Points() string {
	top := 1
	for _, b := range s.Bins {
		top = max(top, b)
	}
	var p []string
	for i, b := range s.Bins {
		x := float64(i) * 60 / float64(max(len(s.Bins)-1, 1))
		y := 15 - float64(b)*14/float64(top)
		p = append(p, strconv.FormatFloat(x, 'f', 1, 64)+","+strconv.FormatFloat(y, 'f', 1, 64))
	}
	return strings.Join(p, " ")
}

// Title words the sparkline for a tooltip and a screen reader.
func (s Sparkline) Title() string {
	if s.Total == 1 {
		return "1 hand-off in the last hour"
	}
	return strconv.Itoa(s.Total) + " hand-offs in the last hour"
}

// SetSparklines gives each row its sparkline, from spark(service, path).
func (d *Dashboard) SetSparklines(spark func(service, path string) Sparkline) {
	d.History = true
	for i := range d.Locks {
		d.Locks[i].Spark = spark(d.Locks[i].Service, d.Locks[i].Path)
	}
}

// Columns is how many columns the dashboard's table has.
func (d Dashboard) Columns() string {
	if d.History {
		return "8"
	}
	return "7"
}

// Package views renders zklockviz's pages with templ. Each page takes a
// view-model shaped like the screen; the builders here turn lockqueue
// Snapshots into those models, so templates only lay things out. The pages'
// first paint comes from here, then the scripts in package static take over.
package views

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/lockservice"
)

// FirstPageRows is how many table rows a lock page renders on the server; the
// browser pages through the rest.
const FirstPageRows = 100

// Page is what every page shares.
type Page struct {
	Title string
	// Active names the nav entry to mark: "dashboard", "lock" or "sim".
	Active     string
	SimEnabled bool
	// Version tags asset URLs so browsers may cache them for good.
	Version string
	Body    templ.Attributes
	// HistoryOff says why the flight recorder is not recording, and since
	// when; empty while it records (or when no history is kept).
	HistoryOff string
	// HistoryRole says which replica records, when several share the
	// history database (RecorderRole), and HistoryRoleState how it stands:
	// "connected", or "reconnecting" while no replica is known to record.
	HistoryRole, HistoryRoleState string
	// Modules are the static scripts the page's script imports, fetched
	// from the head at once (modulepreload) rather than one level of
	// imports at a time, each once the one before is parsed.
	Modules []string
	// Legend is the lane's legend of the page's lock's service; Legends
	// those of a page of several services' locks (LaneWords).
	Legend  []LegendItem
	Legends map[string][]LegendItem
}

// Asset is the URL of a static file.
func (p Page) Asset(name string) string {
	if p.Version == "" {
		return "/static/" + name
	}
	return "/static/" + name + "?v=" + p.Version
}

// Dashboard is the list of watched locks.
type Dashboard struct {
	Page
	// Default is the default service, whose line (ZooKeeper's ensemble)
	// Connection and ConnectionText are.
	Default        Service
	Connection     string
	ConnectionText string
	Locks          []LockRow
	// Services are the registered lock services (SetServices); Filter is
	// the one whose locks alone are listed, "" for all.
	Services []ServiceStatus
	Filter   string
	// History: the server keeps one, so each row has a sparkline.
	History bool
	// Unexplored are the services whose discovery left folders unread.
	Unexplored []Unexplored
	// List is which page of which locks Locks is, and the totals.
	List DashboardList
	// Across are the alerts that span several locks, each listed once
	// above the locks, first: a deadlock through them.
	Across []Alert
}

// DashboardList is the page of locks the dashboard shows: of every watched
// lock only a page is rendered, chosen by the server as GET /api/v1/locks
// chooses it, with the same query parameters.
type DashboardList struct {
	// Q is the search (a piece of the path, any case); State, Sort and
	// Limit the list's; Cursor the page's, "" for the first.
	Q, State, Sort string
	Limit          int
	Cursor         string
	// Next and Prev are the cursors of the pages after and before.
	Next, Prev string
	// Offset is how many matching locks come before the page; Matched
	// how many match.
	Offset, Matched int
	Totals          Totals
}

// Totals count every watched lock, whatever the page and the search
// (web.LockTotals): Found counts the empty folders discovery found too,
// WithNodes the locks with a holder or a waiter now.
type Totals struct {
	Locks, Found, WithNodes, Held, Contended, Alerting, Pending int
}

// LockRow is one watched lock on the dashboard.
type LockRow struct {
	// Service names the lock's service (ZooKeeper's too); ServiceTitle is
	// its badge.
	Service      string
	ServiceTitle string
	Path         string
	Href         string
	Recipe       string
	Holders      string
	// HoldersTitle lists the holders' full names, for a tooltip.
	HoldersTitle string
	Waiting      int
	OldestWait   string
	Alerts       string
	AlertTitle   string
	Connection   string
	// Pending: the service's reader follows the lock but has not read it.
	Pending bool
	// Spark is the lock's hand-offs over the last hour (history.go).
	Spark Sparkline
}

// Lock is the lock view's first paint.
type Lock struct {
	Page
	Service Service
	Path    string
	// Known is false when no snapshot of the path exists yet.
	Known  bool
	Live   bool
	Banner string
	Stats  []Stat
	// Oldest is when the longest wait began, in Unix milliseconds (0: no
	// one waits), for the page's clock; OldestText the wait at render.
	Oldest     int64
	OldestText string
	// OldestVerb is "≥" when the oldest wait is a lower bound (its
	// node was there before the reader looked, with no creation time).
	OldestVerb string
	// Missing says the lock does not exist (yet), in its service's words:
	// "" when it does.
	Missing string
	// Note says what the lock's service cannot show (Redis: spin-lock
	// waiters leave no trace), from the snapshot.
	Note string
	// Cluster is the cluster the lock is read from (or, at a past moment,
	// was recorded on), as the history and the export name it; "" when
	// the reader does not say.
	Cluster string
	// Filling says, while the reader is still reading the nodes' data of
	// a queue published names first, how far it is ("12,000 of 100,000");
	// "" once every node is read.
	Filling string
	// DocTitle is the document's title while the page is open.
	DocTitle string
	Alerts   []Alert
	// Table is a page of the table.
	Table
	// Details are the selected node's (TableQuery.Selected).
	Details NodeDetails

	// Watched is false when the server does not follow the path: the page
	// says so, and opens no socket that could only be refused. CanWatch
	// says whether the server can add it (POST /api/v1/watch).
	Watched  bool
	CanWatch bool
	// FirstFrame is, for a long queue shown live, the socket's first
	// message for the part of it the page opens on (web.Frame, JSON), so
	// the page draws the queue without waiting for its socket; empty
	// otherwise.
	FirstFrame json.RawMessage
	// Replay is the time bar and the past moment shown, if any (history.go).
	Replay Replay
	// Figures are the lock's figures over the time bar's window, when the
	// server keeps a history.
	Figures *Figures
}

// The lock page's banner while its own socket to this server is down, which
// only the page knows; lock.js fills in {attempt} and {time}. Why the lock
// shown is not live otherwise is the snapshot's, in Lock.Banner.
const (
	BannerConnecting = "NOT LIVE — connecting to the zklockviz server…"
	BannerLost       = "NOT LIVE — lost the connection to the zklockviz server; reconnecting…"
	BannerRetry      = "NOT LIVE — lost the connection to the zklockviz server; reconnecting (attempt {attempt})…"
	BannerSeen       = " Showing the state last seen live at {time}."
)

// bannerWords are the banner's words for the page's own states (the
// Banner* constants), on a page that follows the lock or offers to: an
// unwatched one the viewer can have watched has them for when its socket
// does not open; one that cannot be watched has nothing that could go
// stale.
func (l Lock) bannerWords() templ.Attributes {
	if !l.Watched && !l.CanWatch {
		return nil
	}
	return templ.Attributes{"data-connecting": BannerConnecting, "data-lost": BannerLost, "data-retry": BannerRetry, "data-seen": BannerSeen}
}

// focus makes an alert that names nodes reachable with Tab: focusing it
// marks them in the lane.
func (a Alert) focus() templ.Attributes {
	if a.Nodes == "" {
		return nil
	}
	return templ.Attributes{"tabindex": "0"}
}

// Stat is one figure in a summary line.
type Stat struct {
	Name  string
	Value string
}

// holderTitle is a holder in the dashboard's tooltip: its node, then who
// it is and its client, where the service tells them.
func holderTitle(n lockqueue.NodeName) string {
	var who []string
	for _, w := range []string{n.Who, n.Client} {
		if w != "" && !slices.Contains(who, w) {
			who = append(who, w)
		}
	}
	if len(who) == 0 {
		return n.Name
	}
	return n.Name + " (" + strings.Join(who, " · ") + ")"
}

// TermFirst says whether the stat reads its term before its value: how the
// lock was read ("watches from 4lw", "read from history") is no count, and
// reads oddly the other way round.
func (s Stat) TermFirst() bool { return s.Name == watchesFrom || s.Name == readFrom }

// Alert is an alert as listed above the queue.
type Alert struct {
	Kind    string
	Message string
	Nodes   string
	// Locks are the other locks it spans, linked.
	Locks []lockqueue.LockID
}

// Sim is the classroom's first paint; the script fetches scenarios and runs.
type Sim struct {
	Page
	Enabled  bool
	Scenario string
	Strategy string
	Step     int
	// Words are the registered services' classroom words (#service-words):
	// sim.js looks a run's up by its service.
	Words lockservice.ClassroomsWords
}

// NameParts splits a znode name where a line may break: after each run of
// "-" or "_" and before a 10-digit sequence. The table puts a <wbr> between
// parts, so a long Curator name wraps between its parts, never mid-part.
// Every table is rendered here, so the browser has no copy of the rule.
func NameParts(name string) []string {
	var parts []string
	start := 0
	for i := 0; i < len(name); i++ {
		if name[i] != '-' && name[i] != '_' {
			continue
		}
		for i+1 < len(name) && (name[i+1] == '-' || name[i+1] == '_') {
			i++
		}
		parts = append(parts, name[start:i+1])
		start = i + 1
	}
	if start < len(name) {
		last := name[start:]
		if n := len(last); n > 10 && allDigits(last[n-10:]) && !isDigit(last[n-11]) {
			parts = append(parts, last[:n-10], last[n-10:])
		} else {
			parts = append(parts, last)
		}
	}
	// A leading run of separators ("_c_…") stays with what follows it.
	if len(parts) > 1 && strings.Trim(parts[0], "-_") == "" {
		parts = append([]string{parts[0] + parts[1]}, parts[2:]...)
	}
	return parts
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

// SetWatcherConnection shows the default service's reader's own state (a
// ZooKeeper watcher's session), which is known whether or not a lock is
// watched ("" when the server runs no such reader).
func (d *Dashboard) SetWatcherConnection(c string) {
	d.Connection = c
	title := d.Default.Title
	switch c {
	case "":
		d.Connection = "none"
		d.ConnectionText = title + ": this server has no watcher"
	case string(lockqueue.Connected):
		d.ConnectionText = serviceConnectionText(title, c)
		if d.List.Totals.Locks == 0 {
			d.ConnectionText += " · no lock watched yet"
		}
	default:
		d.ConnectionText = serviceConnectionText(title, c)
	}
}

// NewDashboard builds the dashboard from a page of the watched locks and
// the connection states of every lock of def, the default service.
func NewDashboard(p Page, rows []LockRow, list DashboardList, def Service, defConns []string) Dashboard {
	d := Dashboard{Page: p, Locks: rows, List: list, Default: def}
	switch len(defConns) {
	case 0:
	case 1:
		// The default service's line sums up its locks; each other
		// service has a line of its own.
		d.Connection = defConns[0]
	default:
		d.Connection = "mixed"
	}
	d.ConnectionText = serviceConnectionText(def.Title, d.Connection)
	return d
}

// NewLockRow is one lock's row of the dashboard, from its summary; pending:
// the service's reader follows the lock but has not read it yet.
func NewLockRow(s *lockqueue.Summary, pending bool, now time.Time) LockRow {
	// The lock's service by its registry name, as the dashboard's filter
	// and badges name it (SetServices titles it).
	service := s.ServiceName()
	if pending {
		return pendingRow(service, s.Path)
	}
	row := LockRow{
		Service: service, ServiceTitle: service,
		Path: s.Path, Href: LockHref(service, s.Path), Recipe: cmp.Or(string(s.Recipe), "—"),
		Connection: string(s.Connection), Holders: "none", OldestWait: "—", Alerts: "—",
	}
	if len(s.Holders) > 0 {
		var short, full []string
		for _, n := range s.Holders {
			// Who holds, as the lane shows it, where it is known.
			short = append(short, cmp.Or(n.Who, ShortName(n.Name, n.Seq)))
			full = append(full, holderTitle(n))
		}
		row.Holders = strings.Join(short[:min(3, len(short))], ", ")
		if s.HolderCount > 3 {
			row.Holders += fmt.Sprintf(" +%d", s.HolderCount-3)
		}
		row.HoldersTitle = strings.Join(full, "\n")
		if more := s.HolderCount - len(full); more > 0 {
			row.HoldersTitle += fmt.Sprintf("\nand %d more", more)
		}
	}
	row.Waiting = s.WaiterCount
	if !s.OldestWaiter.IsZero() {
		_, verb := oldestWait(FactsOf(*s.Snapshot)) // "≥" when only a bound of the wait's start is known
		row.OldestWait = strings.TrimSpace(verb + " " + Duration(now.Sub(s.OldestWaiter)))
	}
	if len(s.Alerts) > 0 {
		var kinds, msgs []string
		for _, a := range s.Alerts {
			kinds = append(kinds, a.Kind)
			msgs = append(msgs, a.Message)
		}
		row.Alerts = strings.Join(kinds, ", ")
		row.AlertTitle = strings.Join(msgs, "\n")
	}
	return row
}

// LockState is a lock as its view is built from: its name (Path), its
// snapshot, and whether there is one yet (Known: read at least once).
// Facts are the snapshot's, when the caller keeps them (nil reads them
// from the snapshot).
type LockState struct {
	Path  string
	Snap  lockqueue.Snapshot
	Facts *QueueFacts
	Known bool
}

// NewLockWith builds the lock view's first paint of st, a lock of svc. q
// picks the page of the table.
func NewLockWith(p Page, svc Service, st LockState, q TableQuery, now time.Time) Lock {
	path, s, f := st.Path, st.Snap, st.Facts
	l := Lock{Page: p, Service: svc, Path: path, Known: st.Known, DocTitle: path + " — zklockviz"}
	if !st.Known {
		l.Banner = "NOT LIVE — waiting for the first read of " + path + "."
		l.Table = NewTable(svc, lockqueue.Snapshot{Path: path}, q, now)
		l.Details = NewNodeDetails(svc, lockqueue.Snapshot{Path: path}, "", now)
		return l
	}
	l.Live = s.Live()
	l.Banner = notLiveBanner(svc, s)
	if f == nil {
		f = FactsOf(s)
	}
	holding, waiting := f.Holding, f.Waiting
	l.Stats = lockStats(svc, s, f)
	l.Note, l.Cluster = s.Note, s.Cluster
	if f := s.Filling; f != nil {
		l.Filling = thousands(f.Read) + " of " + thousands(f.Of)
	}
	// A contender's wait starts with its first node, which may be the one
	// that is part of another (lockqueue.Snapshot.Oldest).
	if oldest, verb := oldestWait(f); !oldest.IsZero() {
		l.Oldest, l.OldestVerb = oldest.UnixMilli(), verb
		l.OldestText = strings.TrimSpace(verb + " " + Duration(now.Sub(oldest)))
	}
	switch {
	case !l.Live:
		// Not read now: what is shown is the last known state, and an
		// empty one is no news of a free lock.
		l.Missing = unknownText(s)
	case !s.Exists:
		l.Missing = svc.Missing()
	}
	l.DocTitle = fmt.Sprintf("%s · %d holding · %s waiting — zklockviz", s.Path, holding, thousands(waiting))
	for _, a := range s.Alerts {
		l.Alerts = append(l.Alerts, Alert{Kind: a.Kind, Message: a.Message, Nodes: strings.Join(a.Nodes, "\n"), Locks: a.Locks})
	}
	l.Table = newTable(svc, s, q, now, f)
	l.Details = newNodeDetails(svc, s, f, q.Selected, now)
	return l
}

// notLiveBanner says why a known lock's snapshot is not live; "" when it is.
func notLiveBanner(svc Service, s lockqueue.Snapshot) string {
	var why string
	switch {
	case s.Live():
		return ""
	case s.Error != "":
		why = "NOT LIVE — the last read from " + svc.Title + " failed: " + s.Error + "."
	case s.Connection == lockqueue.Expired:
		why = "NOT LIVE — the watcher's " + svc.Title + " session expired; it is starting a new one."
	default:
		why = "NOT LIVE — " + svc.Title + " is unreachable; the watcher is reconnecting."
	}
	if s.UnknownSince.IsZero() {
		return why
	}
	return why + " Showing the last known state; unknown since " + When(s.UnknownSince) + "."
}

// unknownText is the lock's state when it is not live: unknown, never
// free or missing, whatever the last known state shows.
func unknownText(s lockqueue.Snapshot) string {
	if s.UnknownSince.IsZero() {
		return "unknown: not live"
	}
	return "unknown since " + When(s.UnknownSince) + ": the last known state is shown"
}

// lockStats is the lock view's stat line, from s's facts f.
func lockStats(sv Service, s lockqueue.Snapshot, f *QueueFacts) []Stat {
	holding, waiting, stalled := f.Holding, f.Waiting, f.Stalled
	stats := []Stat{{"recipe", cmp.Or(string(s.Recipe), "none")}, {"holding", fmt.Sprint(holding)}}
	if stalled > 0 {
		stats = append(stats, Stat{"stalled", fmt.Sprint(stalled)})
	}
	stats = append(stats, Stat{"waiting", thousands(waiting)})
	if s.AnonymousWaiters > 0 {
		// Counted by the server, not named: no nodes of their own.
		stats = append(stats, Stat{"more waiting, unnamed", thousands(s.AnonymousWaiters)})
	}
	if s.Leases > 0 {
		leases := fmt.Sprint(s.Leases)
		if s.LeasesInferred {
			leases += " (inferred)" // read off a Curator semaphore's layout
		}
		stats = append(stats, Stat{"leases", leases})
	}
	if term, value := SourceWords(sv, s); term != "" {
		stats = append(stats, Stat{term, value})
	}
	if s.Revision > 0 { // a past moment is no reader's revision
		stats = append(stats, Stat{"revision", fmt.Sprint(s.Revision)})
	}
	return stats
}

// SourceWords says how s, a lock of sv, was read, in its service's terms
// (lockservice.Words.Source): ZooKeeper's watch table ("watches from");
// another service has no watch table, so it says what the reader reads
// ("read from"), and nothing when it reads no more than the lock itself.
//
// A past moment is read from the history on every service: nothing watched
// it then.
func SourceWords(sv Service, s lockqueue.Snapshot) (term, value string) {
	if s.WatchSource == "history" {
		return readFrom, s.WatchSource
	}
	if sv.Words.Source != nil {
		return sv.Words.Source(s.WatchSource)
	}
	return lockservice.NeutralSource(s.WatchSource)
}

// The terms SourceWords says how a lock was read in.
const (
	watchesFrom = "watches from"
	readFrom    = "read from"
)

// modeWords is how each node mode reads everywhere, in the legend's order:
// the legend, the tables, the tooltips and the classroom (the lane's
// through Words). Unknown is last and stands for any mode not listed.
var modeWords = []ModeWord{
	{lockqueue.Read, "reader", "R"}, {lockqueue.Write, "writer", "W"}, {lockqueue.Exclusive, "exclusive", "X"},
	{lockqueue.Lease, "lease", "L"}, {lockqueue.Unknown, "foreign / unknown", "?"},
}

// ModeLabel is the one label of a node mode.
func ModeLabel(m lockqueue.Mode) string {
	for _, w := range modeWords {
		if w.Mode == m {
			return w.Label
		}
	}
	return modeWords[len(modeWords)-1].Label
}

// NodeState is how a node's state reads in a table.
func NodeState(n lockqueue.Node) string {
	switch {
	case n.Foreign:
		return "foreign"
	case n.Holding && n.Zombie:
		return "holding (zombie)"
	case n.StalledOn() != "":
		return "holding (stalled: client still waits)"
	case n.Holding:
		return "holding"
	case n.PartOf() != "" && n.Zombie:
		return PartOfText(n) + " (zombie)"
	case n.PartOf() != "":
		return PartOfText(n)
	case n.Zombie:
		return "waiting (zombie)"
	}
	return "waiting"
}

// PartOfText is the state of a node that is another node's contender too
// (lockqueue.Node.PartOf): a semaphore's lock-folder node, by which its
// acquirer holds the internal lock.
func PartOfText(n lockqueue.Node) string {
	return partOfPrefix + n.PartOf()
}

const partOfPrefix = "holds the internal lock for "

// EdgeText is a node's edge as the table shows it: a stalled holder's is
// "stalled" (its session still watches StalledOn).
func EdgeText(n lockqueue.Node) string {
	if n.StalledOn() != "" {
		return "stalled"
	}
	return string(n.Edge)
}

// WaitsText is what the recipe says a node waits for.
func WaitsText(n lockqueue.Node) string {
	if n.WaitsOn == lockqueue.OnChildren && n.Folder() != "" {
		// A semaphore's pending acquirer: a children watch on its leases.
		return "a free lease"
	}
	if n.WaitsOn == lockqueue.OnChildren {
		return "children of parent"
	}
	return n.WaitsFor
}

// WatchText lists what a node's session watches, siblings by name.
func WatchText(n lockqueue.Node, prefix string) string {
	if n.Watching == nil {
		if n.Foreign {
			return ""
		}
		return "unknown"
	}
	if len(n.Watching) == 0 {
		return "nothing"
	}
	if n.Folder() != "" {
		prefix = n.Folder() + "/" // a semaphore's node: its siblings are in its folder
	}
	out := make([]string, 0, len(n.Watching))
	for _, p := range n.Watching {
		if rest, ok := strings.CutPrefix(p, prefix); ok && !strings.Contains(rest, "/") {
			p = rest
		}
		out = append(out, p)
	}
	return strings.Join(out, ", ")
}

// DataText is a node's data as shown; binary data stays base64.
func DataText(n lockqueue.Node) string {
	if n.DataBinary {
		return "base64:" + n.Data
	}
	return n.Data
}

// oldestWait is when the longest wait began and "≥" when that is only
// when the reader first saw its node or its waiter
// (lockqueue.Node.CtimeAtMost, Snapshot.AnonymousSince).
func oldestWait(f *QueueFacts) (time.Time, string) {
	if f.OldestAtMost {
		return f.Oldest, "≥"
	}
	return f.Oldest, ""
}

// Duration formats a wait like a stopwatch: 4.2s, 37s, 3m 04s, 2h 05m, 3d 4h.
func Duration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	s := d.Seconds()
	switch {
	case s < 10:
		return fmt.Sprintf("%.1fs", s)
	case s < 60:
		return fmt.Sprintf("%ds", int(s))
	}
	m := int(s) / 60
	if m < 60 {
		return fmt.Sprintf("%dm %02ds", m, int(s)%60)
	}
	h := m / 60
	if h < 48 {
		return fmt.Sprintf("%dh %02dm", h, m%60)
	}
	return fmt.Sprintf("%dd %dh", h/24, h%24)
}

func httpStatusText(code int) string {
	if t := http.StatusText(code); t != "" {
		return fmt.Sprintf("%d %s", code, t)
	}
	return fmt.Sprint(code)
}

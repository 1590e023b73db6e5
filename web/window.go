package web

import (
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/views"
)

// A lock page looks at a few hundred nodes of a queue at a time: the lane
// draws its head, its tail, its holders and the page of the table the
// viewer reads, and folds the rest. A socket opened with ?window= sends a
// queue longer than windowWholeUpTo as that part alone (a "windowed"
// snapshot: the nodes drawn, and the counts of the rest), never the whole
// queue to draw a hundred of its nodes. Scrolling the table to another page
// or selecting a node elsewhere opens the socket again on that window. A
// socket without ?window= (the API's scripts, the side-by-side view, the
// classroom) gets every node as before.

// windowWholeUpTo: queues of up to this many nodes are drawn whole
// (views.LaneAllUpTo), so a windowed socket sends them whole, as any other.
// Past it the lane is folded (views.LaneEnds, views.LaneMaxExtra): this
// file picks what it draws, and the browser draws what it is sent.
const (
	windowWholeUpTo = views.LaneAllUpTo
	windowEnds      = views.LaneEnds
	windowMaxExtra  = views.LaneMaxExtra
	windowMaxSize   = 1000
)

// view is what one socket's viewer looks at: the size nodes from position
// from, and the node named node (selected) wherever it is. The zero view
// is a socket that asked for no window: every node.
type view struct {
	on   bool
	from int
	size int
	node string
	// parts asks for what the lock page draws beside the nodes with every
	// frame (pageframe.go): the table's page, its filter and the rest of
	// the page's parts, and the lane's name labels.
	parts  bool
	page   int
	filter string
	show   bool
}

// parseView reads ?window=FROM:SIZE and ?node=NAME.
func parseView(q url.Values) (view, error) {
	if !q.Has("window") {
		return view{}, nil
	}
	from, size, ok := strings.Cut(q.Get("window"), ":")
	v := view{on: true, node: q.Get("node")}
	var err1, err2 error
	v.from, err1 = strconv.Atoi(from)
	v.size, err2 = strconv.Atoi(size)
	if !ok || err1 != nil || err2 != nil || v.from < 0 || v.size < 1 || v.size > windowMaxSize {
		return view{}, errorf(ErrInvalid, "bad ?window=%q: want FROM:SIZE, the first node's position (from 0) and 1 to %d nodes", q.Get("window"), windowMaxSize)
	}
	return v, parseViewParts(&v, q)
}

// Window says which part of the queue a windowed snapshot's nodes are.
type Window struct {
	// Total is how many nodes the queue has; Holding how many of them hold.
	Total   int `json:"total"`
	Holding int `json:"holding"`
	// From and To (exclusive) are the window the viewer asked for, the
	// table's page, clamped to the queue.
	From int `json:"from"`
	To   int `json:"to"`
	// Runs are the positions of the nodes sent, in order: [first, count]
	// pairs, whose counts add up to len(nodes).
	Runs [][2]int `json:"runs"`
	// Folds are the stretches not sent: [first, last, holders in it].
	Folds [][3]int `json:"folds"`
	// Notified, in a classroom's folded lane, counts the nodes of each
	// fold, in Folds' order, that the step notified (foldRun).
	Notified []int `json:"notified,omitempty"`
	// Extra is how many middle nodes were sent for being holders, zombies,
	// alerted or selected; Capped that more were left folded.
	Extra  int  `json:"extra"`
	Capped bool `json:"capped"`
	// Note says under the lane what is drawn of the queue and what is
	// folded (views.FoldNote); empty when nothing is.
	Note string `json:"note,omitempty"`
	// Targets gives the positions of nodes the sent ones wait for or watch
	// that were not sent, so that their arrows end at the fold that holds
	// them instead of at nothing.
	Targets map[string]int `json:"targets,omitempty"`
}

// windowFacts are what every window of one snapshot of a long queue needs
// of the whole queue, read in one pass: its counts, where its holders are
// (to count those in each fold) and the first of the nodes drawn from the
// middle for what they are. A lock's sockets share them per snapshot
// (frameCache.windowFacts), so a window costs the nodes it sends.
type windowFacts struct {
	holding int
	// holders are the holders' positions, ascending.
	holders []int
	// notable are the first positions, ascending, of the holders, zombies
	// and alerted nodes: enough to reach windowMaxExtra of them outside
	// any window and its ends (notableKept).
	notable []int
	// positions finds a node by name when no neighbour is it.
	positions views.Positions
}

// notableKept: a window shows at most 2×windowEnds + windowMaxSize nodes
// of its own, so this many notable positions hold windowMaxExtra + 1
// outside it, which is where the drawing stops (Window.Capped).
const notableKept = 2*windowEnds + windowMaxSize + windowMaxExtra + 1

func readWindowFacts(s *lockqueue.Snapshot) *windowFacts {
	alerted := alertedNodes(s)
	f := &windowFacts{}
	for i := range s.Nodes {
		nd := &s.Nodes[i]
		if nd.Holding {
			f.holding++
			f.holders = append(f.holders, i)
		}
		if (nd.Holding || nd.Zombie || alerted[nd.Name]) && len(f.notable) < notableKept {
			f.notable = append(f.notable, i)
		}
	}
	return f
}

func alertedNodes(s *lockqueue.Snapshot) map[string]bool {
	alerted := map[string]bool{}
	for _, a := range s.Alerts {
		for _, name := range a.Nodes {
			alerted[name] = true
		}
	}
	return alerted
}

// position finds the node named name in nodes (those f was read from),
// looking first beside near, where it usually is (a waiter's predecessor).
func (f *windowFacts) position(nodes []lockqueue.Node, name string, near ...int) (int, bool) {
	for _, i := range near {
		if i >= 0 && i < len(nodes) && nodes[i].Name == name {
			return i, true
		}
	}
	return f.positions.Of(nodes, name)
}

// holdersIn counts the holders at positions from to to, both included.
func (f *windowFacts) holdersIn(from, to int) int {
	lo, _ := slices.BinarySearch(f.holders, from)
	hi, _ := slices.BinarySearch(f.holders, to+1)
	return hi - lo
}

// windowOf returns the part of s that v looks at, its nodes with their
// lane's lines and clocks (views.StampLane), and the window that says which part
// that is; every node and nil when s is short enough to send whole or v
// asks for everything. s's nodes are the hub's, shared: they are copied,
// never changed. facts are s's (nil: read here).
func windowOf(s lockqueue.Snapshot, v view, facts *windowFacts) (lockqueue.Snapshot, *Window) {
	n := len(s.Nodes)
	if !v.on || n <= windowWholeUpTo {
		return views.StampLane(s), nil
	}
	if facts == nil {
		facts = readWindowFacts(&s)
	}
	from := min(v.from, max(0, n-v.size))
	w := &Window{Total: n, From: from, To: min(n, from+v.size), Holding: facts.holding}
	shown := windowEndsAndPage(n, w)
	selected := -1
	if v.node != "" {
		if i, ok := facts.position(s.Nodes, v.node); ok && !isShown(shown, i) {
			selected = i
		}
	}
	shown = append(shown, windowExtra(shown, facts.notable, selected, w)...)
	slices.Sort(shown)
	shown = slices.Compact(shown)
	s = foldTo(s, shown, facts, w)
	if len(s.Nodes) < n {
		w.Note = views.FoldNote(n, w.From, w.To, len(s.Nodes), w.Extra, w.Capped)
	}
	return views.StampLane(s), w
}

// foldTo is the fold every lane of a long queue is drawn with, the lock
// page's window and the classroom's pane (runframe.go, foldRun): s with the nodes at
// the positions shown (ascending, distinct) and the rest folded, w's runs
// and folds saying which is which, and the positions of the folded nodes
// that the shown ones point at. s's nodes are copied, never changed.
func foldTo(s lockqueue.Snapshot, shown []int, facts *windowFacts, w *Window) lockqueue.Snapshot {
	nodes := windowRuns(s.Nodes, shown, facts, w)
	w.Targets = foldedTargets(s, nodes, shown, facts)
	s.Nodes = nodes
	return s
}

// windowEndsAndPage are the positions a window of n nodes always shows,
// ascending: the first and last windowEnds and the table's page.
func windowEndsAndPage(n int, w *Window) []int {
	shown := make([]int, 0, 2*windowEnds+(w.To-w.From)+windowMaxExtra+1)
	for i := range min(windowEnds, n) {
		shown = append(shown, i)
	}
	for i := max(windowEnds, w.From); i < w.To; i++ {
		shown = append(shown, i)
	}
	for i := max(n-windowEnds, w.To, windowEnds); i < n; i++ {
		shown = append(shown, i)
	}
	return shown
}

func isShown(shown []int, i int) bool {
	_, ok := slices.BinarySearch(shown, i)
	return ok
}

// windowExtra are the middle's nodes drawn for what they are (the notable
// positions: holders, zombies and alerted nodes, ascending) that shown
// lacks, in queue order, until windowMaxExtra of them, and the selected
// one (-1: none) in its place whatever the count; it counts them in w.
func windowExtra(shown, notable []int, selected int, w *Window) []int {
	var extra []int
	take := func(i int) {
		if isShown(shown, i) {
			return
		}
		switch {
		case i == selected:
			extra = append(extra, i)
			w.Extra++
		case w.Capped:
		case w.Extra >= windowMaxExtra:
			w.Capped = true
		default:
			extra = append(extra, i)
			w.Extra++
		}
	}
	for _, i := range notable {
		if selected >= 0 && selected <= i {
			take(selected)
			if selected == i {
				selected = -1
				continue
			}
			selected = -1
		}
		take(i)
	}
	if selected >= 0 {
		take(selected)
	}
	return extra
}

// windowRuns are the nodes at the positions shown (ascending, distinct),
// with w's runs of them and the folds between.
func windowRuns(all []lockqueue.Node, shown []int, facts *windowFacts, w *Window) []lockqueue.Node {
	n := len(all)
	nodes := make([]lockqueue.Node, 0, len(shown))
	next := 0 // the first position not yet in a run or a fold
	for r := 0; r < len(shown); {
		i := shown[r]
		j := r
		for j+1 < len(shown) && shown[j+1] == shown[j]+1 {
			j++
		}
		if i > next {
			w.Folds = append(w.Folds, [3]int{next, i - 1, facts.holdersIn(next, i-1)})
		}
		nodes = append(nodes, all[i:shown[j]+1]...)
		w.Runs = append(w.Runs, [2]int{i, shown[j] - i + 1})
		next = shown[j] + 1
		r = j + 1
	}
	if next < n {
		w.Folds = append(w.Folds, [3]int{next, n - 1, facts.holdersIn(next, n-1)})
	}
	return nodes
}

// foldedTargets finds the positions of the nodes that the sent nodes (at
// the positions shown) wait for, watch or are blocked by but that were not
// sent.
func foldedTargets(s lockqueue.Snapshot, sent []lockqueue.Node, shown []int, facts *windowFacts) map[string]int {
	in := make(map[string]bool, len(sent))
	for i := range sent {
		in[sent[i].Name] = true
	}
	var at map[string]int
	need := func(name string, from int) {
		if name == "" || in[name] {
			return
		}
		if _, done := at[name]; done {
			return
		}
		if i, ok := facts.position(s.Nodes, name, from-1, from+1); ok {
			if at == nil {
				at = map[string]int{}
			}
			at[name] = i
		}
	}
	prefix := strings.TrimSuffix(s.Path, "/") + "/"
	for k := range sent {
		nd := &sent[k]
		need(nd.WaitsFor, shown[k])
		for _, b := range nd.BlockedBy() {
			need(b, shown[k])
		}
		p := prefix
		if nd.Folder() != "" {
			p = nd.Folder() + "/"
		}
		for _, w := range nd.Watching {
			if name, ok := strings.CutPrefix(w, p); ok && !strings.Contains(name, "/") {
				need(name, shown[k])
			}
		}
	}
	return at
}

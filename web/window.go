package web

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/zklockviz/zklockviz/lockqueue"
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

// windowWholeUpTo: queues of up to this many nodes are sent whole, windowed
// socket or not, and look and behave as they always did.
const windowWholeUpTo = 1000

// The lane's own fold (static/queue.js): its first and last windowEnds
// nodes, and at most windowMaxExtra holders, zombies and alerted nodes from
// the middle.
const (
	windowEnds     = 50
	windowMaxExtra = 200
	windowMaxSize  = 1000
)

// view is what one socket's viewer looks at: the size nodes from position
// from, and the node named node (selected) wherever it is. The zero view
// is a socket that asked for no window: every node.
type view struct {
	on   bool
	from int
	size int
	node string
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
	return v, nil
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
	// Extra is how many middle nodes were sent for being holders, zombies,
	// alerted or selected; Capped that more were left folded.
	Extra  int  `json:"extra"`
	Capped bool `json:"capped"`
	// ChildWatchers counts the queue's waiters on the parent's children.
	ChildWatchers int `json:"childWatchers"`
	// Targets gives the positions of nodes the sent ones wait for or watch
	// that were not sent, so that their arrows end at the fold that holds
	// them instead of at nothing.
	Targets map[string]int `json:"targets,omitempty"`
}

// windowOf returns the part of s that v looks at, and the window that says
// which part that is; s itself and nil when s is short enough to send
// whole or v asks for everything. s's nodes are the hub's, shared: they are
// copied, never changed.
func windowOf(s lockqueue.Snapshot, v view) (lockqueue.Snapshot, *Window) {
	n := len(s.Nodes)
	if !v.on || n <= windowWholeUpTo {
		return s, nil
	}
	from := min(v.from, max(0, n-v.size))
	w := &Window{Total: n, From: from, To: min(n, from+v.size)}
	alerted := map[string]bool{}
	for _, a := range s.Alerts {
		for _, name := range a.Nodes {
			alerted[name] = true
		}
	}
	show := make([]bool, n)
	sent := 0
	mark := func(i int) {
		if !show[i] {
			show[i] = true
			sent++
		}
	}
	for i := range min(windowEnds, n) {
		mark(i)
	}
	for i := max(0, n-windowEnds); i < n; i++ {
		mark(i)
	}
	for i := w.From; i < w.To; i++ {
		mark(i)
	}
	for i := range s.Nodes {
		nd := &s.Nodes[i]
		if nd.Holding {
			w.Holding++
		}
		if nd.WaitsOn == lockqueue.OnChildren {
			w.ChildWatchers++
		}
		if show[i] {
			continue
		}
		if nd.Name == v.node || (nd.Holding || nd.Zombie || alerted[nd.Name]) && !w.Capped {
			if nd.Name != v.node && w.Extra >= windowMaxExtra {
				w.Capped = true
				continue
			}
			mark(i)
			w.Extra++
		}
	}
	nodes := make([]lockqueue.Node, 0, sent)
	for i := 0; i < n; {
		j := i
		for j < n && show[j] == show[i] {
			j++
		}
		if show[i] {
			nodes = append(nodes, s.Nodes[i:j]...)
			w.Runs = append(w.Runs, [2]int{i, j - i})
		} else {
			holding := 0
			for k := i; k < j; k++ {
				if s.Nodes[k].Holding {
					holding++
				}
			}
			w.Folds = append(w.Folds, [3]int{i, j - 1, holding})
		}
		i = j
	}
	w.Targets = foldedTargets(s, nodes, show)
	s.Nodes = nodes
	return s, w
}

// foldedTargets finds the positions of the nodes that the sent nodes wait
// for, watch or are blocked by but that were not sent.
func foldedTargets(s lockqueue.Snapshot, sent []lockqueue.Node, show []bool) map[string]int {
	in := make(map[string]bool, len(sent))
	for i := range sent {
		in[sent[i].Name] = true
	}
	want := map[string]bool{}
	need := func(name string) {
		if name != "" && !in[name] {
			want[name] = true
		}
	}
	prefix := strings.TrimSuffix(s.Path, "/") + "/"
	for i := range sent {
		nd := &sent[i]
		need(nd.WaitsFor)
		for _, b := range nd.BlockedBy {
			need(b)
		}
		p := prefix
		if nd.Folder != "" {
			p = nd.Folder + "/"
		}
		for _, w := range nd.Watching {
			if name, ok := strings.CutPrefix(w, p); ok && !strings.Contains(name, "/") {
				need(name)
			}
		}
	}
	if len(want) == 0 {
		return nil
	}
	at := make(map[string]int, len(want))
	for i := range s.Nodes {
		if !show[i] && want[s.Nodes[i].Name] {
			at[s.Nodes[i].Name] = i
		}
	}
	return at
}

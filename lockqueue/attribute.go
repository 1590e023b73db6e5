package lockqueue

import (
	"slices"
	"sort"
	"strings"
)

// queueView answers what a watched path is, seen from one lock parent.
type queueView struct {
	parent string
	prefix string // parent + "/"
	nodes  []Node
	// index of each node by name, made only when needed: most joins
	// never ask.
	index map[string]int
}

func newQueueView(s *Snapshot) *queueView {
	prefix := s.Path + "/"
	if s.Path == "/" {
		prefix = "/"
	}
	return &queueView{parent: s.Path, prefix: prefix, nodes: s.Nodes}
}

func (q *queueView) lookup(name string) (int, bool) {
	if q.index == nil {
		q.index = make(map[string]int, len(q.nodes))
		for i, n := range q.nodes {
			q.index[n.Name] = i
		}
	}
	i, ok := q.index[name]
	return i, ok
}

func (q *queueView) has(name string) bool {
	_, ok := q.lookup(name)
	return ok
}

// watchKind is what one watched path is to a lock.
type watchKind int

const (
	watchElsewhere watchKind = iota // not the parent nor one of its children
	watchParent                     // the lock parent: a children watch (only a simulator table lists these)
	watchSibling                    // a child of the parent in the listing, lock node or foreign
	watchGone                       // a child of the parent not in the listing: a dangling watch
)

// watchTarget is one watched path as the lock sees it.
type watchTarget struct {
	kind watchKind
	name string // the child's name, for watchSibling and watchGone
}

func (q *queueView) target(p string) watchTarget {
	if p == q.parent {
		return watchTarget{kind: watchParent}
	}
	if !strings.HasPrefix(p, q.prefix) {
		return watchTarget{kind: watchElsewhere}
	}
	// A node of the lock is named by its path below the parent: a direct
	// child, or one in a folder of the lock's own layout (a semaphore's).
	name := p[len(q.prefix):]
	switch {
	case q.has(name):
		return watchTarget{kind: watchSibling, name: name}
	case strings.Contains(name, "/"):
		return watchTarget{kind: watchElsewhere}
	}
	return watchTarget{kind: watchGone, name: name}
}

// isChild reports whether p is prefix+name, without building it.
func (q *queueView) isChild(p, name string) bool {
	return len(p) == len(q.prefix)+len(name) && p[:len(q.prefix)] == q.prefix && p[len(q.prefix):] == name
}

// ruleWatch is the path a waiter's rule says its session watches, among
// the session's watches; "" when it watches no such path.
func ruleWatch(n *Node, watches []string, q *queueView) string {
	switch {
	case n.Holding:
		return ""
	case n.WaitsOn == OnChildren:
		if slices.Contains(watches, q.parent) {
			return q.parent
		}
	case n.WaitsFor != "":
		for _, p := range watches {
			if q.isChild(p, n.WaitsFor) {
				return p
			}
		}
	}
	return ""
}

// attribution is what a session's watches say about one of its nodes.
type attribution struct {
	watching []string // sorted; shown as the node's Watching
	// ambiguous: the watches are the session's, and which of its nodes
	// holds which cannot be told.
	ambiguous bool
}

// attribute splits each session's watches among the session's nodes. The
// result has an entry, by index into s.Nodes, for every node of a session
// (nil when the table tells nothing). A session's watch is given to one of
// its nodes only when that is unambiguous:
//
//   - a session with one node: all its watches are the node's;
//   - a watch on a waiter's own rule target is that waiter's;
//   - what remains is the one waiter's whose target is not watched, if
//     there is exactly one; with none such, it is the one holder's, if the
//     session has exactly one (a holder that still watches is what a
//     stalled holder is);
//   - otherwise the remaining watches are shown on each candidate as the
//     session's, marked ambiguous: no edge, no stall, no cycle from them.
func attribute(s *Snapshot, w WatchTable, q *queueView) []attribution {
	if !w.known() {
		return nil
	}
	out := make([]attribution, len(s.Nodes))
	bySession := map[int64][]int{}
	for i, n := range s.Nodes {
		if n.Foreign || n.owner == 0 {
			continue
		}
		bySession[n.owner] = append(bySession[n.owner], i)
	}
	for id, idx := range bySession {
		watches := w.Watches[id]
		if len(idx) == 1 {
			out[idx[0]] = attribution{watching: sortedCopy(watches)}
			continue
		}
		splitSession(s.Nodes, idx, watches, q, out)
	}
	return out
}

// splitSession attributes the watches of one session owning the nodes idx.
func splitSession(nodes []Node, idx []int, watches []string, q *queueView, out []attribution) {
	claimed := map[string]bool{}
	var waiters, holders []int // without a claimed watch
	for _, i := range idx {
		n := &nodes[i]
		if p := ruleWatch(n, watches, q); p != "" {
			claimed[p] = true
			out[i] = attribution{watching: []string{p}}
			continue
		}
		if n.Holding {
			holders = append(holders, i)
		} else {
			waiters = append(waiters, i)
		}
	}
	rest := []string{}
	for _, p := range watches {
		if !claimed[p] {
			rest = append(rest, p)
		}
	}
	sort.Strings(rest)
	candidates := waiters
	if len(waiters) == 0 {
		candidates = holders
	} else {
		for _, i := range holders {
			out[i] = attribution{watching: []string{}}
		}
	}
	switch {
	case len(candidates) == 1:
		// The only candidate of the session: whatever else the session
		// watches can only be its.
		out[candidates[0]] = attribution{watching: rest}
	case len(rest) == 0:
		// Several candidates and nothing else watched: each watches nothing.
		for _, i := range candidates {
			out[i] = attribution{watching: []string{}}
		}
	default:
		// Which candidate holds which watch is unknowable. The watches are
		// still shown, as the session's.
		for _, i := range candidates {
			out[i] = attribution{watching: rest, ambiguous: true}
		}
	}
}

func sortedCopy(xs []string) []string {
	out := append([]string{}, xs...)
	sort.Strings(out)
	return out
}

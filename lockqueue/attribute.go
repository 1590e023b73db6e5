package lockqueue

import (
	"slices"
	"sort"
	"strings"
	"sync"
)

// queueView answers what a watched path is, seen from one lock parent.
//
// A node's path is its folder's plus its name: the parent's for most
// locks, Node.Folder for a semaphore's nodes kept elsewhere (Curator's
// leases/ and locks/, kazoo's <path>-__lock__ sibling, which is not even
// below the parent). This is the one way a watched path is mapped to a
// node of the lock, for attribution, edges, stalls and cycles alike. Nodes
// are named by Name alone everywhere else (WaitsFor, StalledOn, alerts,
// deltas): the recipes' names never repeat across a lock's folders (a
// random id or UUID in each, and a different kind word in Curator's).
type queueView struct {
	parent string
	prefix string // parent + "/"
	nodes  []Node
	// index of each node by name, and the folders (as prefixes, with the
	// trailing "/") of nodes not in the parent, made only when needed:
	// most joins never ask.
	index   map[string]int
	folders map[string]bool
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
		for i := range q.nodes {
			n := &q.nodes[i]
			q.index[n.Name] = i
			if n.Folder() != "" {
				if q.folders == nil {
					q.folders = map[string]bool{}
				}
				q.folders[n.Folder()+"/"] = true
			}
		}
	}
	i, ok := q.index[name]
	return i, ok
}

func (q *queueView) has(name string) bool {
	_, ok := q.lookup(name)
	return ok
}

// dir is the folder n lives in, as a prefix of its path.
func (q *queueView) dir(n *Node) string {
	if n.Folder() == "" {
		return q.prefix
	}
	return n.Folder() + "/"
}

// watchKind is what one watched path is to a lock.
type watchKind int

const (
	watchElsewhere watchKind = iota // not the parent nor a child of a folder of the lock
	watchParent                     // the lock parent: a children watch (only a simulator table lists these)
	watchSibling                    // a node of the lock in the listing, lock node or foreign
	watchGone                       // a child of a folder of the lock not in the listing: a dangling watch
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
	slash := strings.LastIndexByte(p, '/')
	if slash < 0 {
		return watchTarget{kind: watchElsewhere}
	}
	dir, name := p[:slash+1], p[slash+1:]
	i, ok := q.lookup(name) // builds q.folders
	if dir != q.prefix && !q.folders[dir] {
		return watchTarget{kind: watchElsewhere}
	}
	if ok && q.dir(&q.nodes[i]) == dir {
		return watchTarget{kind: watchSibling, name: name}
	}
	if len(q.folders) > 0 && q.folders[p+"/"] {
		return watchTarget{kind: watchElsewhere} // a semaphore's folder itself
	}
	return watchTarget{kind: watchGone, name: name}
}

// isPath reports whether p is dir+name, without building it.
func isPath(p, dir, name string) bool {
	return len(p) == len(dir)+len(name) && p[:len(dir)] == dir && p[len(dir):] == name
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
		// A waiter's predecessor is in its own folder.
		dir := q.dir(n)
		for _, p := range watches {
			if isPath(p, dir, n.WaitsFor) {
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
	out := attributions(len(s.Nodes))
	for _, idx := range bySession(s.Nodes) {
		watches := w.Watches[s.Nodes[idx[0]].owner]
		if len(idx) == 1 {
			out[idx[0]] = attribution{watching: sortedCopy(watches)}
			continue
		}
		splitSession(s.Nodes, idx, watches, q, out)
	}
	return out
}

// attributionPool holds attribute's results between joins: one entry per
// node, 32 KB for a 1,000-node queue, dead once the join has read them.
var attributionPool = sync.Pool{New: func() any { return new([]attribution) }}

// attributions returns n zero attributions, from the pool when it can.
func attributions(n int) []attribution {
	p := attributionPool.Get().(*[]attribution)
	if cap(*p) < n {
		return make([]attribution, n)
	}
	return (*p)[:n]
}

// releaseAttributions gives out back to the pool, cleared: the watches it
// names are the nodes' now, and must not be kept alive by the pool.
func releaseAttributions(out []attribution) {
	if out == nil {
		return
	}
	clear(out[:cap(out)])
	out = out[:0]
	attributionPool.Put(&out)
}

// bySession groups the indices of nodes owned by a session, session by
// session, in queue order within each. The groups share one array: a
// slice grown per session was a third of a big queue's join allocation.
func bySession(nodes []Node) [][]int {
	group := map[int64]int{} // a session's group, by first appearance
	// Neighbours often share a session (threads of one client, a
	// benchmark's one writer): the last node's group saves a lookup.
	last, lastG := int64(0), 0
	groupOf := func(owner int64) (int, bool) {
		if owner != last {
			g, ok := group[owner]
			if !ok {
				return 0, false
			}
			last, lastG = owner, g
		}
		return lastG, true
	}
	var sizes []int
	for i := range nodes {
		if n := &nodes[i]; !n.Foreign && n.owner != 0 {
			g, ok := groupOf(n.owner)
			if !ok {
				g = len(sizes)
				group[n.owner] = g
				sizes = append(sizes, 0)
			}
			sizes[g]++
		}
	}
	flat := make([]int, 0, len(nodes))
	groups := make([][]int, len(sizes))
	for g, size := range sizes {
		groups[g] = flat[len(flat) : len(flat) : len(flat)+size]
		flat = flat[:len(flat)+size]
	}
	for i := range nodes {
		if n := &nodes[i]; !n.Foreign && n.owner != 0 {
			g, _ := groupOf(n.owner)
			groups[g] = append(groups[g], i)
		}
	}
	return groups
}

// splitSession attributes the watches of one session owning the nodes idx.
func splitSession(nodes []Node, idx []int, watches []string, q *queueView, out []attribution) {
	claimed := map[string]bool{}
	// Without a claimed watch; most of a session's nodes wait.
	waiters, holders := make([]int, 0, len(idx)), []int(nil)
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

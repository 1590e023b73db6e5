package lockqueue

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// WatchTable is what the server tells about watches and sessions, merged over
// every ensemble member, with the watcher's own session and /zookeeper/config
// already dropped.
type WatchTable struct {
	Source string // "4lw", "admin", "none" or "simulator"
	// Watches maps a session to the paths it watches. The server lists only data
	// watches (exists/getData); a "simulator" table also lists children watches,
	// as the watched parent's own path.
	Watches map[int64][]string
	// Connected is the set of sessions with a live connection on some member;
	// nil when unknown.
	Connected map[int64]bool
	// Partial says that not every ensemble member was asked: Connected and
	// Watches then cover only the sessions connected to the members asked.
	// A session absent from Connected may be connected to another member, so
	// it is neither a zombie nor known to watch nothing: its watches are
	// unknown.
	Partial bool
	// Expiry is when a session expires, when the server tells.
	Expiry map[int64]time.Time
	// ChildWatches counts children watches the server holds but cannot list; -1 unknown.
	ChildWatches int
}

// NoWatches is the table used when the server tells nothing.
var NoWatches = WatchTable{Source: "none", ChildWatches: -1}

// Debounce is how long a waiter may show a suspect edge (missing,
// unexpected or dangling) before it counts: a watch is absent for a moment
// between firing and being re-armed, and the watch table joined with a fresh
// child listing can be up to one poll older than the listing, so for a moment
// a waiter may seem to watch a node that has just gone (dangling) or a node
// that is no longer its predecessor (unexpected).
const Debounce = 2 * time.Second

// JoinWatches fills each node's actual watches and edge, and adds deadlock,
// zombie and orphan alerts. missingSince carries, from one call to the next,
// when each node was first seen with a suspect edge; the returned map
// replaces it (it is missingSince itself, updated, when that is not nil: a
// rebuild of a big queue then allocates no new map). A caller whose table
// is exact (the simulator) passes a zero time for every node to skip the
// debounce.
//
// The server lists watches per session, not per node, and one session may own
// several nodes of a queue (threads sharing a client). A session's watch is
// attributed to one of its nodes only when that is unambiguous: a watch on a
// node's own rule target belongs to that node, and what remains belongs to
// the session's one waiter whose target is not watched, if there is exactly
// one. Waiters of a session left with unattributable watches get the edge
// "unknown", and only attributed watches become edges of the wait-for graph,
// so a watch of one thread never makes a cycle through its sibling.
func JoinWatches(s *Snapshot, w WatchTable, missingSince map[string]time.Time, now time.Time) map[string]time.Time {
	s.WatchSource = w.Source
	s.InvisibleChildWatches = w.ChildWatches
	next := missingSince
	if next == nil {
		next = map[string]time.Time{}
	}
	// The set of names, made only when needed: most joins never ask.
	var presentSet map[string]bool
	present := func() map[string]bool {
		if presentSet == nil {
			presentSet = make(map[string]bool, len(s.Nodes))
			for _, n := range s.Nodes {
				presentSet[n.Name] = true
			}
		}
		return presentSet
	}
	prefix := s.Path + "/"
	if s.Path == "/" {
		prefix = "/"
	}
	known := w.Source != "none" && w.Source != ""
	attributed := attribute(s, w, prefix, known)

	var zombies []string
	pending := 0 // entries of next for nodes of s
	for i := range s.Nodes {
		n := &s.Nodes[i]
		// Reset everything a join sets, so a joined snapshot's nodes can
		// be joined again (the watcher joins its last published nodes with
		// each new watch table).
		n.Watching, n.Edge, n.Zombie, n.ExpiresInMs = nil, EdgeNone, false, 0
		if n.Foreign || n.owner == 0 {
			delete(next, n.Name)
			continue
		}
		// With only some members asked, a session seen on none of them
		// may be connected elsewhere: its liveness and watches are unknown.
		unseen := w.Partial && !w.Connected[n.owner]
		var a attribution
		if attributed != nil {
			a = attributed[i]
		}
		if known && !unseen {
			n.Watching = a.watching
		}
		if w.Connected != nil && !w.Connected[n.owner] && !w.Partial {
			n.Zombie = true
			if exp, ok := w.Expiry[n.owner]; ok && exp.After(now) {
				n.ExpiresInMs = exp.Sub(now).Milliseconds()
			}
			zombies = append(zombies, n.Name)
		}
		if n.Holding {
			delete(next, n.Name)
			continue
		}
		switch {
		case !known || unseen:
			n.Edge = EdgeUnknown
		case n.WaitsOn == "children":
			n.Edge = EdgeChildWatch
			if w.Source == "simulator" && !contains(n.Watching, s.Path) {
				n.Edge = EdgeMissing
			}
		case a.ambiguous:
			n.Edge = EdgeUnknown
		default:
			n.Edge = classify(n, s.Path, folderPrefix(prefix, n), present)
		}
		if suspect(n.Edge) && !n.Zombie {
			since, ok := next[n.Name]
			if !ok {
				since = now
				next[n.Name] = since
			}
			pending++
			if now.Sub(since) < Debounce {
				n.Edge = EdgeNone
			}
		} else {
			delete(next, n.Name)
		}
	}
	if len(next) > pending {
		for name := range next {
			if !present()[name] {
				delete(next, name)
			}
		}
	}
	if len(zombies) > 0 {
		s.Alerts = append(s.Alerts, zombieAlert(s, zombies))
	}
	if known {
		if cyc := findCycle(s, prefix, present); len(cyc) > 0 {
			s.Alerts = append(s.Alerts, Alert{Kind: AlertDeadlock, Nodes: cyc,
				Message: "waiters watch each other in a cycle: " + strings.Join(append(cyc, cyc[0]), " → ") + "; no release will ever wake them"})
		}
		var orphans []string
		for _, n := range s.Nodes {
			if n.Edge == EdgeMissing && len(n.Watching) == 0 {
				orphans = append(orphans, n.Name)
			}
		}
		if len(orphans) > 0 {
			s.Alerts = append(s.Alerts, Alert{Kind: AlertOrphan, Nodes: clip(orphans),
				Message: fmt.Sprintf("%d waiters in live sessions watch nothing: nothing will wake them (an interrupted acquire or release leaves such nodes)", len(orphans))})
		}
	}
	return next
}

// suspect edges are debounced before they show.
func suspect(e Edge) bool {
	return e == EdgeMissing || e == EdgeUnexpected || e == EdgeDangling
}

// attribution is what a session's watches say about one of its nodes.
type attribution struct {
	watching []string // sorted; shown as the node's Watching
	// ambiguous: the watches are the session's, and which of its waiters
	// holds which cannot be told.
	ambiguous bool
}

// attribute splits each session's watches among the session's nodes (see
// JoinWatches). The result has an entry, by index into s.Nodes, for every
// node of a session; ambiguous marks waiters whose watches cannot be told
// apart from their siblings'.
func attribute(s *Snapshot, w WatchTable, prefix string, known bool) []attribution {
	if !known {
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
			// One node, one session: everything it watches is its own.
			ws := append([]string{}, watches...)
			sort.Strings(ws)
			out[idx[0]] = attribution{watching: ws}
			continue
		}
		claimed := map[string]bool{}
		var unresolved []int
		for _, i := range idx {
			n := &s.Nodes[i]
			if n.Holding {
				out[i] = attribution{watching: []string{}}
				continue
			}
			target := ""
			if n.WaitsOn == "children" {
				if contains(watches, s.Path) {
					target = s.Path
				}
			} else if n.WaitsFor != "" {
				for _, p := range watches {
					if isChild(p, folderPrefix(prefix, n), n.WaitsFor) {
						target = p
						break
					}
				}
			}
			if target != "" {
				claimed[target] = true
				out[i] = attribution{watching: []string{target}}
				continue
			}
			unresolved = append(unresolved, i)
		}
		var rest []string
		for _, p := range watches {
			if !claimed[p] {
				rest = append(rest, p)
			}
		}
		sort.Strings(rest)
		switch {
		case len(unresolved) == 1:
			// The only waiter of the session without its target watched:
			// whatever else the session watches can only be its.
			if rest == nil {
				rest = []string{}
			}
			out[unresolved[0]] = attribution{watching: rest}
		case len(rest) == 0:
			// Several waiters, none watching its target, and nothing else
			// watched: each one watches nothing.
			for _, i := range unresolved {
				out[i] = attribution{watching: []string{}}
			}
		default:
			// Several waiters miss their target and the session watches
			// other things: which waiter holds which watch is unknowable.
			// They are left unattributed (edge unknown, no graph edge); the
			// watches are still shown, as the session's.
			for _, i := range unresolved {
				out[i] = attribution{watching: rest, ambiguous: true}
			}
		}
	}
	return out
}

func classify(n *Node, parent, prefix string, present func() map[string]bool) Edge {
	for _, p := range n.Watching {
		if isChild(p, prefix, n.WaitsFor) {
			return EdgeConfirmed
		}
	}
	edge := EdgeMissing
	for _, p := range n.Watching {
		if p == parent {
			// A children watch (only a simulator table lists these): a herd waiter.
			edge = EdgeUnexpected
			continue
		}
		if !strings.HasPrefix(p, prefix) || strings.Contains(p[len(prefix):], "/") {
			continue
		}
		if !present()[p[len(prefix):]] {
			return EdgeDangling
		}
		edge = EdgeUnexpected
	}
	return edge
}

// folderPrefix is the path prefix of n's siblings: a semaphore's node and
// the node it waits for live in one of the semaphore's folders, not
// directly under the lock path (prefix).
func folderPrefix(prefix string, n *Node) string {
	if n.Folder == "" {
		return prefix
	}
	return n.Folder + "/"
}

// isChild reports whether p is prefix+name, without building it.
func isChild(p, prefix, name string) bool {
	return len(p) == len(prefix)+len(name) && p[:len(prefix)] == prefix && p[len(prefix):] == name
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func zombieAlert(s *Snapshot, names []string) Alert {
	msg := fmt.Sprintf("%d nodes belong to sessions with no live connection: their clients are gone or cut off, but the nodes stay until the session expires", len(names))
	for _, n := range s.Nodes {
		if n.Zombie && n.ExpiresInMs > 0 {
			msg += fmt.Sprintf(" (%s expires in %.1fs)", n.Name, float64(n.ExpiresInMs)/1000)
			break
		}
	}
	return Alert{Kind: AlertZombie, Nodes: clip(names), Message: msg}
}

// findCycle looks for a cycle in the actual wait-for graph: an edge from a
// waiting node to each sibling it watches. Only waiters whose watches are
// attributed to them and whose edge has outlived the debounce (confirmed or
// unexpected) give edges: a sibling's watch, or a table older than the
// listing, must not make a deadlock.
func findCycle(s *Snapshot, prefix string, present func() map[string]bool) []string {
	adj := map[string][]string{}
	for _, n := range s.Nodes {
		if n.Holding || n.Foreign || (n.Edge != EdgeConfirmed && n.Edge != EdgeUnexpected) {
			continue
		}
		for _, p := range n.Watching {
			if np := folderPrefix(prefix, &n); strings.HasPrefix(p, np) {
				if m := p[len(np):]; m != n.Name && present()[m] {
					adj[n.Name] = append(adj[n.Name], m)
				}
			}
		}
	}
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var stack []string
	var found []string
	var visit func(string) bool
	visit = func(u string) bool {
		color[u] = grey
		stack = append(stack, u)
		for _, v := range adj[u] {
			switch color[v] {
			case grey:
				for i := len(stack) - 1; i >= 0; i-- {
					if stack[i] == v {
						found = append([]string{}, stack[i:]...)
						return true
					}
				}
			case white:
				if visit(v) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[u] = black
		return false
	}
	for _, n := range s.Nodes {
		if color[n.Name] == white && len(adj[n.Name]) > 0 && visit(n.Name) {
			return found
		}
	}
	return nil
}

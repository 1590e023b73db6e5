package lockqueue

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// The join's rules, each a function over plain data: what one node's
// watches say about it, and what the queue as a whole must be told.

// waiterEdge classifies what a waiter's session watches (n.Watching,
// attributed to it) against its rule.
func waiterEdge(n *Node, source string, q *queueView) Edge {
	if n.WaitsOn == OnChildren {
		return childrenRuleEdge(n, source, q)
	}
	return nodeRuleEdge(n, q)
}

// childrenRuleEdge: the server never lists children watches, so a
// children-watch rule can be confirmed only by a table that lists them
// (the simulator's).
func childrenRuleEdge(n *Node, source string, q *queueView) Edge {
	if source == "simulator" && !slices.Contains(n.Watching, q.parent) {
		return EdgeMissing
	}
	return EdgeChildWatch
}

// nodeRuleEdge: a watch on the rule's node confirms it; otherwise a watch
// on a node that is gone is dangling, one on anything else of the lock
// unexpected, and nothing of the lock watched is missing.
func nodeRuleEdge(n *Node, q *queueView) Edge {
	dir := q.dir(n)
	for _, p := range n.Watching {
		if isPath(p, dir, n.WaitsFor) {
			return EdgeConfirmed
		}
	}
	edge := EdgeMissing
	for _, p := range n.Watching {
		switch q.target(p).kind {
		case watchGone:
			return EdgeDangling
		case watchParent, watchSibling:
			edge = EdgeUnexpected
		}
	}
	return edge
}

// laneWatches is what each of n's watches on its lock is, for Node.Watches:
// nil when n has none, or just the one on WaitsFor that confirms its rule.
// A waiter's watch is known to be its own (and so confirmed or unexpected)
// only when its edge is: while a suspect edge is debounced, or when its
// session's watches could be any of its nodes', the watch is unknown.
func laneWatches(n *Node, q *queueView) []Watch {
	if n.Foreign || len(n.Watching) == 0 || (n.Edge == EdgeConfirmed && len(n.Watching) == 1) {
		return nil
	}
	var out []Watch
	for _, p := range n.Watching {
		t := q.target(p)
		var k Edge
		switch {
		case t.kind == watchElsewhere:
			continue
		case t.kind == watchParent:
			k = EdgeChildWatch
		case t.kind == watchGone:
			k = EdgeDangling
		case n.Holding && n.StalledOn() == t.name:
			k = EdgeStalled
		case n.Holding:
			k = EdgeUnexpected
		case n.Edge == EdgeNone || n.Edge == EdgeUnknown:
			k = EdgeUnknown
		case t.name == n.WaitsFor:
			k = EdgeConfirmed
		default:
			k = EdgeUnexpected
		}
		out = append(out, Watch{To: t.name, Kind: k})
	}
	if len(out) == 1 && out[0] == (Watch{To: n.WaitsFor, Kind: EdgeConfirmed}) {
		return nil
	}
	return out
}

// StampWatches sets every node's Watches (laneWatches) from its Watching
// and Edge, for a snapshot that was not joined: a replay of the history,
// which keeps those two and derives the kinds again. It first marks the
// stalls its alerts tell (markStalled), so a stalled watch is drawn as
// the join drew it, and then the deadlock cycle's waits (markCycle).
func StampWatches(s *Snapshot) {
	q := newQueueView(s)
	markStalled(s, q)
	for i := range s.Nodes {
		s.Nodes[i].SetWatches(laneWatches(&s.Nodes[i], q))
	}
	markCycle(s, q)
}

// markStalled sets StalledOn and StalledSince on each holder a
// stalled-holder alert names with its stall: a replay keeps the alerts,
// not the grace that the join times a stall by.
func markStalled(s *Snapshot, q *queueView) {
	for _, a := range s.Alerts {
		if a.Kind != AlertStalled || len(a.Nodes) != 2 || a.Since.IsZero() {
			continue
		}
		if i, ok := q.lookup(a.Nodes[0]); ok && s.Nodes[i].Holding {
			s.Nodes[i].SetStalledOn(a.Nodes[1])
			s.Nodes[i].SetStalledSince(a.Since)
		}
	}
}

// markCycle marks the watches that make the lock's deadlock cycle (its
// AlertDeadlock, whose nodes are the cycle in wait order): each cycle
// node's watch on the next. The join marks them when it finds the cycle,
// a replay from the recorded alert; q is the caller's view of s. s's
// nodes are copied first when a watch is marked: they may be a published
// snapshot's.
func markCycle(s *Snapshot, q *queueView) {
	i := slices.IndexFunc(s.Alerts, func(a Alert) bool { return a.Kind == AlertDeadlock && len(a.Locks) == 0 })
	if i < 0 {
		return
	}
	cyc := s.Alerts[i].Nodes
	copied := false
	for k, name := range cyc {
		at, ok := q.lookup(name)
		if !ok {
			continue
		}
		n := &s.Nodes[at]
		ws := n.Watches()
		if ws == nil && n.Edge == EdgeConfirmed {
			ws = []Watch{{To: n.WaitsFor, Kind: EdgeConfirmed}}
		}
		j := slices.IndexFunc(ws, func(w Watch) bool { return w.To == cyc[(k+1)%len(cyc)] })
		if j < 0 || ws[j].Cycle {
			continue
		}
		if !copied {
			s.Nodes, copied = slices.Clone(s.Nodes), true
			n = &s.Nodes[at]
		}
		ws = slices.Clone(ws)
		ws[j].Cycle = true
		n.SetWatches(ws)
	}
}

// StampParent sets s.Parent from the whole of s: the hub stamps every
// published snapshot, the history's replay and a classroom step theirs,
// before any window is cut from it.
func StampParent(s *Snapshot) {
	p := Parent{}
	semaphore := false
	for i := range s.Nodes {
		n := &s.Nodes[i]
		if n.WaitsOn == OnChildren {
			p.ChildWatchers++
		}
		semaphore = semaphore || n.Folder() != ""
	}
	switch {
	case !s.Live():
		p.Is = ParentUnknown
	case !s.Exists:
		p.Is = ParentMissing
	case s.InvisibleChildWatches > 0:
		p.Is, p.N = ParentInvisible, s.InvisibleChildWatches
	case p.ChildWatchers > 0 && semaphore:
		p.Is, p.N = ParentLeases, p.ChildWatchers
	case p.ChildWatchers > 0:
		p.Is, p.N = ParentHerd, p.ChildWatchers
	}
	s.Parent = p
}

// suspect edges are debounced before they show.
func suspect(e Edge) bool {
	return e == EdgeMissing || e == EdgeUnexpected || e == EdgeDangling
}

// stalledOn is the lock node a holder's session still watches, the first
// in queue order; "" when none. Only a data watch on a node of the queue
// that is there counts: a children watch on the parent is what a
// herd-style acquire leaves behind, and a watch on a node that is gone is
// the predecessor whose deletion woke it, seen in a table older than the
// listing (or a leaked exists watch): neither keeps a client waiting.
func stalledOn(n *Node, q *queueView) string {
	best := -1
	for _, p := range n.Watching {
		t := q.target(p)
		if t.kind != watchSibling || t.name == n.Name {
			continue
		}
		i, _ := q.lookup(t.name)
		if q.nodes[i].Foreign {
			continue
		}
		if best < 0 || i < best {
			best = i
		}
	}
	if best < 0 {
		return ""
	}
	return q.nodes[best].Name
}

// waitGraph is the actual wait-for graph: an edge from a node to each
// node of the lock its session watches, from waiters whose edge has
// outlived the debounce (confirmed or unexpected) and from stalled
// holders. Attributed watches only: a sibling's watch, or a table older
// than the listing, must not make a deadlock.
func waitGraph(s *Snapshot, q *queueView) map[string][]string {
	adj := map[string][]string{}
	for ni := range s.Nodes {
		n := &s.Nodes[ni]
		if n.Foreign || !waitsInFact(n) {
			continue
		}
		for _, p := range n.Watching {
			if t := q.target(p); t.kind == watchSibling && t.name != n.Name {
				adj[n.Name] = append(adj[n.Name], t.name)
			}
		}
	}
	return adj
}

// waitsInFact reports whether a node's client is known to be waiting on
// what its session watches.
func waitsInFact(n *Node) bool {
	if n.Holding {
		return n.StalledOn() != ""
	}
	return n.Edge == EdgeConfirmed || n.Edge == EdgeUnexpected
}

// findCycle returns a cycle of adj in edge order, starting where a depth
// first search from the nodes in order meets it; nil when there is none.
func findCycle(adj map[string][]string, order []string) []string {
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var stack, found []string
	var visit func(string) bool
	visit = func(u string) bool {
		color[u] = grey
		stack = append(stack, u)
		for _, v := range adj[u] {
			switch color[v] {
			case grey:
				i := slices.Index(stack, v)
				found = slices.Clone(stack[i:])
				return true
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
	for _, u := range order {
		if color[u] == white && len(adj[u]) > 0 && visit(u) {
			return found
		}
	}
	return nil
}

// queueCycle finds a cycle in the lock's wait-for graph and starts it at
// its first node in queue order, so the same cycle always reads the same.
func queueCycle(s *Snapshot, q *queueView) []string {
	adj := waitGraph(s, q)
	if len(adj) == 0 {
		return nil
	}
	var order []string
	for ni := range s.Nodes {
		n := &s.Nodes[ni]
		if len(adj[n.Name]) > 0 {
			order = append(order, n.Name)
		}
	}
	cyc := findCycle(adj, order)
	if len(cyc) == 0 {
		return nil
	}
	first := 0
	for i, name := range cyc {
		a, _ := q.lookup(name)
		b, _ := q.lookup(cyc[first])
		if a < b {
			first = i
		}
	}
	return append(slices.Clone(cyc[first:]), cyc[:first]...)
}

// deadlockAlert names a cycle of waits in order.
func deadlockAlert(s *Snapshot, q *queueView, cyc []string) Alert {
	path := strings.Join(append(slices.Clone(cyc), cyc[0]), " → ")
	var holders []string
	for _, name := range cyc {
		if i, _ := q.lookup(name); s.Nodes[i].Holding {
			holders = append(holders, name)
		}
	}
	msg := "waiters watch each other in a cycle: " + path + "; no release will ever wake them"
	if len(holders) > 0 {
		msg = "a cycle of waits: " + path + "; " + strings.Join(holders, ", ") +
			" holds by the recipe's rule but its client still waits, so no one in the cycle will ever move"
	}
	return Alert{Kind: AlertDeadlock, Nodes: cyc, Message: msg}
}

func zombieAlert(s *Snapshot, names []string) Alert {
	msg := Count(len(names), "node belongs to a session", "nodes belong to sessions") + " with no live connection: " +
		agree(len(names), "its client is gone or cut off, but the node stays", "their clients are gone or cut off, but the nodes stay") +
		" until the session expires"
	for ni := range s.Nodes {
		n := &s.Nodes[ni]
		if n.Zombie && n.ExpiresInMs() > 0 {
			msg += fmt.Sprintf(" (%s expires in %.1fs)", n.Name, float64(n.ExpiresInMs())/1000)
			break
		}
	}
	return Alert{Kind: AlertZombie, Nodes: clip(names), Message: msg}
}

// orphanAlert: waiters of live sessions that watch nothing at all.
func orphanAlert(s *Snapshot) (Alert, bool) {
	// Only the names an alert shows are kept: in a big queue whose
	// sessions watch nothing every waiter is one, and the list of them
	// all was rebuilt on every join.
	var orphans []string
	count := 0
	for ni := range s.Nodes {
		n := &s.Nodes[ni]
		if n.Edge == EdgeMissing && len(n.Watching) == 0 {
			if orphans == nil {
				orphans = make([]string, 0, min(MaxAlertNames, len(s.Nodes)-ni))
			}
			if count < MaxAlertNames {
				orphans = append(orphans, n.Name)
			}
			count++
		}
	}
	if count == 0 {
		return Alert{}, false
	}
	return Alert{Kind: AlertOrphan, Nodes: orphans,
		Message: Count(count, "waiter in a live session watches", "waiters in live sessions watch") + " nothing: nothing will wake " + agree(count, "it", "them") + " (an interrupted acquire or release leaves such nodes)"}, true
}

// maxStallAlerts bounds the stalled-holder alerts of one lock: beyond it
// (a buggy reader implementation stalls every reader) one more alert
// names the rest.
const maxStallAlerts = 10

// stalledAlerts is one alert per stalled holder, naming the holder and
// the node its client still waits for.
func stalledAlerts(s *Snapshot, q *queueView, names []string) []Alert {
	var out []Alert
	for k, name := range names {
		if k == maxStallAlerts {
			rest := names[k:]
			out = append(out, Alert{Kind: AlertStalled, Nodes: clip(rest),
				Message: fmt.Sprintf("%d more holders by the recipe's rule whose clients still wait on another node of the lock", len(rest))})
			break
		}
		i, _ := q.lookup(name)
		n := s.Nodes[i]
		out = append(out, Alert{Kind: AlertStalled, Nodes: []string{n.Name, n.StalledOn()}, Since: n.StalledSince(),
			Message: fmt.Sprintf("%s holds by the recipe's rule, but its client still waits: its session has watched %s since %s. "+
				"The client missed its wake-up and does not know it holds; everyone queued behind it waits too. "+
				"Take a thread dump of that client", n.Name, n.StalledOn(), n.StalledSince().UTC().Format(time.RFC3339))})
	}
	return out
}

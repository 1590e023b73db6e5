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
	// Expiry is when a session expires, when the server tells.
	Expiry map[int64]time.Time
	// ChildWatches counts children watches the server holds but cannot list; -1 unknown.
	ChildWatches int
}

// NoWatches is the table used when the server tells nothing.
var NoWatches = WatchTable{Source: "none", ChildWatches: -1}

// Debounce is how long a waiter may show no watch before it counts as missing:
// a watch is absent for a moment between firing and being re-armed.
const Debounce = 2 * time.Second

// JoinWatches fills each node's actual watches and edge, and adds deadlock and
// zombie alerts. missingSince carries, from one call to the next, when each
// node was first seen without its watch; the returned map replaces it.
func JoinWatches(s *Snapshot, w WatchTable, missingSince map[string]time.Time, now time.Time) map[string]time.Time {
	s.WatchSource = w.Source
	s.InvisibleChildWatches = w.ChildWatches
	next := map[string]time.Time{}
	present := make(map[string]bool, len(s.Nodes))
	for _, n := range s.Nodes {
		present[n.Name] = true
	}
	prefix := s.Path + "/"
	if s.Path == "/" {
		prefix = "/"
	}
	known := w.Source != "none" && w.Source != ""

	var zombies []string
	for i := range s.Nodes {
		n := &s.Nodes[i]
		n.Watching, n.Edge = nil, EdgeNone
		if n.Foreign || n.owner == 0 {
			continue
		}
		if known {
			n.Watching = append([]string{}, w.Watches[n.owner]...)
			sort.Strings(n.Watching)
		}
		if w.Connected != nil && !w.Connected[n.owner] {
			n.Zombie = true
			if exp, ok := w.Expiry[n.owner]; ok && exp.After(now) {
				n.ExpiresInMs = exp.Sub(now).Milliseconds()
			}
			zombies = append(zombies, n.Name)
		}
		if n.Holding {
			continue
		}
		switch {
		case !known:
			n.Edge = EdgeUnknown
		case n.WaitsOn == "children":
			n.Edge = EdgeChildWatch
			if w.Source == "simulator" && !contains(n.Watching, s.Path) {
				n.Edge = EdgeMissing
			}
		default:
			n.Edge = classify(n, s.Path, prefix, present)
		}
		if n.Edge == EdgeMissing && !n.Zombie {
			since, ok := missingSince[n.Name]
			if !ok {
				since = now
			}
			next[n.Name] = since
			if now.Sub(since) < Debounce {
				n.Edge = EdgeNone
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

func classify(n *Node, parent, prefix string, present map[string]bool) Edge {
	target := prefix + n.WaitsFor
	if contains(n.Watching, target) {
		return EdgeConfirmed
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
		if !present[p[len(prefix):]] {
			return EdgeDangling
		}
		edge = EdgeUnexpected
	}
	return edge
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
// waiting node to each sibling its session watches.
func findCycle(s *Snapshot, prefix string, present map[string]bool) []string {
	adj := map[string][]string{}
	for _, n := range s.Nodes {
		if n.Holding || n.Foreign {
			continue
		}
		for _, p := range n.Watching {
			if strings.HasPrefix(p, prefix) {
				if m := p[len(prefix):]; present[m] && m != n.Name {
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

// Package waitgraph joins locks by their clients: a client that holds one
// lock and waits for another links the two. A cycle of such waits through
// several locks is a deadlock that no lock shows alone: each lock's queue
// is healthy, and every client in the cycle waits forever.
//
// A client is what the service knows it by across locks: a ZooKeeper
// session, an etcd lease, a PostgreSQL backend (Node.Session, else
// Node.Client). A Redis lock's client is its token, unique to its lock, so
// Redis locks never join. Clients are compared within one service and
// cluster only.
package waitgraph

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// Edge is one wait: client From waits, by a node of one lock, for client
// To, which holds (or is queued ahead in) that lock.
type Edge struct {
	From string `json:"from"`
	To   string `json:"to"`
	// Waiter and Target are the nodes of the lock: From's and To's.
	Waiter string `json:"waiter"`
	Target string `json:"target"`
	// FromName and ToName are how people know the clients (Node.Who of
	// the first node of each in the lock).
	FromName string `json:"fromName,omitempty"`
	ToName   string `json:"toName,omitempty"`
}

// Step is one wait of a cycle through several locks: an Edge, in the lock
// named Lock (its LockID.Name). In a cycle's steps, each step's To is the
// next step's From: the same client, holding in one lock and waiting in
// the next.
type Step struct {
	Lock string `json:"lock"`
	Edge
}

// Edges are the waits of one lock's snapshot between distinct clients.
// A snapshot that is not live has none: a stale queue raises nothing.
func Edges(s lockqueue.Snapshot) []Edge {
	if !s.Live() || !distinctClients(s.Nodes) {
		return nil
	}
	who := make(map[string]string, len(s.Nodes))
	names := map[string]string{}
	var holders []string
	for _, n := range s.Nodes {
		if c := client(n); c != "" {
			who[n.Name] = c
			if _, ok := names[c]; !ok {
				names[c] = n.Who()
			}
			if n.Holding {
				holders = append(holders, n.Name)
			}
		}
	}
	var out []Edge
	for _, n := range s.Nodes {
		from := who[n.Name]
		if n.Holding || from == "" || n.PartOf() != "" {
			continue
		}
		targets := holders
		if n.WaitsOn != lockqueue.OnChildren {
			targets = targets[:0:0]
			for _, e := range n.WaitEdges() {
				targets = append(targets, e.To)
			}
		}
		for _, t := range targets {
			if to := who[t]; to != "" && to != from {
				out = append(out, Edge{From: from, To: to, Waiter: n.Name, Target: t, FromName: names[from], ToName: names[to]})
			}
		}
	}
	return out
}

// client is who a node belongs to across locks; empty when unknown.
func client(n lockqueue.Node) string {
	if n.Session != "" && n.Session != "0x0" {
		return n.Session
	}
	return n.Client()
}

// distinctClients reports whether the nodes belong to two clients or more:
// a queue of one client's nodes (a test's, a single worker's) has no waits
// between clients, and is told without building a map.
func distinctClients(nodes []lockqueue.Node) bool {
	first := ""
	for _, n := range nodes {
		c := client(n)
		if c == "" {
			continue
		}
		if first == "" {
			first = c
		} else if c != first {
			return true
		}
	}
	return false
}

// Graph is the waits of every lock, by scope (service and cluster).
type Graph struct {
	locks  map[string]*lock
	alerts map[string]lockqueue.Alert
}

type lock struct {
	id    lockqueue.LockID
	scope string
	edges []Edge
}

// New returns an empty graph.
func New() *Graph {
	return &Graph{locks: map[string]*lock{}, alerts: map[string]lockqueue.Alert{}}
}

// Set makes edges the waits of the lock of s (by its key), and reports
// whether they changed.
func (g *Graph) Set(s lockqueue.Snapshot, edges []Edge) bool {
	key, scope := s.Key(), s.ServiceName()+"\x00"+s.Cluster
	l := g.locks[key]
	if l == nil {
		if len(edges) == 0 {
			return false
		}
		l = &lock{id: s.Lock()}
		g.locks[key] = l
	}
	if l.scope == scope && slices.Equal(l.edges, edges) {
		return false
	}
	l.scope, l.edges = scope, edges
	if len(edges) == 0 {
		delete(g.locks, key)
	}
	return true
}

// Forget drops a lock no longer followed.
func (g *Graph) Forget(key string) bool {
	_, had := g.locks[key]
	delete(g.locks, key)
	return had
}

// Alert is the deadlock alert of the lock with key, if it is in a cycle
// through other locks.
func (g *Graph) Alert(key string) (lockqueue.Alert, bool) {
	a, ok := g.alerts[key]
	return a, ok
}

// Cycles finds the cycles of waits through two locks or more, makes each
// lock's alert, and returns the keys of the locks whose alert changed
// (raised, changed or cleared).
func (g *Graph) Cycles() []string {
	next := map[string]lockqueue.Alert{}
	byScope := map[string][]string{}
	for key, l := range g.locks {
		byScope[l.scope] = append(byScope[l.scope], key)
	}
	for _, keys := range byScope {
		slices.Sort(keys)
		for _, c := range g.cycles(keys) {
			for key, a := range c.alerts(g) {
				next[key] = a
			}
		}
	}
	var changed []string
	for key, a := range next {
		if was, ok := g.alerts[key]; !ok || !alertEqual(was, a) {
			changed = append(changed, key)
		}
	}
	for key := range g.alerts {
		if _, ok := next[key]; !ok {
			changed = append(changed, key)
		}
	}
	g.alerts = next
	slices.Sort(changed)
	return changed
}

// step is one edge of a cycle, with the lock it is in.
type step struct {
	Edge
	lock string
}

type cycle []step

// cycles are the cycles of the locks' waits, one per strongly connected
// set of clients that spans two locks or more.
func (g *Graph) cycles(keys []string) []cycle {
	out := map[string][]step{}
	for _, key := range keys {
		for _, e := range g.locks[key].edges {
			out[e.From] = append(out[e.From], step{Edge: e, lock: key})
		}
	}
	var found []cycle
	for _, scc := range components(out) {
		in := map[string]bool{}
		for _, c := range scc {
			in[c] = true
		}
		c := walk(out, in, slices.Min(scc))
		locks := map[string]bool{}
		for _, s := range c {
			locks[s.lock] = true
		}
		if len(locks) >= 2 {
			found = append(found, c)
		}
	}
	return found
}

// Scene is the cycle of waits through the given locks (each lock's Edges),
// in wait order, for a page that draws those locks side by side with the
// cycle across them; nil when their waits close no cycle through two
// locks or more. With several cycles, the first of the first scope.
func Scene(locks []lockqueue.Snapshot) []Step {
	g := New()
	for _, s := range locks {
		g.Set(s, Edges(s))
	}
	byScope := map[string][]string{}
	for key, l := range g.locks {
		byScope[l.scope] = append(byScope[l.scope], key)
	}
	for _, scope := range slices.Sorted(maps.Keys(byScope)) {
		keys := byScope[scope]
		slices.Sort(keys)
		for _, c := range g.cycles(keys) {
			out := make([]Step, len(c))
			for i, s := range c {
				out[i] = Step{Lock: g.locks[s.lock].id.Name, Edge: s.Edge}
			}
			return out
		}
	}
	return nil
}

// walk follows waits from start, within the component, until it comes
// back to a client it has met: the cycle from there. Every client of a
// strongly connected component has a wait within it, so the walk always
// closes.
func walk(out map[string][]step, in map[string]bool, start string) cycle {
	var path cycle
	at := map[string]int{}
	for c := start; ; {
		if i, ok := at[c]; ok {
			return path[i:]
		}
		at[c] = len(path)
		for _, s := range out[c] {
			if in[s.To] {
				path = append(path, s)
				c = s.To
				break
			}
		}
	}
}

// components are the strongly connected sets of two clients or more
// (Tarjan's algorithm, iterative: a fleet's clients can be many).
func components(out map[string][]step) [][]string {
	index, low := map[string]int{}, map[string]int{}
	onStack := map[string]bool{}
	var stack []string
	var found [][]string
	type frame struct {
		c string
		i int
	}
	for _, root := range slices.Sorted(maps.Keys(out)) {
		if _, seen := index[root]; seen {
			continue
		}
		frames := []frame{{c: root}}
		index[root], low[root] = len(index), len(index)
		stack, onStack[root] = append(stack, root), true
		for len(frames) > 0 {
			f := &frames[len(frames)-1]
			if f.i < len(out[f.c]) {
				to := out[f.c][f.i].To
				f.i++
				if _, seen := index[to]; !seen {
					index[to], low[to] = len(index), len(index)
					stack, onStack[to] = append(stack, to), true
					frames = append(frames, frame{c: to})
				} else if onStack[to] {
					low[f.c] = min(low[f.c], index[to])
				}
				continue
			}
			c := f.c
			frames = frames[:len(frames)-1]
			if len(frames) > 0 {
				p := frames[len(frames)-1].c
				low[p] = min(low[p], low[c])
			}
			if low[c] != index[c] {
				continue
			}
			var scc []string
			for {
				top := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[top] = false
				scc = append(scc, top)
				if top == c {
					break
				}
			}
			if len(scc) > 1 {
				found = append(found, scc)
			}
		}
	}
	return found
}

// alerts are the cycle's alert on each of its locks: the lock's own nodes
// in the cycle, and the whole cycle in words, naming every lock.
func (c cycle) alerts(g *Graph) map[string]lockqueue.Alert {
	var parts []string
	for _, s := range c {
		parts = append(parts, fmt.Sprintf("%s waits in %s (%s) for %s (%s)",
			named(s.FromName, s.From), g.locks[s.lock].id.Name, s.Waiter, named(s.ToName, s.To), s.Target))
	}
	locks := map[string][]string{}
	for _, s := range c {
		locks[s.lock] = append(locks[s.lock], s.Waiter, s.Target)
	}
	msg := fmt.Sprintf("deadlock across %d locks: %s: no one in the cycle will move until one of them gives up or dies",
		len(locks), strings.Join(parts, "; "))
	out := map[string]lockqueue.Alert{}
	for key, nodes := range locks {
		var others []lockqueue.LockID
		for _, k := range slices.Sorted(maps.Keys(locks)) {
			if k != key {
				others = append(others, g.locks[k].id)
			}
		}
		slices.Sort(nodes)
		out[key] = lockqueue.Alert{Kind: lockqueue.AlertDeadlock, Nodes: slices.Compact(nodes), Message: msg, Locks: others}
	}
	return out
}

// named is a client as the alert says it: its name and, beside it, what
// the service knows it by.
func named(name, client string) string {
	if name == "" || name == client {
		return client
	}
	return name + " [" + client + "]"
}

func alertEqual(a, b lockqueue.Alert) bool {
	return a.Kind == b.Kind && a.Message == b.Message && slices.Equal(a.Nodes, b.Nodes) && slices.Equal(a.Locks, b.Locks)
}

// With is s with its cross-lock alert, if any; s's own alerts are not
// changed in place (readers share them between snapshots). A lock whose
// reader tells the cycle already, from the server's own account
// (PostgreSQL's wait-cycle, from pg_blocking_pids), keeps that alert, with
// the other locks of the cycle named on it: one cycle, one alert.
func With(s lockqueue.Snapshot, a lockqueue.Alert, ok bool) lockqueue.Snapshot {
	if !ok {
		return s
	}
	if i := slices.IndexFunc(s.Alerts, func(x lockqueue.Alert) bool { return x.Kind == lockqueue.AlertWaitCycle }); i >= 0 {
		alerts := slices.Clone(s.Alerts)
		alerts[i].Locks = a.Locks
		s.Alerts = alerts
		return s
	}
	s.Alerts = append(slices.Clip(s.Alerts), a)
	return s
}

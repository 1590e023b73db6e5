package lockqueue

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// A server-kept queue is a lock whose server holds the waiters itself and
// reports who blocks whom (PostgreSQL's lock manager, read through
// pg_locks and pg_blocking_pids). Unlike a ZooKeeper or etcd queue there
// is no rule to apply: who holds, who waits and on whom are the server's
// own facts. What is left to decide is the order to show, and the alerts.

// Alert kinds of a server-kept queue.
const (
	// AlertWaitCycle: sessions wait on each other in a cycle; the server
	// aborts one of them once its deadlock check runs (PostgreSQL:
	// deadlock_timeout), and until then none moves.
	AlertWaitCycle = "wait-cycle"
	// AlertIdleInTransaction: a holder's session sits idle in an open
	// transaction: its client forgot to commit, or is stuck elsewhere,
	// and everyone behind it waits on that.
	AlertIdleInTransaction = "idle-in-transaction"
	// AlertLongWait: a waiter has waited longer than the threshold.
	AlertLongWait = "long-wait"
)

// ServerSession is one session's part in a server-kept lock, as read.
type ServerSession struct {
	// Name is the node's name, unique in the lock (PostgreSQL: pid-<pid>).
	Name string
	// Client is who the session is in the service's terms (a backend pid).
	Client string
	Mode   Mode
	// Waiting: the server has the session wait for this lock; otherwise
	// it holds it.
	Waiting bool
	// WaitStart is when it began to wait, zero when unknown or holding.
	WaitStart time.Time
	// Since is the earliest the session can have held or queued: a lower
	// bound the server gives (transaction or backend start). It orders
	// holders and waiters without a WaitStart.
	Since time.Time
	// BlockedBy names every session the server says this one waits on.
	BlockedBy []string
	// IdleInTxSince is when the session went idle inside an open
	// transaction; zero when it is not idle in one.
	IdleInTxSince time.Time
	// Data is shown as the node's data (the session's details).
	Data string
	// Label names the session for people (Node.Label).
	Label string
}

// ServerQueue is a server-kept lock's raw state and the thresholds of its
// alerts.
type ServerQueue struct {
	Recipe   Recipe
	Sessions []ServerSession
	// Waits is the server's waits-for graph over every waiting session it
	// reported, not just this lock's: a wait cycle usually runs through
	// another lock (A holds 1 and waits for 2, B holds 2 and waits for 1).
	Waits map[string][]string
	Now   time.Time
	// LongWait and IdleGrace are the alert thresholds; zero turns the
	// alert off.
	LongWait, IdleGrace time.Duration
}

// BuildServerQueue orders a server-kept lock's sessions into nodes and
// raises its alerts. The order is holders first, then waiters by when
// they began to wait (the order PostgreSQL grants a lock's waiters in),
// each tie broken by Since and name; Node.Order is the place, from 1.
func BuildServerQueue(q ServerQueue) ([]Node, []Alert) {
	ss := slices.Clone(q.Sessions)
	slices.SortStableFunc(ss, serverLess)
	place := make(map[string]int, len(ss))
	for i, s := range ss {
		place[s.Name] = i
	}
	nodes := make([]Node, len(ss))
	for i, s := range ss {
		n := Node{
			Name: s.Name, Seq: -1, Mode: s.Mode, Recipe: q.Recipe, Holding: !s.Waiting,
			Rare: &Rare{Client: s.Client, Label: s.Label, Order: int64(i + 1)}, Data: s.Data, Ctime: s.Since,
		}
		if s.Waiting {
			if !s.WaitStart.IsZero() {
				n.Ctime = s.WaitStart
			}
			n.SetBlockedBy(blockersInOrder(s.BlockedBy, place))
			if on := n.BlockedBy(); len(on) > 0 {
				n.WaitsFor = on[0]
				n.SetWaitsForSource(ByServer)
			}
		}
		nodes[i] = n
	}
	var alerts []Alert
	if a, ok := waitCycleAlert(nodes, q.Waits); ok {
		alerts = append(alerts, a)
	}
	if a, ok := idleHolderAlert(ss, q.Now, q.IdleGrace); ok {
		alerts = append(alerts, a)
	}
	if a, ok := longWaitAlert(ss, q.Now, q.LongWait); ok {
		alerts = append(alerts, a)
	}
	return nodes, alerts
}

func serverLess(a, b ServerSession) int {
	if a.Waiting != b.Waiting {
		if a.Waiting {
			return 1
		}
		return -1
	}
	at, bt := a.WaitStart, b.WaitStart
	if !a.Waiting || at.IsZero() || bt.IsZero() {
		at, bt = a.Since, b.Since
	}
	return cmp.Or(at.Compare(bt), strings.Compare(a.Name, b.Name))
}

// blockersInOrder puts the lock's own nodes first, in queue order, then
// blockers from outside the lock by name: the first is whom the waiter
// waits for most directly.
func blockersInOrder(blockers []string, place map[string]int) []string {
	out := slices.Clone(blockers)
	slices.SortFunc(out, func(a, b string) int {
		pa, oka := place[a]
		pb, okb := place[b]
		switch {
		case oka && okb:
			return cmp.Compare(pa, pb)
		case oka != okb:
			if oka {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	return slices.Compact(out)
}

// WaitCycleThrough returns a shortest cycle of waits that starts and ends
// at start, in edge order and without repeating start; nil when start is
// on none. lockqueue's findCycle returns whichever cycle a search meets
// first, which may not pass through the lock at hand.
func WaitCycleThrough(waits map[string][]string, start string) []string {
	prev := map[string]string{}
	frontier := []string{start}
	for len(frontier) > 0 {
		var next []string
		for _, u := range frontier {
			for _, v := range waits[u] {
				if v == start {
					var cyc []string
					for w := u; w != start; w = prev[w] {
						cyc = append(cyc, w)
					}
					cyc = append(cyc, start)
					slices.Reverse(cyc)
					return cyc
				}
				if _, seen := prev[v]; !seen {
					prev[v] = u
					next = append(next, v)
				}
			}
		}
		frontier = next
	}
	return nil
}

// waitCycleAlert reports the first cycle, in queue order, through one of
// the lock's nodes. Its Nodes are the cycle's members that are nodes of
// this lock; the message names every member, here or in another lock.
func waitCycleAlert(nodes []Node, waits map[string][]string) (Alert, bool) {
	mine := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		mine[n.Name] = true
	}
	for _, n := range nodes {
		cyc := WaitCycleThrough(waits, n.Name)
		if cyc == nil {
			continue
		}
		var here []string
		for _, c := range cyc {
			if mine[c] {
				here = append(here, c)
			}
		}
		path := strings.Join(append(slices.Clone(cyc), cyc[0]), " → ")
		return Alert{Kind: AlertWaitCycle, Nodes: here, Message: "a wait cycle: " + path +
			"; none of them can move, and the server will abort one of them when its deadlock check runs" +
			" (PostgreSQL: after deadlock_timeout, with SQLSTATE 40P01)"}, true
	}
	return Alert{}, false
}

func idleHolderAlert(ss []ServerSession, now time.Time, grace time.Duration) (Alert, bool) {
	if grace <= 0 {
		return Alert{}, false
	}
	var names []string
	var since time.Time
	waiters := 0
	for _, s := range ss {
		if s.Waiting {
			waiters++
			continue
		}
		if !s.IdleInTxSince.IsZero() && now.Sub(s.IdleInTxSince) >= grace {
			names = append(names, s.Name)
			if since.IsZero() || s.IdleInTxSince.Before(since) {
				since = s.IdleInTxSince
			}
		}
	}
	if len(names) == 0 {
		return Alert{}, false
	}
	msg := strings.Join(names, ", ") + " " + agree(len(names), "holds", "hold") + " the lock while idle in a transaction (since " +
		since.UTC().Format(time.TimeOnly) + " UTC, over " + grace.String() + "): the client has not committed or rolled back, and " +
		Count(waiters, "waiter waits", "waiters wait") + " on it"
	return Alert{Kind: AlertIdleInTransaction, Nodes: names, Message: msg}, true
}

func longWaitAlert(ss []ServerSession, now time.Time, limit time.Duration) (Alert, bool) {
	if limit <= 0 {
		return Alert{}, false
	}
	var names []string
	var since time.Time
	for _, s := range ss {
		if s.Waiting && !s.WaitStart.IsZero() && now.Sub(s.WaitStart) >= limit {
			names = append(names, s.Name)
			if since.IsZero() || s.WaitStart.Before(since) {
				since = s.WaitStart
			}
		}
	}
	if len(names) == 0 {
		return Alert{}, false
	}
	msg := Count(len(names), "session has", "sessions have") + " waited longer than " + limit.String() + ": " +
		strings.Join(names, ", ") + " (the longest since " + since.UTC().Format(time.TimeOnly) + " UTC)"
	return Alert{Kind: AlertLongWait, Nodes: names, Message: msg}, true
}

// SceneWaitCycle is the wait cycle across several locks seen together (a
// classroom scene: a PostgreSQL transaction's two rows), by the rule of a
// single lock's alert (waitCycleAlert): the waits are every waiting node's
// blockers in every lock, and a node's name is its session in every lock it
// is part of, as PostgreSQL's pid-N is. Its Nodes are the whole cycle in
// wait order, starting at its first member in lock and queue order.
func SceneWaitCycle(locks []Snapshot) (Alert, bool) {
	var nodes []Node
	seen := map[string]bool{}
	waits := map[string][]string{}
	for _, s := range locks {
		for _, n := range s.Nodes {
			if !seen[n.Name] {
				seen[n.Name] = true
				nodes = append(nodes, n)
			}
			if !n.Holding {
				for _, e := range n.WaitEdges() {
					if !slices.Contains(waits[n.Name], e.To) {
						waits[n.Name] = append(waits[n.Name], e.To)
					}
				}
			}
		}
	}
	return waitCycleAlert(nodes, waits)
}

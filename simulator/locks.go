package simulator

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/waitgraph"
)

// LockReader is a World whose scene has several locks, each with its own
// queue: PostgreSQL's deadlock scenario locks two rows, each a lock of
// its own that one transaction holds while it waits for the other. Locks
// reads every one of them from the server after each step (and before
// the first), in the order the views draw them; Snapshot stays the lock
// the live reader follows.
type LockReader interface {
	Locks() ([]lockqueue.Snapshot, error)
}

// locksOf reads w's locks, nil when it has one lock.
func locksOf(w World) ([]lockqueue.Snapshot, error) {
	if lr, ok := w.(LockReader); ok {
		return lr.Locks()
	}
	return nil, nil
}

// shownLock is a step's snapshot as State shows it: its holders stamped
// with the run's clock (runClocks), each waits-for edge with who vouches for
// it, a node that carries no words of its own (an etcd key has no
// value, and its name is its lease) named by its client, as every other
// service's nodes are (C1, C2, …).
func shownLock(snap lockqueue.Snapshot, clients []ClientInfo, clockMs int64) lockqueue.Snapshot {
	snap = runClocks(snap, clients, clockMs)
	lockqueue.StampParent(&snap)
	owner := owners(clients)
	for i := range snap.Nodes {
		n := &snap.Nodes[i]
		if n.Label() == "" && n.Data == "" && owner[n.Name] != "" {
			n.SetLabel(owner[n.Name])
		}
	}
	return snap.WithWaitEdges()
}

// owners maps each client's node to the client's name.
func owners(clients []ClientInfo) map[string]string {
	owner := make(map[string]string, len(clients))
	for _, c := range clients {
		if c.Node != "" {
			owner[c.Node] = c.Name
		}
	}
	return owner
}

// stateLocks are a step's locks as State shows them, the wait cycle
// across them and its waits in order, nil when the scene has one lock or
// no cycle. The alert is lockqueue's rule where a client is one node in
// every lock (PostgreSQL's pid-N, the live lock page's wait-cycle alert),
// else the cycle through the clients' sessions (a ZooKeeper client's node
// in each lock). The steps are waitgraph's, the live lock page's scene:
// the views draw the cycle across the lanes from them. A step names its
// clients as the run does (C1, C2, …), not by their nodes' words.
func stateLocks(locks []lockqueue.Snapshot, clients []ClientInfo, clockMs int64) ([]lockqueue.Snapshot, *lockqueue.Alert, []waitgraph.Step) {
	if len(locks) == 0 {
		return nil, nil, nil
	}
	out := make([]lockqueue.Snapshot, len(locks))
	for i, s := range locks {
		out[i] = shownLock(s, clients, clockMs)
	}
	steps := waitgraph.Scene(out)
	owner := owners(clients)
	for i := range steps {
		st := &steps[i]
		st.FromName = cmp.Or(owner[st.Waiter], st.FromName)
		st.ToName = cmp.Or(owner[st.Target], st.ToName)
	}
	if a, ok := lockqueue.SceneWaitCycle(out); ok {
		return out, &a, steps
	}
	if len(steps) == 0 {
		return out, nil, nil
	}
	return out, sessionCycle(steps), steps
}

// sessionCycle is the alert of a cycle through clients' sessions: its
// nodes are, in wait order, the node each client holds (the one the
// client before it waits for).
func sessionCycle(steps []waitgraph.Step) *lockqueue.Alert {
	a := lockqueue.Alert{Kind: lockqueue.AlertDeadlock}
	var parts []string
	for i, st := range steps {
		a.Nodes = append(a.Nodes, steps[(i+len(steps)-1)%len(steps)].Target)
		parts = append(parts, fmt.Sprintf("%s waits in %s for %s", cmp.Or(st.FromName, st.From), st.Lock, cmp.Or(st.ToName, st.To)))
	}
	a.Message = fmt.Sprintf("a deadlock across %d locks: %s; no one in the cycle will move until one of them gives up or dies", len(steps), strings.Join(parts, ", "))
	return &a
}

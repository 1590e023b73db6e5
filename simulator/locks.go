package simulator

import "github.com/zklockviz/zklockviz/lockqueue"

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
// with the run's clock (runHolds), each waits-for edge with who vouches for
// it, and a node that carries no words of its own (an etcd key has no
// value, and its name is its lease) named by its client, as every other
// service's nodes are (C1, C2, …).
func shownLock(snap lockqueue.Snapshot, clients []ClientInfo) lockqueue.Snapshot {
	snap = runHolds(snap, clients)
	owner := make(map[string]string, len(clients))
	for _, c := range clients {
		if c.Node != "" {
			owner[c.Node] = c.Name
		}
	}
	for i := range snap.Nodes {
		n := &snap.Nodes[i]
		if n.Label() == "" && n.Data == "" && owner[n.Name] != "" {
			n.SetLabel(owner[n.Name])
		}
	}
	return snap.WithWaitEdges()
}

// stateLocks are a step's locks as State shows them, and the wait cycle
// across them (lockqueue's rule, the one the live lock page's alert uses),
// nil when the scene has one lock or no cycle.
func stateLocks(locks []lockqueue.Snapshot, clients []ClientInfo) ([]lockqueue.Snapshot, *lockqueue.Alert) {
	if len(locks) == 0 {
		return nil, nil
	}
	out := make([]lockqueue.Snapshot, len(locks))
	for i, s := range locks {
		out[i] = shownLock(s, clients)
	}
	if a, ok := lockqueue.SceneWaitCycle(out); ok {
		return out, &a
	}
	return out, nil
}

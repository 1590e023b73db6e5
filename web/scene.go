package web

import (
	"slices"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/views"
	"github.com/zklockviz/zklockviz/waitgraph"
)

// A lock in a deadlock through other locks (waitgraph's deadlock alert,
// which names them in Alert.Locks) has its page draw the cycle's locks side
// by side, with the cycle across them: the classroom's drawing (queue.js
// drawLocks). What it draws comes with the lock's frames, as everything
// the page draws does: no lane asks the server for another lock.

// scene is the cycle's locks as a lock page draws them.
type scene struct {
	// Locks are this lock, then the others, each cut to its nodes in the
	// cycle: the cycle is what the picture is for, and a queue of
	// thousands beside it would hide it.
	Locks []lockqueue.Snapshot `json:"locks"`
	// Hrefs are the locks' pages, in Locks' order.
	Hrefs []string `json:"hrefs"`
	// Cycle is the cycle in wait order (waitgraph.Scene).
	Cycle []waitgraph.Step `json:"cycle"`
}

// latestFunc is the newest snapshot of a lock by its key (the hub's).
type latestFunc func(key string) (lockqueue.Snapshot, bool)

// sceneOf is the scene of snap's lock when it is in a deadlock through
// other locks, from their newest snapshots (latest); nil when it is not, or
// when the snapshots at hand close no cycle (another lock's reader has not
// published the wait yet).
func sceneOf(snap lockqueue.Snapshot, latest latestFunc) *scene {
	i := slices.IndexFunc(snap.Alerts, func(a lockqueue.Alert) bool {
		return (a.Kind == lockqueue.AlertDeadlock || a.Kind == lockqueue.AlertWaitCycle) && len(a.Locks) > 0
	})
	if i < 0 {
		return nil
	}
	locks := []lockqueue.Snapshot{snap}
	for _, id := range snap.Alerts[i].Locks {
		if o, ok := latest(id.Key()); ok {
			locks = append(locks, o)
		}
	}
	steps := waitgraph.Scene(locks)
	if steps == nil {
		return nil
	}
	out := &scene{Cycle: steps}
	for _, l := range locks {
		out.Locks = append(out.Locks, cutToCycle(l, steps))
		out.Hrefs = append(out.Hrefs, views.LockHref(l.ServiceName(), l.Path))
	}
	return out
}

// cutToCycle is s with only its nodes that are waiters or targets of the
// cycle's steps in it, in queue order, with their lane's lines.
func cutToCycle(s lockqueue.Snapshot, steps []waitgraph.Step) lockqueue.Snapshot {
	in := map[string]bool{}
	for _, st := range steps {
		if st.Lock == s.Path {
			in[st.Waiter], in[st.Target] = true, true
		}
	}
	nodes := make([]lockqueue.Node, 0, len(in))
	for _, n := range s.Nodes {
		if in[n.Name] {
			nodes = append(nodes, n)
		}
	}
	s.Nodes = nodes
	return views.StampLane(s)
}

package lockqueue

import (
	"slices"
	"time"
)

// CarryHolds sets HeldSince on next's holders, next being what a reader is
// about to publish and prev what it published last (nil before its first
// publish): a node that held in prev keeps prev's HeldSince; one that
// waited in prev, or was not there, began to hold between the two reads,
// and gets now. When prev was not live (a read failed, the connection was
// down) what happened in between was not seen, so a new holder gets zero:
// unknown, bounded by its Ctime. Every other node gets zero, so nodes
// reused from read to read never keep a stale time.
//
// Every reader calls it at its one publish point, so the hold clocks of
// every page, opened whenever, count from the same moment.
func CarryHolds(prev *Snapshot, next *Snapshot, now time.Time) { carryHolds(prev, next, now, false) }

// CarryHoldsShared is CarryHolds for a next whose nodes are shared with a
// snapshot already published: it copies them before its first change to
// a node, and one that changes no hold copies nothing.
func CarryHoldsShared(prev *Snapshot, next *Snapshot, now time.Time) {
	carryHolds(prev, next, now, true)
}

func carryHolds(prev *Snapshot, next *Snapshot, now time.Time, shared bool) {
	var held map[string]time.Time // prev's holders, by folder and name
	seen := prev != nil && prev.Live()
	if prev != nil {
		for i := range prev.Nodes {
			if n := &prev.Nodes[i]; n.Holding {
				if held == nil {
					held = map[string]time.Time{}
				}
				held[n.Folder()+"/"+n.Name] = n.HeldSince()
			}
		}
	}
	for i := range next.Nodes {
		n := &next.Nodes[i]
		var since time.Time
		if n.Holding {
			if t, ok := held[n.Folder()+"/"+n.Name]; ok {
				since = t
			} else if seen {
				since = now
			}
		}
		if n.HeldSince() == since {
			continue
		}
		if shared {
			next.Nodes, shared = slices.Clone(next.Nodes), false
			n = &next.Nodes[i]
		}
		n.SetHeldSince(since)
	}
}

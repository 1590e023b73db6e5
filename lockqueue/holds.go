package lockqueue

import (
	"slices"
	"time"
)

// CarryHolds sets HeldSince on next's holders, next being what a reader is
// about to publish and prev what it published last (nil before its first
// publish): a node that held in prev keeps prev's HeldSince; one that
// waited in prev, or was not there, began to hold between the two reads,
// and gets now. When there was no prev, or prev was not live (a read
// failed, the connection was down), the hold began unseen, and its clock
// says how sure it is (HeldBound): from its creation, which it held at
// most since, or, its creation unknown (CtimeAtMost), from now, which it
// held at least since. Every other node gets zero, so nodes reused from
// read to read never keep a stale time.
//
// Every reader calls it at its one publish point, so the hold clocks of
// every page, opened whenever, count from the same moment and read the
// same: the clock is the server's, not each page's guess.
func CarryHolds(prev *Snapshot, next *Snapshot, now time.Time) { carryHolds(prev, next, now, false) }

// CarryHoldsShared is CarryHolds for a next whose nodes are shared with a
// snapshot already published: it copies them before its first change to
// a node, and one that changes no hold copies nothing.
func CarryHoldsShared(prev *Snapshot, next *Snapshot, now time.Time) {
	carryHolds(prev, next, now, true)
}

// hold is when a holder's clock starts and how sure that is.
type hold struct {
	since time.Time
	bound Bound
}

func carryHolds(prev *Snapshot, next *Snapshot, now time.Time, shared bool) {
	var held map[string]hold // prev's holders, by folder and name
	seen := prev != nil && prev.Live()
	if prev != nil {
		for i := range prev.Nodes {
			if n := &prev.Nodes[i]; n.Holding {
				if held == nil {
					held = map[string]hold{}
				}
				held[n.Folder()+"/"+n.Name] = hold{n.HeldSince(), n.HeldBound()}
			}
		}
	}
	for i := range next.Nodes {
		n := &next.Nodes[i]
		var h hold
		if n.Holding {
			h = holdOf(n, held, seen, now)
		}
		if n.HeldSince() == h.since && n.HeldBound() == h.bound {
			continue
		}
		if shared {
			next.Nodes, shared = slices.Clone(next.Nodes), false
			n = &next.Nodes[i]
		}
		n.SetHeldSince(h.since)
		n.SetHeldBound(h.bound)
	}
}

// holdOf is holder n's clock: prev's when it held there, now when the
// reader saw it begin, else bounded by its creation or by now.
func holdOf(n *Node, held map[string]hold, seen bool, now time.Time) hold {
	if h, ok := held[n.Folder()+"/"+n.Name]; ok {
		return h
	}
	if seen {
		return hold{since: now}
	}
	since, bound := UnseenHold(n, now)
	return hold{since, bound}
}

// UnseenHold is the clock of a holder n first seen holding at seen, its
// hold begun unseen: from its creation, which it held at most since, or,
// its creation unknown (CtimeAtMost), from seen, which it held at least
// since. A replay of the history times such a holder by it too, so a past
// moment's clock reads as the live one did.
func UnseenHold(n *Node, seen time.Time) (time.Time, Bound) {
	if !n.Ctime.IsZero() && !n.CtimeAtMost {
		return n.Ctime, HeldAtMost
	}
	return seen, HeldAtLeast
}

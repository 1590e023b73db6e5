package lockqueue

import "time"

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
func CarryHolds(prev *Snapshot, next *Snapshot, now time.Time) {
	var held map[string]time.Time // prev's holders, by folder and name
	seen := prev != nil && prev.Live()
	if prev != nil {
		for i := range prev.Nodes {
			if n := &prev.Nodes[i]; n.Holding {
				if held == nil {
					held = map[string]time.Time{}
				}
				held[n.Folder+"/"+n.Name] = n.HeldSince
			}
		}
	}
	for i := range next.Nodes {
		n := &next.Nodes[i]
		n.HeldSince = time.Time{}
		if !n.Holding {
			continue
		}
		if since, ok := held[n.Folder+"/"+n.Name]; ok {
			n.HeldSince = since
		} else if seen {
			n.HeldSince = now
		}
	}
}

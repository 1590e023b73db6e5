package lockqueue

import (
	"slices"
	"sort"
	"strings"
)

// NodeLess reports whether a comes before b in a Snapshot's queue order:
// lock nodes by (folder, order, seq, czxid, name), then foreign children by name. Clients
// that patch a snapshot (the websocket deltas) re-sort with this rule and get
// exactly the order Build produced.
func NodeLess(a, b Node) bool {
	if c := groupCmp(&a, &b); c != 0 || a.Foreign {
		return c < 0
	}
	return queueLess(&a, &b)
}

// groupCmp orders the groups of a queue: lock nodes by folder, then
// foreign children, each its own, by name.
func groupCmp(a, b *Node) int {
	switch {
	case a.Foreign != b.Foreign:
		if a.Foreign {
			return 1
		}
		return -1
	case a.Foreign:
		return strings.Compare(a.Name, b.Name)
	}
	return strings.Compare(a.Folder(), b.Folder())
}

// SortGroups puts nodes listed in the order they appeared (a replay of
// the history, which keeps neither the order a service gives nor zxids)
// in queue order by what they keep: grouped as NodeLess groups them,
// each folder's nodes in the order they appeared, which is its queue's.
func SortGroups(nodes []Node) {
	// Checked in place first: a node is big, and most queues are one group
	// already in order, which a check by value would copy whole.
	for i := 1; i < len(nodes); i++ {
		if groupCmp(&nodes[i-1], &nodes[i]) > 0 {
			slices.SortStableFunc(nodes, func(a, b Node) int { return groupCmp(&a, &b) })
			return
		}
	}
}

// SortNodes puts nodes in queue order (see NodeLess).
func SortNodes(nodes []Node) {
	sort.SliceStable(nodes, func(i, j int) bool { return NodeLess(nodes[i], nodes[j]) })
}

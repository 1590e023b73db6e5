package lockqueue

import "sort"

// NodeLess reports whether a comes before b in a Snapshot's queue order:
// lock nodes by (folder, order, seq, czxid, name), then foreign children by name. Clients
// that patch a snapshot (the websocket deltas) re-sort with this rule and get
// exactly the order Build produced.
func NodeLess(a, b Node) bool {
	if a.Foreign != b.Foreign {
		return b.Foreign
	}
	if a.Foreign {
		return a.Name < b.Name
	}
	return queueLess(&a, &b)
}

// SortNodes puts nodes in queue order (see NodeLess).
func SortNodes(nodes []Node) {
	sort.SliceStable(nodes, func(i, j int) bool { return NodeLess(nodes[i], nodes[j]) })
}

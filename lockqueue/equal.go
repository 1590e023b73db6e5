package lockqueue

import (
	"reflect"
	"slices"
	"time"
)

// Equal reports whether n and m show the same in every field. It is spelled
// out rather than reflect.DeepEqual because it runs per node per change:
// the watcher compares each join with the last one published, and the web
// server each snapshot with the last one sent. web's
// TestNodeEqualCoversEveryField fails when Node grows a field this misses.
func (n Node) Equal(m Node) bool { return NodesEqual(&n, &m) }

// NodesEqual is Equal without copying the nodes, for loops over big queues.
func NodesEqual(n, m *Node) bool {
	return n.Name == m.Name && n.Seq == m.Seq && n.Mode == m.Mode && n.Recipe == m.Recipe &&
		n.Holding == m.Holding && n.WaitsFor == m.WaitsFor && n.WaitsOn == m.WaitsOn &&
		slices.Equal(n.Watching, m.Watching) && (n.Watching == nil) == (m.Watching == nil) &&
		n.Edge == m.Edge && n.Session == m.Session && n.Data == m.Data &&
		n.DataBinary == m.DataBinary && n.Ctime.Equal(m.Ctime) && n.CtimeAtMost == m.CtimeAtMost && n.Czxid == m.Czxid &&
		n.Foreign == m.Foreign && n.Zombie == m.Zombie && n.Owner() == m.Owner() && rareEqual(n.Rare, m.Rare)
}

// rareEqual compares two nodes' Rare: the same one when the nodes were
// copied from one another, as most are.
func rareEqual(a, b *Rare) bool {
	if a == b {
		return true
	}
	var zero Rare
	if a == nil {
		a = &zero
	}
	if b == nil {
		b = &zero
	}
	return a.ExpiresInMs == b.ExpiresInMs && a.StalledOn == b.StalledOn && a.StalledSince.Equal(b.StalledSince) &&
		a.HeldSince.Equal(b.HeldSince) && a.Folder == b.Folder && a.PartOf == b.PartOf &&
		a.Order == b.Order && a.Client == b.Client && a.Label == b.Label && a.WaitsForSource == b.WaitsForSource &&
		slices.Equal(a.BlockedBy, b.BlockedBy) && a.LeaseID == b.LeaseID &&
		a.LeaseTTLMs == b.LeaseTTLMs && a.LeaseLeftMs == b.LeaseLeftMs && slices.Equal(a.ShownEdges, b.ShownEdges)
}

// SameNodes reports whether a and b hold equal nodes in the same order,
// comparing them in place.
func SameNodes(a, b []Node) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !NodesEqual(&a[i], &b[i]) {
			return false
		}
	}
	return true
}

// SameShown reports whether a and b show the same: equal in every field
// but their revision and the time they were read. Readers publish a
// snapshot only when it is not SameShown as their last.
func SameShown(a, b Snapshot) bool {
	if (a.Nodes == nil) != (b.Nodes == nil) || !SameNodes(a.Nodes, b.Nodes) {
		return false
	}
	a.Revision, b.Revision = 0, 0
	a.UpdatedAt, b.UpdatedAt = time.Time{}, time.Time{}
	a.Nodes, b.Nodes = nil, nil
	return reflect.DeepEqual(a, b)
}

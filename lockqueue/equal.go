package lockqueue

import (
	"reflect"
	"time"
)

// Equal reports whether n and m show the same in every field. It is
// generated from Node's fields (NodesEqual, fields_gen.go) rather than
// reflect.DeepEqual because it runs per node per change: the watcher
// compares each join with the last one published, and the web server each
// snapshot with the last one sent.
func (n Node) Equal(m Node) bool { return NodesEqual(&n, &m) }

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

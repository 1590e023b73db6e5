package web

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// fuzzNodes makes a node list from b: each byte picks a name (of 16), a
// holding flag and an order, so two lists share, change, gain and lose
// nodes, in whatever order b gives them (a service's reader need not sort).
func fuzzNodes(b []byte) []lockqueue.Node {
	var nodes []lockqueue.Node
	for _, c := range b {
		nodes = append(nodes, lockqueue.Node{Name: fmt.Sprintf("n%02d", c&15), Seq: -1,
			Holding: c&16 != 0, Rare: &lockqueue.Rare{Order: int64(c >> 5)}})
	}
	return nodes
}

// FuzzDeltaRoundTrip: whatever two snapshots a socket gets in a row, the
// frame between them, applied the way a client applies it (ApplyDelta,
// which live.js's applyDelta follows step by step), gives the second one
// exactly, nodes in the server's order; a pair the patch cannot express
// goes whole.
func FuzzDeltaRoundTrip(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8}, []byte{1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8}, []byte{9, 1, 2, 3, 20, 5, 6, 7})
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8}, []byte{2, 1, 3, 4, 5, 6, 7, 8})
	f.Add([]byte{1, 1, 2}, []byte{1, 2})
	f.Fuzz(func(t *testing.T, a, b []byte) {
		prev := wireSnapshot(lockqueue.Snapshot{Path: "/l", Revision: 1, Nodes: fuzzNodes(a)})
		next := wireSnapshot(lockqueue.Snapshot{Path: "/l", Revision: 2, Nodes: fuzzNodes(b)})
		raw, kind, err := encodeFrame(&prev, next, nil)
		if err != nil {
			t.Fatal(err)
		}
		var fr Frame
		if err := json.Unmarshal(raw, &fr); err != nil {
			t.Fatal(err)
		}
		got := fr.Snapshot
		if kind == FrameDelta {
			s, err := ApplyDelta(prev, fr.Delta)
			if err != nil {
				t.Fatalf("apply %s: %v", raw, err)
			}
			got = &s
		}
		if !slices.EqualFunc(got.Nodes, next.Nodes, lockqueue.Node.Equal) {
			t.Fatalf("%s frame %s\nprev %v\ngot  %v\nwant %v", kind, raw, nodeNames(prev.Nodes), nodeNames(got.Nodes), nodeNames(next.Nodes))
		}
		// Pairing by head and tail is pairing by maps, without them.
		pn, sn := newNames(prev.Nodes), newNames(next.Nodes)
		from, gone, ok := matchNames(pn, sn)
		wfrom, wgone, wok := matchByMaps(newNames(prev.Nodes), newNames(next.Nodes))
		if ok != wok || !slices.Equal(from, wfrom) || !slices.Equal(gone, wgone) {
			t.Fatalf("matchNames(%v, %v) = %v %v %v, maps say %v %v %v", nodeNames(prev.Nodes), nodeNames(next.Nodes), from, gone, ok, wfrom, wgone, wok)
		}
		if unique := newNames(prev.Nodes).unique() && newNames(next.Nodes).unique(); ok != unique || sn.unique() != newNames(next.Nodes).unique() {
			t.Fatalf("matchNames(%v, %v) = %v and learnt unique=%v, but the names are unique: %v", nodeNames(prev.Nodes), nodeNames(next.Nodes), ok, sn.unique(), unique)
		}
	})
}

func nodeNames(nodes []lockqueue.Node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.Name)
	}
	return out
}

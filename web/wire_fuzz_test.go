package web

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
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

// fuzzHeader sets some of s's own fields from b, so that a delta sets,
// changes and clears them (the note from b's bytes as they come, quotes
// and backslashes among them).
func fuzzHeader(s lockqueue.Snapshot, b []byte) lockqueue.Snapshot {
	if len(b) == 0 {
		return s
	}
	c := b[0]
	if c&1 != 0 {
		// Valid UTF-8: JSON would send other bytes as U+FFFD.
		s.Note = strings.ToValidUTF8(string(b[:min(len(b), 4)]), "?")
	}
	if c&2 != 0 {
		s.Error = "read failed"
	}
	if c&4 != 0 {
		s.Alerts = []lockqueue.Alert{{Kind: lockqueue.AlertOrphan, Nodes: []string{fmt.Sprintf("n%02d", c&15)}, Message: "{[\"x\"]}"}}
	}
	if c&8 != 0 {
		s.Filling = &lockqueue.Filling{Read: int(c >> 4), Of: 16}
	}
	s.Leases = int(c >> 6)
	return s
}

// FuzzDeltaRoundTrip: whatever two snapshots a socket gets in a row, the
// frame between them, applied the way a client applies it (ApplyDelta,
// which live.js's applyDelta follows step by step), gives the second one
// exactly, its own fields and its nodes in the server's order; a pair the
// patch cannot express goes whole.
func FuzzDeltaRoundTrip(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8}, []byte{1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8}, []byte{9, 1, 2, 3, 20, 5, 6, 7})
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8}, []byte{2, 1, 3, 4, 5, 6, 7, 8})
	f.Add([]byte{1, 1, 2}, []byte{1, 2})
	f.Fuzz(func(t *testing.T, a, b []byte) {
		prev := wireSnapshot(fuzzHeader(lockqueue.Snapshot{Path: "/l", Revision: 1, Nodes: fuzzNodes(a)}, a))
		next := wireSnapshot(fuzzHeader(lockqueue.Snapshot{Path: "/l", Revision: 2, Nodes: fuzzNodes(b)}, b))
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
		sameJSON(t, "the client's copy", *got, next)
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

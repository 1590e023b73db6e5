package web

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/lockqueue/fieldtest"
)

// Every field of lockqueue's one list reaches the browser: a change of a
// node's field makes the node unequal (so a delta upserts it) and shows in
// its JSON; a change of a snapshot's field, set or cleared, comes through
// the socket's frame as a client applies it (by JSON alone, as live.js
// does). A field added to lockqueue's types that one of them misses fails
// here.
func TestEveryFieldReachesTheBrowser(t *testing.T) {
	f := gozkFolder("/l", 6)
	f.watchPred = true
	base := wireSnapshot(f.snapshot())
	f.rev++
	base2 := f.snapshot()

	for _, fl := range fieldtest.NodeFields() {
		t.Run("node "+fl.Name, func(t *testing.T) {
			node := base.Nodes[1]
			changed := fl.ChangeNode(node)
			a, _ := json.Marshal(node)
			b, _ := json.Marshal(changed)
			if bytes.Equal(a, b) {
				t.Errorf("a change to %s does not show in the node's JSON", fl.Name)
			}
			if fl.Tag.Get("eq") == "-" {
				// It follows from the fields compared (Lane), so the
				// delta that brings their change brings it too.
				if !nodeEqual(&node, &changed) {
					t.Errorf("nodeEqual compares %s, tagged eq:\"-\"", fl.Name)
				}
				return
			}
			if nodeEqual(&node, &changed) {
				t.Errorf("nodeEqual misses a change to %s", fl.Name)
			}
			next := base2
			next.Nodes = append([]lockqueue.Node(nil), base2.Nodes...)
			next.Nodes[1] = changed
			roundTrip(t, base, next, FrameDelta)
		})
	}
	unknown, known := base.Nodes[1], base.Nodes[1]
	unknown.Watching, known.Watching = nil, []string{}
	if nodeEqual(&unknown, &known) {
		t.Error("nodeEqual treats watching unknown (null) as watching nothing ([])")
	}

	for _, fl := range fieldtest.SnapshotFields() {
		t.Run("snapshot "+fl.Name, func(t *testing.T) {
			changed := wireSnapshot(fl.ChangeSnapshot(base2))
			kind := FrameDelta
			if changed.Key() != base.Key() {
				kind = FrameSnapshot // another lock: never patched
			}
			set := roundTrip(t, base, changed, kind)
			if kind == FrameDelta && !bytes.Contains(set, []byte(`"`+fl.JSON()+`":`)) {
				t.Errorf("a change to %s is not in the delta's header: %s", fl.Name, set)
			}
			// And back: a field set, then left out, is cleared.
			back := base
			back.Revision = changed.Revision + 1
			roundTrip(t, changed, back, kind)
		})
	}
}

// roundTrip sends next to a socket that holds prev and checks that the
// client's copy after the frame (of kind) is next, as JSON; it returns the
// frame.
func roundTrip(t *testing.T, prev, next lockqueue.Snapshot, kind string) []byte {
	t.Helper()
	raw, got, err := encodeFrame(&prev, next, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got != kind {
		t.Fatalf("sent a %s frame, want %s: %s", got, kind, raw)
	}
	var fr Frame
	if err := json.Unmarshal(raw, &fr); err != nil {
		t.Fatal(err)
	}
	snap := fr.Snapshot
	if kind == FrameDelta {
		s, err := ApplyDelta(prev, fr.Delta)
		if err != nil {
			t.Fatalf("apply %s: %v", raw, err)
		}
		snap = &s
	}
	sameJSON(t, "the client's copy", *snap, wireSnapshot(next))
	return raw
}

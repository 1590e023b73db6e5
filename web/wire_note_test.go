package web

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// A delta carries the snapshot-level fields a service without named
// waiters sets (Redis: the note, the Redisson waiter count and since when
// they wait), so a
// socket that patches its copy shows them as the API does.
func TestDeltaCarriesNoteAndAnonymousWaiters(t *testing.T) {
	node := func(left int64) lockqueue.Node {
		return lockqueue.Node{Name: "tok", Seq: -1, Holding: true, Rare: &lockqueue.Rare{Client: "tok", LeaseLeftMs: left}}
	}
	var nodes []lockqueue.Node
	for i := range 5 { // enough unchanged nodes that a delta is the smaller frame
		n := node(0)
		n.Name = string(rune('a' + i))
		nodes = append(nodes, n)
	}
	prev := lockqueue.Snapshot{Service: "redis", Path: "orders", Revision: 1, Nodes: append(nodes, node(3000)),
		Note: "old note", AnonymousWaiters: 1}
	next := prev
	next.Revision, next.Nodes = 2, append(append([]lockqueue.Node(nil), nodes...), node(2000))
	next.Note, next.AnonymousWaiters = "spin-lock waiters leave no trace", 3
	next.AnonymousSince = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

	b, kind, err := encodeFrame(&prev, next, nil)
	if err != nil || kind != FrameDelta {
		t.Fatalf("frame %s, %v; want a delta", kind, err)
	}
	var f Frame
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	got, err := ApplyDelta(prev, f.Delta)
	if err != nil {
		t.Fatal(err)
	}
	if got.Note != next.Note || got.AnonymousWaiters != 3 || !got.AnonymousSince.Equal(next.AnonymousSince) {
		t.Errorf("patched: note %q, anonymous waiters %d since %v; want %q, 3 since %v",
			got.Note, got.AnonymousWaiters, got.AnonymousSince, next.Note, next.AnonymousSince)
	}
}

package simulator

import (
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// A step's nodes carry their clocks on the run's clock: a holder from when
// its client acquired, a waiter from when it joined, a node no client owns
// from the step's clock; a hold a world stamped stays, and the record
// itself is left alone.
func TestRunClocks(t *testing.T) {
	stamped := lockqueue.Node{Name: "n4", Holding: true}
	stamped.SetHeldSince(time.UnixMilli(600))
	snap := lockqueue.Snapshot{Nodes: []lockqueue.Node{
		{Name: "n1", Holding: true}, {Name: "n2", WaitsFor: "n1"}, {Name: "n3", Holding: true}, stamped, {Name: "n5"},
	}}
	clients := []ClientInfo{
		{Name: "LOCK1", Node: "n1", JoinedMs: 0, SinceMs: 1200},
		{Name: "LOCK2", Node: "n2", JoinedMs: 2400, SinceMs: 2400},
		{Name: "LOCK4", Node: "n4", JoinedMs: 0, SinceMs: 1200},
	}
	got := runClocks(snap, clients, 3600).Nodes
	tests := []struct {
		node        int
		held, waits int64 // ms on the run's clock; -1: not stamped
	}{
		{0, 1200, -1},
		{1, -1, 2400},
		{2, 3600, -1}, // no client: the step's clock
		{3, 600, -1},  // the world's stamp
		{4, -1, 3600},
	}
	ms := func(t time.Time) int64 {
		if t.IsZero() {
			return -1
		}
		return t.UnixMilli()
	}
	for _, tt := range tests {
		n := got[tt.node]
		if ms(n.HeldSince()) != tt.held || ms(n.WaitSince()) != tt.waits {
			t.Errorf("%s: held since %d, waits since %d (ms, -1 unset); want %d, %d", n.Name, ms(n.HeldSince()), ms(n.WaitSince()), tt.held, tt.waits)
		}
	}
	if !snap.Nodes[0].HeldSince().IsZero() || !snap.Nodes[1].WaitSince().IsZero() {
		t.Error("the step's record was stamped in place")
	}
}

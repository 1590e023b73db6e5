package simulator

import (
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// A step's holders carry when their clients acquired, on the run's clock;
// waiters and the record itself are left alone.
func TestRunHoldsStampsHolders(t *testing.T) {
	snap := lockqueue.Snapshot{Nodes: []lockqueue.Node{{Name: "n1", Holding: true}, {Name: "n2", WaitsFor: "n1"}, {Name: "n3", Holding: true}}}
	clients := []ClientInfo{{Name: "LOCK1", Node: "n1", SinceMs: 1200}, {Name: "LOCK2", Node: "n2", JoinedMs: 2400, SinceMs: 2400}}
	got := runHolds(snap, clients).Nodes
	if want := time.UnixMilli(1200); !got[0].HeldSince().Equal(want) {
		t.Errorf("n1 held since %s, want %s (the run's clock at 1.2s)", got[0].HeldSince(), want)
	}
	if !got[1].HeldSince().IsZero() || !got[2].HeldSince().IsZero() {
		t.Errorf("a waiter (%s) or a holder no client owns (%s) was stamped", got[1].HeldSince(), got[2].HeldSince())
	}
	if !snap.Nodes[0].HeldSince().IsZero() {
		t.Error("the step's record was stamped in place")
	}
}

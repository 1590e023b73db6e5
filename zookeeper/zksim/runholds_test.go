package zksim

import (
	"sync"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/simulator"
)

// A run's lock, opened in the live lock view, times each hand-off from the
// moment it was shown, as a live reader's does: the snapshots a run
// publishes carry heldSince for a holder that was waiting (or absent) in
// the one published before it.
func TestRunPublishesHandOffClocks(t *testing.T) {
	var mu sync.Mutex
	var shown []lockqueue.Snapshot
	m := newManager(t, simulator.ManagerConfig{Publish: func(s lockqueue.Snapshot) {
		mu.Lock()
		shown = append(shown, s)
		mu.Unlock()
	}})
	r, err := m.Start(simulator.Spec{Scenario: "lock1-5"})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	runAll(t, r)
	mu.Lock()
	defer mu.Unlock()
	handOffs := 0
	held := map[string]time.Time{}
	for _, s := range shown {
		next := map[string]time.Time{}
		for _, n := range s.Nodes {
			if !n.Holding {
				continue
			}
			if n.HeldSince().Before(start) {
				t.Fatalf("holder %s of a published snapshot has heldSince %v, before the run started (%v)", n.Name, n.HeldSince(), start)
			}
			if since, ok := held[n.Name]; ok && !since.Equal(n.HeldSince()) {
				t.Errorf("holder %s's clock moved from %v to %v while it held", n.Name, since, n.HeldSince())
			} else if !ok {
				handOffs++
			}
			next[n.Name] = n.HeldSince()
		}
		held = next
	}
	if handOffs < 3 {
		t.Errorf("%d acquisitions seen in %d published snapshots; lock1-5 hands the lock on at least 3 times", handOffs, len(shown))
	}
}

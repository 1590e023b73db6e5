package zksim

import (
	"fmt"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/simulator"
)

// queue starts the herd scenario with n clients and lets all of them queue;
// snapshots says whether the steps are recorded with one (noSnapshots off).
func queue(t testing.TB, m *simulator.Manager, snapshots bool, st simulator.Strategy, n int) *simulator.Run {
	t.Helper()
	r, err := m.Start(simulator.Spec{Scenario: "herd", Strategy: st, Clients: &n})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	if err := r.Seek(n); err != nil {
		t.Fatalf("queue %d clients: %v", n, err)
	}
	s := r.State()
	if snapshots && (len(s.Snapshot.Holders()) != 1 || len(s.Snapshot.Waiters()) != n-1) {
		t.Fatalf("after %d joins: holders %v, %d waiters", n, s.Snapshot.Holders(), len(s.Snapshot.Waiters()))
	}
	return r
}

// drain releases the n queued clients one by one and returns what that
// alone cost.
func drain(t testing.TB, r *simulator.Run, n int) simulator.Stats {
	t.Helper()
	before := r.State().Stats
	if err := r.Seek(2 * n); err != nil {
		t.Fatalf("drain: %v", err)
	}
	return r.State().Stats.Sub(before)
}

// TestDrainCounts: draining N queued clients costs exactly N−1
// notifications with predecessor watching, and at least N(N−1)/2 with herd
// watching, for N = 10 and 100 (500 is in BenchmarkDrain only). These are
// counts of real watch events, not timings.
func TestDrainCounts(t *testing.T) {
	for _, n := range []int{10, 100} {
		// A long session timeout: nothing here crashes, and a busy machine
		// must not expire a session in the middle of a 100-client herd.
		m, _ := newManagerOn(t, Config{SessionTimeout: 10 * time.Second}, simulator.ManagerConfig{})
		tests := []struct {
			strategy simulator.Strategy
			check    func(s simulator.Stats) error
		}{
			{simulator.Predecessor, func(s simulator.Stats) error {
				if s.Notifications != n-1 || s.WastedWakeups != 0 || s.GetChildren != n-1 {
					return fmt.Errorf("want %d notifications, %d getChildren, no wasted wake-ups", n-1, n-1)
				}
				return nil
			}},
			{simulator.Herd, func(s simulator.Stats) error {
				if s.Notifications < n*(n-1)/2 || s.GetChildren < n*(n-1)/2 || s.WastedWakeups < (n-1)*(n-2)/2 {
					return fmt.Errorf("want at least %d notifications and getChildren, %d wasted wake-ups", n*(n-1)/2, (n-1)*(n-2)/2)
				}
				return nil
			}},
		}
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/N=%d", tt.strategy, n), func(t *testing.T) {
				r := queue(t, m, true, tt.strategy, n)
				start := time.Now()
				s := drain(t, r, n)
				t.Logf("drain of %d, %s: %d notifications, %d getChildren, %d exists, %d wasted, %v",
					n, tt.strategy, s.Notifications, s.GetChildren, s.Exists, s.WastedWakeups, time.Since(start).Round(time.Millisecond))
				if err := tt.check(s); err != nil {
					t.Errorf("drain of %d: %+v: %v", n, s, err)
				}
				if err := m.Delete(r.ID()); err != nil {
					t.Error(err)
				}
			})
		}
	}
}

// BenchmarkDrain measures a full drain of N queued clients, each its own
// session and proxy, on a real ZooKeeper: herd versus predecessor.
//
//	go test ./zookeeper/zksim -run '^$' -bench Drain -benchtime 1x -timeout 60m
func BenchmarkDrain(b *testing.B) {
	for _, n := range []int{10, 100, 500} {
		for _, st := range []simulator.Strategy{simulator.Herd, simulator.Predecessor} {
			b.Run(fmt.Sprintf("%s/N=%d", st, n), func(b *testing.B) {
				m, zb := newManagerOn(b, Config{SessionTimeout: 10 * time.Second}, simulator.ManagerConfig{MaxClients: n})
				// The snapshot per step is the viewer's cost, not the recipe's.
				zb.noSnapshots = true
				var total simulator.Stats
				var wall time.Duration
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					r := queue(b, m, false, st, n)
					b.StartTimer()
					start := time.Now()
					total.Add(drain(b, r, n))
					wall += time.Since(start)
					b.StopTimer()
					if err := m.Delete(r.ID()); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				runs := float64(b.N)
				b.ReportMetric(float64(total.Notifications)/runs, "notifications/drain")
				b.ReportMetric(float64(total.GetChildren)/runs, "getChildren/drain")
				b.ReportMetric(float64(total.WastedWakeups)/runs, "wasted/drain")
				b.ReportMetric(wall.Seconds()*1000/runs, "ms/drain")
			})
		}
	}
}

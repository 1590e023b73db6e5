package metrics_test

import (
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/hub"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/metrics"
)

// A stalled reader in a cycle with the writer after it, as lockqueue
// joins it, shows in the alerts gauge under both kinds.
func TestStalledHolderAlertsGauge(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	children := []lockqueue.Child{
		{Name: "R_0000000001", EphemeralOwner: 1, Czxid: 101},
		{Name: "W_0000000002", EphemeralOwner: 2, Czxid: 102},
	}
	table := lockqueue.WatchTable{Source: "4lw", ChildWatches: -1, Watches: map[int64][]string{
		1: {"/locks/rw/W_0000000002"}, // the reader holds by rule, yet waits for the writer
		2: {"/locks/rw/R_0000000001"}, // the writer waits for the reader, by rule
	}}
	var s lockqueue.Snapshot
	var since map[string]time.Time
	for _, at := range []time.Time{now.Add(-5 * time.Second), now} {
		s = lockqueue.Build("/locks/rw", children, lockqueue.Options{})
		s.Connection = lockqueue.Connected
		since = lockqueue.JoinWatches(&s, table, since, at)
	}
	h := hub.New()
	h.Publish(s)
	got := scrape(t, metrics.Handler(metrics.Config{Hub: h, Now: func() time.Time { return now }}))
	for _, kind := range []string{lockqueue.AlertStalled, lockqueue.AlertDeadlock} {
		v, ok := value(t, got, "zklockviz_lock_alerts", map[string]string{"path": "/locks/rw", "kind": kind})
		if !ok || v != 1 {
			t.Errorf("zklockviz_lock_alerts{kind=%q} = %v (present %t), want 1; alerts %+v", kind, v, ok, s.Alerts)
		}
	}
}

package zksim

import (
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/simulator"
)

// ZooKeeper counts requests per server, not per lock: a run's request meter
// is the recipe's requests the classroom counted, token reads aside.
func TestMetersCountTheRecipesRequests(t *testing.T) {
	events := []simulator.Event{{Event: simulator.EvLock, Client: "C1", AtMs: 100}, {Event: simulator.EvWrite, Client: "C1", AtMs: 4000}}
	stats := simulator.Stats{GetChildren: 3, Exists: 2, Create: 3, Delete: 2, TokenReads: 9, Notifications: 2}
	m := simulator.MetersOf((&Backend{}).RunWords().Requests, events, stats)
	if m.Requests != 10 || !strings.Contains(m.RequestsFrom, "ZooKeeper requests") || m.PerSec != 2.5 {
		t.Errorf("requests %d (%.2f/s) from %q, want 10 (2.50/s) from ZooKeeper requests", m.Requests, m.PerSec, m.RequestsFrom)
	}
}

package lockqueue_test

import (
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// An unreadable lock is its last known state, not live, since the first
// snapshot that could not be read; its leases count down from then.
func TestLastKnown(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 3, 0, 0, 0, time.UTC)
	live := lockqueue.Snapshot{Service: "redis", Path: "orders", Connection: lockqueue.Connected, Exists: true, UpdatedAt: t0,
		Nodes:  []lockqueue.Node{{Name: "tok", Holding: true, Rare: &lockqueue.Rare{LeaseTTLMs: 60000, LeaseLeftMs: 5000}}},
		Alerts: []lockqueue.Alert{{Kind: "no-expiry", Nodes: []string{"tok"}}}}
	down := func(sec int) lockqueue.Snapshot {
		return lockqueue.Snapshot{Service: "redis", Path: "orders", Connection: lockqueue.Reconnecting, Error: "refused",
			UpdatedAt: t0.Add(time.Duration(sec) * time.Second)}
	}
	first := lockqueue.LastKnown(&live, down(2))
	for _, tc := range []struct {
		name      string
		last      *lockqueue.Snapshot
		next      lockqueue.Snapshot
		nodes     int
		leftMs    int64
		unknownAt int // seconds after t0; -1 none
	}{
		{"live is live", &live, live, 1, 5000, -1},
		{"never read", nil, down(2), 0, 0, 2},
		{"the last live state", &live, down(2), 1, 3000, 2},
		{"still down: since the first", &first, down(4), 1, 1000, 2},
		{"a lease run out meanwhile", &first, down(9), 1, 0, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := lockqueue.LastKnown(tc.last, tc.next)
			if len(s.Nodes) != tc.nodes || s.Connection != tc.next.Connection || s.Error != tc.next.Error || !s.UpdatedAt.Equal(tc.next.UpdatedAt) {
				t.Fatalf("%+v: want %d nodes, connection %s, error %q, updated %s", s, tc.nodes, tc.next.Connection, tc.next.Error, tc.next.UpdatedAt)
			}
			if tc.nodes > 0 && (s.Nodes[0].LeaseLeftMs() != tc.leftMs || !s.Nodes[0].Holding || len(s.Alerts) != 1 || !s.Exists) {
				t.Errorf("%+v: want the holder with %d ms left, its alert, existing", s, tc.leftMs)
			}
			want := time.Time{}
			if tc.unknownAt >= 0 {
				want = t0.Add(time.Duration(tc.unknownAt) * time.Second)
			}
			if !s.UnknownSince.Equal(want) {
				t.Errorf("unknown since %s, want %s", s.UnknownSince, want)
			}
		})
	}
	if live.Nodes[0].LeaseLeftMs() != 5000 {
		t.Errorf("LastKnown changed the last snapshot's nodes")
	}
}

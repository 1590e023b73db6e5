package views

import (
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// The first paint's table tells a stalled holder from a healthy one.
func TestNewLockStalledHolder(t *testing.T) {
	now := time.Unix(1000, 0)
	s := lockqueue.Snapshot{Path: "/rw", Connection: lockqueue.Connected, Exists: true, Nodes: []lockqueue.Node{
		{Name: "R_0000000001", Holding: true, Rare: &lockqueue.Rare{StalledOn: "W_0000000002", StalledSince: now}, Watching: []string{"/rw/W_0000000002"}},
		{Name: "R_0000000003", Holding: true, Watching: []string{}},
		{Name: "W_0000000002", WaitsFor: "R_0000000003", Edge: lockqueue.EdgeConfirmed, Watching: []string{"/rw/R_0000000003"}},
	}}
	l := NewLockWith(Page{}, zooKeeper, LockState{Path: "/rw", Snap: s, Known: true}, TableQuery{}, now)
	tests := []struct {
		state, edge, stalledOn string
	}{
		{"holding (stalled: client still waits)", "stalled", "W_0000000002"},
		{"holding", "", ""},
		{"waiting", "confirmed", ""},
	}
	for i, tt := range tests {
		r := l.Rows[i]
		if r.State != tt.state || r.Edge != tt.edge || r.StalledOn != tt.stalledOn {
			t.Errorf("row %d: state %q edge %q stalledOn %q, want %q %q %q", i, r.State, r.Edge, r.StalledOn, tt.state, tt.edge, tt.stalledOn)
		}
	}
}

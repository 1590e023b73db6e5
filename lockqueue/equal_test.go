package lockqueue

import (
	"testing"
	"time"
)

// SameShown ignores only the revision and the time of the read: any other
// difference is something a viewer would see, so the reader publishes it.
func TestSameShown(t *testing.T) {
	base := Snapshot{Service: "etcd", Path: "orders", Revision: 3, Connection: Connected, Exists: true,
		UpdatedAt: time.Unix(100, 0), Nodes: []Node{{Name: "a", Holding: true}, {Name: "b", WaitsFor: "a"}},
		Alerts: []Alert{}, Note: "n"}
	for _, tc := range []struct {
		name   string
		change func(*Snapshot)
		same   bool
	}{
		{"identical", func(*Snapshot) {}, true},
		{"revision", func(s *Snapshot) { s.Revision++ }, true},
		{"time of the read", func(s *Snapshot) { s.UpdatedAt = s.UpdatedAt.Add(time.Second) }, true},
		{"a node field", func(s *Snapshot) { s.Nodes[1].SetLeaseLeftMs(10) }, false},
		{"a node gone", func(s *Snapshot) { s.Nodes = s.Nodes[:1] }, false},
		{"nodes unknown, not empty", func(s *Snapshot) { s.Nodes = nil }, false},
		{"an alert", func(s *Snapshot) { s.Alerts = append(s.Alerts, Alert{Kind: AlertOrphan}) }, false},
		{"the note", func(s *Snapshot) { s.Note = "other" }, false},
		{"anonymous waiters", func(s *Snapshot) { s.AnonymousWaiters = 2 }, false},
		{"the connection", func(s *Snapshot) { s.Connection = Reconnecting }, false},
		{"an error", func(s *Snapshot) { s.Error = "boom" }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := base
			b.Nodes = append([]Node(nil), base.Nodes...)
			tc.change(&b)
			if got := SameShown(base, b); got != tc.same {
				t.Errorf("SameShown = %v, want %v", got, tc.same)
			}
		})
	}
}

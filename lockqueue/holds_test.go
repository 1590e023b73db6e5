package lockqueue

import (
	"testing"
	"time"
)

func TestCarryHolds(t *testing.T) {
	t0 := time.Unix(1000, 0)
	now := t0.Add(time.Minute)
	snap := func(conn Connection, nodes ...Node) *Snapshot {
		return &Snapshot{Path: "/l", Connection: conn, Nodes: nodes}
	}
	holder := func(name string, since time.Time) Node { return Node{Name: name, Holding: true, HeldSince: since} }
	waiter := func(name string) Node { return Node{Name: name} }
	for _, tc := range []struct {
		name       string
		prev, next *Snapshot
		want       map[string]time.Time // holders' HeldSince; every other node zero
	}{
		{"first read: unknown", nil, snap(Connected, holder("a", time.Time{}), waiter("b")),
			map[string]time.Time{"a": {}}},
		{"still holding: kept", snap(Connected, holder("a", t0)), snap(Connected, holder("a", time.Time{})),
			map[string]time.Time{"a": t0}},
		{"still holding, unknown: stays unknown", snap(Connected, holder("a", time.Time{})), snap(Connected, holder("a", time.Time{})),
			map[string]time.Time{"a": {}}},
		{"hand-off seen: now", snap(Connected, holder("a", t0), waiter("b")), snap(Connected, holder("b", time.Time{})),
			map[string]time.Time{"b": now}},
		{"new node holding at once: now", snap(Connected), snap(Connected, holder("c", time.Time{})),
			map[string]time.Time{"c": now}},
		{"after a gap: unknown", snap(Reconnecting, holder("a", t0), waiter("b")), snap(Connected, holder("b", time.Time{})),
			map[string]time.Time{"b": {}}},
		{"a holder kept through a gap: kept", snap(Reconnecting, holder("a", t0)), snap(Connected, holder("a", time.Time{})),
			map[string]time.Time{"a": t0}},
		{"a holder that waits again: cleared", snap(Connected, holder("a", t0)), snap(Connected, Node{Name: "a", HeldSince: t0}),
			map[string]time.Time{}},
		{"same name, another folder: new", snap(Connected, Node{Name: "x", Folder: "/l/leases", Holding: true, HeldSince: t0}),
			snap(Connected, Node{Name: "x", Folder: "/l/locks", Holding: true}), map[string]time.Time{"x": now}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			CarryHolds(tc.prev, tc.next, now)
			for _, n := range tc.next.Nodes {
				want, isHolder := tc.want[n.Name]
				if !isHolder {
					want = time.Time{}
				}
				if !n.HeldSince.Equal(want) {
					t.Errorf("%s: HeldSince %v, want %v", n.Name, n.HeldSince, want)
				}
			}
		})
	}
}

package lockqueue

import (
	"reflect"
	"slices"
	"testing"
	"time"
)

func TestCarryHolds(t *testing.T) {
	t0 := time.Unix(1000, 0)
	made := time.Unix(900, 0)
	now := t0.Add(time.Minute)
	snap := func(conn Connection, nodes ...Node) *Snapshot {
		return &Snapshot{Path: "/l", Connection: conn, Nodes: nodes}
	}
	holder := func(name string, since time.Time) Node {
		return Node{Name: name, Holding: true, Ctime: made, Rare: &Rare{HeldSince: since}}
	}
	bounded := func(name string, since time.Time, b Bound) Node {
		n := holder(name, since)
		n.Rare.HeldBound = b
		return n
	}
	waiter := func(name string) Node { return Node{Name: name, Ctime: made} }
	for _, tc := range []struct {
		name       string
		prev, next *Snapshot
		want       map[string]hold // holders' clocks; every other node zero
	}{
		{"first read: at most since made", nil, snap(Connected, holder("a", time.Time{}), waiter("b")),
			map[string]hold{"a": {made, HeldAtMost}}},
		{"first read, creation unknown: at least since now", nil, snap(Connected, Node{Name: "a", Holding: true}),
			map[string]hold{"a": {now, HeldAtLeast}}},
		{"first read, creation only bounded: at least since now", nil, snap(Connected, Node{Name: "a", Holding: true, Ctime: made, CtimeAtMost: true}),
			map[string]hold{"a": {now, HeldAtLeast}}},
		{"still holding: kept", snap(Connected, holder("a", t0)), snap(Connected, holder("a", time.Time{})),
			map[string]hold{"a": {since: t0}}},
		{"still holding, bounded: stays bounded", snap(Connected, bounded("a", made, HeldAtMost)), snap(Connected, holder("a", time.Time{})),
			map[string]hold{"a": {made, HeldAtMost}}},
		{"hand-off seen: now", snap(Connected, holder("a", t0), waiter("b")), snap(Connected, holder("b", time.Time{})),
			map[string]hold{"b": {since: now}}},
		{"new node holding at once: now", snap(Connected), snap(Connected, holder("c", time.Time{})),
			map[string]hold{"c": {since: now}}},
		{"after a gap: at most since made", snap(Reconnecting, holder("a", t0), waiter("b")), snap(Connected, holder("b", time.Time{})),
			map[string]hold{"b": {made, HeldAtMost}}},
		{"a holder kept through a gap: kept", snap(Reconnecting, holder("a", t0)), snap(Connected, holder("a", time.Time{})),
			map[string]hold{"a": {since: t0}}},
		{"a holder that waits again: cleared", snap(Connected, holder("a", t0)), snap(Connected, Node{Name: "a", Rare: &Rare{HeldSince: t0, HeldBound: HeldAtMost}}),
			map[string]hold{}},
		{"same name, another folder: new", snap(Connected, Node{Name: "x", Rare: &Rare{Folder: "/l/leases", HeldSince: t0}, Holding: true}),
			snap(Connected, Node{Name: "x", Rare: &Rare{Folder: "/l/locks"}, Holding: true}), map[string]hold{"x": {since: now}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			CarryHolds(tc.prev, tc.next, now)
			for _, n := range tc.next.Nodes {
				want := tc.want[n.Name]
				if !n.HeldSince().Equal(want.since) || n.HeldBound() != want.bound {
					t.Errorf("%s: HeldSince %v (%q), want %v (%q)", n.Name, n.HeldSince(), n.HeldBound(), want.since, want.bound)
				}
			}
		})
	}
}

// A join or a hold's clock over nodes shared with a published snapshot
// copies them before its first change, and only then: the published
// nodes never change, and a join that changes nothing (the watcher's
// usual poll) shares them still.
func TestSharedNodesCopiedOnWrite(t *testing.T) {
	now := time.Now()
	const owner = 0x100
	kids := []Child{
		{Name: "_c_0123456789abcdef0123456789abcdef-lock-0000000001", EphemeralOwner: owner, Ctime: now.Add(-time.Minute)},
		{Name: "_c_0123456789abcdef0123456789abcdef-lock-0000000002", EphemeralOwner: owner + 1, Ctime: now.Add(-time.Minute)},
		{Name: "_c_0123456789abcdef0123456789abcdef-lock-0000000003", EphemeralOwner: owner + 2, Ctime: now.Add(-time.Minute)},
	}
	table := WatchTable{Source: "4lw", Connected: map[int64]bool{owner: true, owner + 1: true, owner + 2: true},
		Watches: map[int64][]string{owner + 1: {"/q/" + kids[0].Name}}}
	published := Build("/q", kids, Options{})
	since := Join(&published, table, nil, now, JoinOptions{})
	// Live before, with no holder: the holder's clock starts now.
	CarryHolds(&Snapshot{Path: "/q", Exists: true, Connection: Connected}, &published, now)
	if published.Nodes[0].HeldSince().IsZero() {
		t.Fatalf("the holder has no clock")
	}
	before := slices.Clone(published.Nodes)

	again := published
	since = Join(&again, table, since, now.Add(time.Second), JoinOptions{Shared: true})
	CarryHoldsShared(&published, &again, now.Add(time.Second))
	if &again.Nodes[0] != &published.Nodes[0] {
		t.Errorf("a join that changed nothing copied the nodes")
	}

	// The third node's watch appears: the join must copy, not write.
	table.Watches[owner+2] = []string{"/q/" + kids[1].Name}
	changed := published
	Join(&changed, table, since, now.Add(2*time.Second), JoinOptions{Shared: true})
	CarryHoldsShared(&published, &changed, now.Add(2*time.Second))
	if &changed.Nodes[0] == &published.Nodes[0] {
		t.Errorf("a join that changed a node did not copy the nodes")
	}
	if got := changed.Nodes[2].Watching; !slices.Equal(got, []string{"/q/" + kids[1].Name}) {
		t.Errorf("the new watch: %v", got)
	}
	// A hold's clock that changes (nothing published before: the holder
	// held at most since its creation) is written into a copy too.
	unknown := published
	CarryHoldsShared(nil, &unknown, now.Add(3*time.Second))
	if &unknown.Nodes[0] == &published.Nodes[0] || !unknown.Nodes[0].HeldSince().Equal(kids[0].Ctime) || unknown.Nodes[0].HeldBound() != HeldAtMost {
		t.Errorf("the holder's clock, bounded by its creation now, was written into the shared nodes, or not at all: %v (%q)", unknown.Nodes[0].HeldSince(), unknown.Nodes[0].HeldBound())
	}
	for i := range before {
		if !reflect.DeepEqual(before[i], published.Nodes[i]) {
			t.Errorf("published node %d changed:\nthen %+v\nnow  %+v", i, before[i], published.Nodes[i])
		}
	}
}

package views

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
)

func TestShortName(t *testing.T) {
	tests := []struct {
		name string
		want string
	}{
		{"R_0000000001", "R_0000000001"},
		{"_c_8f3a1b2c-1111-2222-3333-444455556666-__READ__0000000003", "8f3a…READ#3"},
		{"_c_8f3a1b2c-1111-2222-3333-444455556666-__WRIT__0000000010", "8f3a…WRIT#10"},
		{"_c_0123456789abcdef0123456789abcdef-lock-0000000007", "0123…lock#7"},
		{"0123456789abcdef0123456789abcdef__rlock__0000000009", "0123…rlock#9"},
		{"x-72057594037927936-0000000010", "7205…#10"},
		{"guid-read-0000000013", "guid…read#13"},
		{"0123456789abcdef0123456789abcdef", "012345…abcdef"},
		{"some-foreign-child-with-a-long-name", "some-f…g-name"},
		{"lock-2147483648-2147483648", "lock…#-2147483648"},
	}
	for _, tc := range tests {
		nm, _ := lockqueue.ParseName(tc.name)
		if got := ShortName(tc.name, nm.Seq); got != tc.want {
			t.Errorf("ShortName(%q, %d) = %q, want %q", tc.name, nm.Seq, got, tc.want)
		}
	}
}

func TestLaneOf(t *testing.T) {
	type Node = lockqueue.Node
	updated := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	made := updated.Add(-time.Minute)
	withRare := func(n Node, r lockqueue.Rare) Node {
		n.SetRare(r)
		return n
	}
	tests := []struct {
		name string
		node Node
		want lockqueue.Lane
	}{
		{"zookeeper waiter", Node{Name: "R_0000000001", Seq: 1, Session: "0x100000a1b2c3d4", Ctime: made},
			lockqueue.Lane{State: "waiting", Lines: []string{"R_0000000001", "—", "s …2c3d4"}, Verb: "waits", Since: made.UnixMilli()}},
		{"short session, held since the hand-off", withRare(Node{Name: "W_0000000002", Seq: 2, Session: "0x1f", Holding: true, Ctime: made}, lockqueue.Rare{HeldSince: updated}),
			lockqueue.Lane{State: "holding", Lines: []string{"W_0000000002", "—", "s 0x1f"}, Verb: "holds", Since: updated.UnixMilli()}},
		{"persistent, held since made", Node{Name: "W_0000000003", Seq: 3, Session: "0x0", Holding: true, Ctime: made},
			lockqueue.Lane{State: "holding", Persistent: true, Lines: []string{"W_0000000003", "—", "persistent"}, Verb: "holds ≤", Since: made.UnixMilli(), Hint: holdSinceMade}},
		{"data quoted, spaces folded, clipped; its wait's start unknown", Node{Name: "R_0000000004", Seq: 4, Data: "LOCK1\n\thost  a.example.org"},
			lockqueue.Lane{State: "waiting", Lines: []string{"R_0000000004", "“LOCK1 host a.e…”", ""}, Verb: "waits", Hint: lanePhrases["node.waitUnknown"]}},
		{"binary", Node{Name: "R_0000000005", Seq: 5, Data: "AAEC", DataBinary: true, Ctime: made},
			lockqueue.Lane{State: "waiting", Lines: []string{"R_0000000005", "‹binary›", ""}, Verb: "waits", Since: made.UnixMilli()}},
		{"label before data, a lease's time left", withRare(Node{Name: "pid-4242", Seq: -1, Data: "{}", Ctime: made}, lockqueue.Rare{Label: "psql · 10.0.0.7 · idle in transaction", Client: "4242", LeaseLeftMs: 1500}),
			lockqueue.Lane{State: "waiting", Lines: []string{"pid-4242", "psql · 10.0.0.7 ·…", "4242"}, Verb: "lease", Since: made.UnixMilli(), Until: updated.UnixMilli() + 1500, Left: 1500, Expired: "lease expired", Kind: "lease"}},
		{"a client for a service without sessions", withRare(Node{Name: "C1", Seq: -1, Ctime: made}, lockqueue.Rare{Client: "0123456789abcdef0123"}),
			lockqueue.Lane{State: "waiting", Lines: []string{"C1", "—", "0123456789abcde…"}, Verb: "waits", Since: made.UnixMilli()}},
		{"a zombie whose session expires", withRare(Node{Name: "_c_8f3a1b2c-1111-2222-3333-444455556666-__READ__0000000003", Seq: 3, Holding: true, Zombie: true, Ctime: made}, lockqueue.Rare{ExpiresInMs: 4000}),
			lockqueue.Lane{State: "holding", Lines: []string{"8f3a…READ#3", "—", ""}, Verb: "zombie", Since: made.UnixMilli(), Until: updated.UnixMilli() + 4000, Left: 4000, Hint: holdSinceMade, Expired: "zombie · expiry due", Kind: "zombie"}},
		{"a zombie, its expiry unknown", Node{Name: "W_0000000009", Seq: 9, Holding: true, Zombie: true, Ctime: made},
			lockqueue.Lane{State: "holding", Lines: []string{"W_0000000009", "—", ""}, Verb: "zombie · held", Since: made.UnixMilli(), Hint: holdSinceMade, Kind: "zombie"}},
		{"foreign, though its session is none", Node{Name: "not-a-lock", Seq: -1, Foreign: true, Session: "0x0", Ctime: made},
			lockqueue.Lane{State: "foreign", Lines: []string{"not-a-lock", "—", "persistent"}, Verb: "age", Since: made.UnixMilli()}},
		{"part of another contender", withRare(Node{Name: "lock-0000000001", Seq: 1, Holding: true, Session: "0x1", Ctime: made}, lockqueue.Rare{PartOf: "lease-0000000004"}),
			lockqueue.Lane{State: "part", Lines: []string{"lock…#1", "—", "s 0x1"}, Verb: "holds ≤", Since: made.UnixMilli(), Hint: holdSinceMade}},
	}
	for _, tc := range tests {
		if got := LaneOf(&tc.node, updated); !reflect.DeepEqual(*got, tc.want) {
			t.Errorf("%s: LaneOf =\n %+v\nwant\n %+v", tc.name, *got, tc.want)
		}
	}
}

// A stamped snapshot is a copy: the snapshot it came from, which the hub
// shares, keeps its nodes as they were.
func TestStampLaneCopies(t *testing.T) {
	s := lockqueue.Snapshot{Nodes: []lockqueue.Node{{Name: "R_0000000001", Seq: 1, Data: "x"}}}
	got := StampLane(s)
	if s.Nodes[0].Lane() != nil {
		t.Errorf("StampLane changed the node it was given: %+v", s.Nodes[0].Lane())
	}
	if l := got.Nodes[0].Lane(); l == nil || !slices.Equal(l.Lines, []string{"R_0000000001", "“x”", ""}) {
		t.Errorf("stamped node's Lane = %+v", l)
	}
}

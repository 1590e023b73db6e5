package lockqueue

import (
	"slices"
	"testing"
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
		nm, _ := ParseName(tc.name)
		if got := ShortName(tc.name, nm.Seq); got != tc.want {
			t.Errorf("ShortName(%q, %d) = %q, want %q", tc.name, nm.Seq, got, tc.want)
		}
	}
}

func TestLaneLines(t *testing.T) {
	withRare := func(n Node, r Rare) Node {
		n.SetRare(r)
		return n
	}
	tests := []struct {
		name string
		node Node
		want []string
	}{
		{"zookeeper waiter", Node{Name: "R_0000000001", Seq: 1, Session: "0x100000a1b2c3d4"}, []string{"R_0000000001", "—", "s …2c3d4"}},
		{"short session", Node{Name: "W_0000000002", Seq: 2, Session: "0x1f"}, []string{"W_0000000002", "—", "s 0x1f"}},
		{"persistent", Node{Name: "W_0000000003", Seq: 3, Session: "0x0"}, []string{"W_0000000003", "—", "persistent"}},
		{"data quoted, spaces folded, clipped", Node{Name: "R_0000000004", Seq: 4, Data: "LOCK1\n\thost  a.example.org"}, []string{"R_0000000004", "“LOCK1 host a.e…”", ""}},
		{"binary", Node{Name: "R_0000000005", Seq: 5, Data: "AAEC", DataBinary: true}, []string{"R_0000000005", "‹binary›", ""}},
		{"label before data", withRare(Node{Name: "pid-4242", Seq: -1, Data: "{}"}, Rare{Label: "psql · 10.0.0.7 · idle in transaction", Client: "4242"}),
			[]string{"pid-4242", "psql · 10.0.0.7 ·…", "4242"}},
		{"a client for a service without sessions", withRare(Node{Name: "C1", Seq: -1}, Rare{Client: "0123456789abcdef0123"}), []string{"C1", "—", "0123456789abcde…"}},
		{"curator", Node{Name: "_c_8f3a1b2c-1111-2222-3333-444455556666-__READ__0000000003", Seq: 3}, []string{"8f3a…READ#3", "—", ""}},
	}
	for _, tc := range tests {
		if got := LaneLines(&tc.node); !slices.Equal(got, tc.want) {
			t.Errorf("%s: LaneLines = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// A stamped snapshot is a copy: the snapshot it came from, which the hub
// shares, keeps its nodes as they were.
func TestStampLaneCopies(t *testing.T) {
	s := Snapshot{Nodes: []Node{{Name: "R_0000000001", Seq: 1, Data: "x"}}}
	got := StampLane(s)
	if s.Nodes[0].Lane() != nil {
		t.Errorf("StampLane changed the node it was given: %q", s.Nodes[0].Lane())
	}
	if want := []string{"R_0000000001", "“x”", ""}; !slices.Equal(got.Nodes[0].Lane(), want) {
		t.Errorf("stamped node's Lane = %q, want %q", got.Nodes[0].Lane(), want)
	}
}

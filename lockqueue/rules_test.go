package lockqueue

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// seedQueue builds /q from seed R_/W_ names, sequence 1, 2, ... in the
// order given, each its own session (1, 2, ...).
func seedQueue(kinds ...string) Snapshot {
	var names []string
	for i, k := range kinds {
		names = append(names, SeqName(k, int64(i+1)))
	}
	return Build("/q", kids(names...), Options{})
}

func TestStalledOn(t *testing.T) {
	s := seedQueue("R_", "W_", "W_")
	s.Nodes = append(s.Nodes, NewNode(Child{Name: "notes", EphemeralOwner: 9}))
	s.Nodes[3].Foreign = true
	q := newQueueView(&s)
	tests := []struct {
		desc     string
		watching []string
		want     string
	}{
		{"watches nothing", []string{}, ""},
		{"a children watch left over from a herd-style acquire", []string{"/q"}, ""},
		{"its just-deleted predecessor (a table older than the listing)", []string{"/q/W_0000000000"}, ""},
		{"a node of another lock", []string{"/other/W_0000000002"}, ""},
		{"a foreign child", []string{"/q/notes"}, ""},
		{"its own node", []string{"/q/R_0000000001"}, ""},
		{"a writer queued after it", []string{"/q/W_0000000003"}, "W_0000000003"},
		{"two nodes: the first in queue order", []string{"/q/W_0000000003", "/q/W_0000000002"}, "W_0000000002"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			n := s.Nodes[0]
			n.Watching = tt.watching
			if got := stalledOn(&n, q); got != tt.want {
				t.Errorf("stalledOn = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestWaiterEdge(t *testing.T) {
	s := seedQueue("W_", "W_", "W_")
	q := newQueueView(&s)
	tests := []struct {
		desc     string
		waitsOn  WaitOn
		source   string
		watching []string
		want     Edge
	}{
		{"its predecessor", OnNode, "4lw", []string{"/q/W_0000000001"}, EdgeConfirmed},
		{"its predecessor among others", OnNode, "4lw", []string{"/q/W_0000000003", "/q/W_0000000001"}, EdgeConfirmed},
		{"nothing", OnNode, "4lw", []string{}, EdgeMissing},
		{"only another lock's node", OnNode, "4lw", []string{"/x/W_0000000001"}, EdgeMissing},
		{"another node of the lock", OnNode, "4lw", []string{"/q/W_0000000003"}, EdgeUnexpected},
		{"the parent (a children watch)", OnNode, "simulator", []string{"/q"}, EdgeUnexpected},
		{"a node that is gone", OnNode, "4lw", []string{"/q/W_0000000007"}, EdgeDangling},
		{"children rule, server table", OnChildren, "4lw", []string{}, EdgeChildWatch},
		{"children rule, simulator sees the watch", OnChildren, "simulator", []string{"/q"}, EdgeChildWatch},
		{"children rule, simulator sees none", OnChildren, "simulator", []string{}, EdgeMissing},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			n := s.Nodes[1]
			n.WaitsOn, n.Watching = tt.waitsOn, tt.watching
			if got := waiterEdge(&n, tt.source, q); got != tt.want {
				t.Errorf("waiterEdge = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFindCycle(t *testing.T) {
	tests := []struct {
		desc  string
		adj   map[string][]string
		order []string
		want  []string
	}{
		{"no edges", map[string][]string{}, nil, nil},
		{"a chain", map[string][]string{"c": {"b"}, "b": {"a"}}, []string{"b", "c"}, nil},
		{"a pair", map[string][]string{"a": {"b"}, "b": {"a"}}, []string{"a", "b"}, []string{"a", "b"}},
		{"a path into a cycle", map[string][]string{"a": {"b"}, "b": {"c"}, "c": {"d"}, "d": {"b"}}, []string{"a", "b", "c", "d"}, []string{"b", "c", "d"}},
		{"a self-loop-free triangle", map[string][]string{"a": {"c"}, "c": {"b"}, "b": {"a"}}, []string{"a", "b", "c"}, []string{"a", "c", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			if got := findCycle(tt.adj, tt.order); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("findCycle = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSplitSession(t *testing.T) {
	// W1 holds; W2, W3 wait for their predecessors.
	s := seedQueue("W_", "W_", "W_")
	q := newQueueView(&s)
	tests := []struct {
		desc    string
		idx     []int
		watches []string
		want    map[int]attribution
	}{
		{"the holder and a waiter on it: the watch is the waiter's", []int{0, 1}, []string{"/q/W_0000000001"},
			map[int]attribution{0: {watching: []string{}}, 1: {watching: []string{"/q/W_0000000001"}}}},
		{"every waiter resolved: the rest is the one holder's", []int{0, 1}, []string{"/q/W_0000000001", "/q/W_0000000003"},
			map[int]attribution{0: {watching: []string{"/q/W_0000000003"}}, 1: {watching: []string{"/q/W_0000000001"}}}},
		{"an unresolved waiter takes the rest before the holder", []int{0, 2}, []string{"/q/W_0000000009"},
			map[int]attribution{0: {watching: []string{}}, 2: {watching: []string{"/q/W_0000000009"}}}},
		{"two unresolved waiters: ambiguous", []int{1, 2}, []string{"/q/W_0000000009"},
			map[int]attribution{1: {watching: []string{"/q/W_0000000009"}, ambiguous: true}, 2: {watching: []string{"/q/W_0000000009"}, ambiguous: true}}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			out := make([]attribution, len(s.Nodes))
			splitSession(s.Nodes, tt.idx, tt.watches, q, out)
			for i, want := range tt.want {
				if !reflect.DeepEqual(out[i], want) {
					t.Errorf("node %d: %+v, want %+v", i, out[i], want)
				}
			}
		})
	}
}

// A holder whose session still watches another node of the lock, joined
// over time: the grace, the alert, the cycle through it, and what is not a
// stall.
func TestJoinStalledHolder(t *testing.T) {
	t0 := time.Unix(1000, 0)
	const grace = 2 * time.Second
	// R1 and R2 hold by rule (no writer before them); W3 waits for R2.
	names := []string{"R_0000000001", "R_0000000002", "W_0000000003"}
	path := func(i int) string { return "/q/" + names[i] }
	tests := []struct {
		desc    string
		watches map[int64][]string // sessions 1, 2, 3 own names[0..2]
		after   time.Duration      // since the first join
		stalled []string           // StalledOn of each node
		alerts  []string
		cycle   []string
	}{
		{desc: "healthy: the holders watch nothing", after: 10 * time.Second,
			watches: map[int64][]string{3: {path(1)}}},
		{desc: "a children watch left over after a herd-style acquire", after: 10 * time.Second,
			watches: map[int64][]string{1: {"/q"}, 2: {"/q"}, 3: {path(1)}}},
		{desc: "a watch on its deleted predecessor is dangling, not a stall", after: 10 * time.Second,
			watches: map[int64][]string{2: {"/q/W_0000000000"}, 3: {path(1)}}},
		{desc: "within the grace: nothing yet", after: grace - time.Millisecond,
			watches: map[int64][]string{1: {path(1)}, 3: {path(1)}}},
		{desc: "past the grace: a stalled holder", after: grace, stalled: []string{names[1], "", ""},
			watches: map[int64][]string{1: {path(1)}, 3: {path(1)}},
			alerts:  []string{AlertStalled}},
		{desc: "a stalled reader and the writer after it that waits for it: a deadlock through the holder", after: grace,
			stalled: []string{"", names[2], ""},
			watches: map[int64][]string{2: {path(2)}, 3: {path(1)}},
			alerts:  []string{AlertDeadlock, AlertStalled}, cycle: []string{names[1], names[2]}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			table := WatchTable{Source: "4lw", Watches: tt.watches, ChildWatches: -1}
			var since map[string]time.Time
			var s Snapshot
			for _, now := range []time.Time{t0, t0.Add(tt.after / 2), t0.Add(tt.after)} {
				s = Build("/q", kids(names...), Options{})
				since = Join(&s, table, since, now, JoinOptions{StallGrace: grace})
			}
			if !s.Nodes[0].Holding || !s.Nodes[1].Holding || s.Nodes[2].Holding {
				t.Fatalf("want R1, R2 holding and W3 waiting: %+v", s.Nodes)
			}
			var stalled []string
			for i, n := range s.Nodes {
				stalled = append(stalled, n.StalledOn())
				if n.StalledOn() != "" && !n.StalledSince().Equal(t0) {
					t.Errorf("%s: StalledSince = %v, want the first sight, %v", names[i], n.StalledSince(), t0)
				}
			}
			if tt.stalled == nil {
				tt.stalled = []string{"", "", ""}
			}
			if !reflect.DeepEqual(stalled, tt.stalled) {
				t.Errorf("StalledOn = %q, want %q", stalled, tt.stalled)
			}
			var kinds []string
			for _, a := range s.Alerts {
				kinds = append(kinds, a.Kind)
				switch a.Kind {
				case AlertStalled:
					i, _ := newQueueView(&s).lookup(a.Nodes[0])
					if !slices.Equal(a.Nodes, []string{s.Nodes[i].Name, s.Nodes[i].StalledOn()}) || s.Nodes[i].StalledOn() == "" {
						t.Errorf("stalled-holder nodes %v, want [holder, waited for]", a.Nodes)
					}
					if !strings.Contains(a.Message, t0.UTC().Format(time.RFC3339)) {
						t.Errorf("stalled-holder message %q does not say since when", a.Message)
					}
				case AlertDeadlock:
					if !slices.Equal(a.Nodes, tt.cycle) {
						t.Errorf("deadlock cycle %v, want %v", a.Nodes, tt.cycle)
					}
					if !strings.Contains(a.Message, strings.Join(append(slices.Clone(tt.cycle), tt.cycle[0]), " → ")) {
						t.Errorf("deadlock message %q does not name the cycle in order", a.Message)
					}
				}
			}
			if !reflect.DeepEqual(kinds, tt.alerts) {
				t.Errorf("alerts = %v, want %v (%+v)", kinds, tt.alerts, s.Alerts)
			}
		})
	}
}

// A stall that ends (the client noticed, or the watch was a moment's)
// starts its clock again when it comes back.
func TestJoinStallClockRestarts(t *testing.T) {
	t0 := time.Unix(1000, 0)
	names := []string{"R_0000000001", "W_0000000002"}
	stalled := WatchTable{Source: "4lw", Watches: map[int64][]string{1: {"/q/W_0000000002"}, 2: {"/q/R_0000000001"}}, ChildWatches: -1}
	healthy := WatchTable{Source: "4lw", Watches: map[int64][]string{2: {"/q/R_0000000001"}}, ChildWatches: -1}
	var since map[string]time.Time
	for k, step := range []struct {
		table WatchTable
		at    time.Duration
		want  bool
	}{
		{stalled, 0, false},
		{healthy, time.Second, false},
		{stalled, 2 * time.Second, false},
		{stalled, 3 * time.Second, false},
		{stalled, 4 * time.Second, true},
	} {
		s := Build("/q", kids(names...), Options{})
		since = Join(&s, step.table, since, t0.Add(step.at), JoinOptions{StallGrace: 2 * time.Second})
		if got := s.Nodes[0].StalledOn() != ""; got != step.want {
			t.Errorf("step %d (t+%v): stalled = %t, want %t", k, step.at, got, step.want)
		}
	}
}

// The simulator's exact table (a zero time under each name) skips the grace.
func TestJoinStallExactTable(t *testing.T) {
	s := Build("/q", kids("R_0000000001", "W_0000000002"), Options{})
	since := map[string]time.Time{"R_0000000001": {}, "W_0000000002": {}}
	JoinWatches(&s, WatchTable{Source: "simulator", Watches: map[int64][]string{1: {"/q/W_0000000002"}, 2: {"/q/R_0000000001"}},
		Connected: map[int64]bool{1: true, 2: true}}, since, time.Unix(1000, 0))
	if s.Nodes[0].StalledOn() != "W_0000000002" {
		t.Errorf("an exact table's stall waits for a grace: %+v (alerts %+v)", s.Nodes[0], s.Alerts)
	}
}

// One session owning the holder and a waiter behind it (threads sharing a
// client): the waiter's watch on the holder is the waiter's, not a stall.
func TestJoinSharedSessionHolderNotStalled(t *testing.T) {
	t0 := time.Unix(1000, 0)
	children := []Child{
		{Name: "W_0000000001", EphemeralOwner: 7, Czxid: 101},
		{Name: "W_0000000002", EphemeralOwner: 7, Czxid: 102},
		{Name: "W_0000000003", EphemeralOwner: 3, Czxid: 103},
	}
	table := WatchTable{Source: "4lw", Watches: map[int64][]string{7: {"/q/W_0000000001"}, 3: {"/q/W_0000000002"}}, ChildWatches: -1}
	var since map[string]time.Time
	var s Snapshot
	for _, at := range []time.Duration{0, 5 * time.Second} {
		s = Build("/q", children, Options{})
		since = JoinWatches(&s, table, since, t0.Add(at))
	}
	if s.Nodes[0].StalledOn() != "" || len(s.Alerts) != 0 {
		t.Errorf("a sibling thread's watch made the holder stalled: %+v, alerts %+v", s.Nodes[0], s.Alerts)
	}
	if s.Nodes[1].Edge != EdgeConfirmed {
		t.Errorf("waiter edge %q, want confirmed", s.Nodes[1].Edge)
	}
}

// Scripts read a stall from the JSON snapshot; a healthy node carries
// neither field.
func TestStalledJSON(t *testing.T) {
	healthy, err := json.Marshal(Node{Name: "R_0000000001", Holding: true})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(healthy), "stalled") {
		t.Errorf("a healthy node's JSON mentions a stall: %s", healthy)
	}
	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	stalled, err := json.Marshal(Node{Name: "R_0000000001", Holding: true, Rare: &Rare{StalledOn: "W_0000000002", StalledSince: since}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"stalledOn":"W_0000000002"`, `"stalledSince":"2026-01-02T03:04:05Z"`} {
		if !strings.Contains(string(stalled), want) {
			t.Errorf("JSON %s lacks %s", stalled, want)
		}
	}
}

// A watched path names a node of the lock by the node's folder and name:
// the parent's children, and a semaphore's nodes in their own folders,
// below the parent (Curator's leases/) or beside it (kazoo's sibling).
func TestWatchTarget(t *testing.T) {
	s := Snapshot{Path: "/q", Nodes: []Node{
		{Name: "W_0000000001"},
		{Name: "L_0000000002", Rare: &Rare{Folder: "/q/leases"}},
		{Name: "x__lock__0000000003", Rare: &Rare{Folder: "/q-__lock__"}},
	}}
	q := newQueueView(&s)
	tests := []struct {
		path string
		want watchTarget
	}{
		{"/q", watchTarget{kind: watchParent}},
		{"/q/W_0000000001", watchTarget{kind: watchSibling, name: "W_0000000001"}},
		{"/q/W_0000000009", watchTarget{kind: watchGone, name: "W_0000000009"}},
		{"/q/leases/L_0000000002", watchTarget{kind: watchSibling, name: "L_0000000002"}},
		{"/q/leases/L_0000000009", watchTarget{kind: watchGone, name: "L_0000000009"}},
		{"/q/L_0000000002", watchTarget{kind: watchGone, name: "L_0000000002"}}, // not its folder
		{"/q/leases/W_0000000001", watchTarget{kind: watchGone, name: "W_0000000001"}},
		{"/q-__lock__/x__lock__0000000003", watchTarget{kind: watchSibling, name: "x__lock__0000000003"}},
		{"/q/leases", watchTarget{kind: watchElsewhere}},
		{"/q/locks/L_0000000002", watchTarget{kind: watchElsewhere}},
		{"/qq/W_0000000001", watchTarget{kind: watchElsewhere}},
		{"/other", watchTarget{kind: watchElsewhere}},
	}
	for _, tt := range tests {
		if got := q.target(tt.path); got != tt.want {
			t.Errorf("target(%s) = %+v, want %+v", tt.path, got, tt.want)
		}
	}
}

// A big queue whose sessions watch nothing: the orphan alert counts every
// waiter and names the first MaxAlertNames in queue order, and keeps no
// more of the list than it shows.
func TestOrphanAlertOfABigQueue(t *testing.T) {
	now := time.Unix(1000, 0)
	var cs []Child
	since := map[string]time.Time{}
	connected := map[int64]bool{}
	for i := 1000; i >= 1; i-- {
		name := SeqName("W_", int64(i))
		cs = append(cs, Child{Name: name, EphemeralOwner: int64(i)})
		since[name] = now.Add(-3 * time.Second)
		connected[int64(i)] = true
	}
	s := Build("/q", cs, Options{})
	JoinWatches(&s, WatchTable{Source: "4lw", Watches: map[int64][]string{}, Connected: connected}, since, now)
	var got *Alert
	for i := range s.Alerts {
		if s.Alerts[i].Kind == AlertOrphan {
			got = &s.Alerts[i]
		}
	}
	if got == nil {
		t.Fatalf("no orphan alert in %+v", s.Alerts)
	}
	if !strings.HasPrefix(got.Message, "999 waiters in live sessions watch nothing") {
		t.Errorf("message = %q, want it to count all 999 waiters", got.Message)
	}
	if len(got.Nodes) != 50 || got.Nodes[0] != "W_0000000002" || got.Nodes[49] != "W_0000000051" {
		t.Errorf("named %d nodes, %v … %v; want the first 50 waiters, W_0000000002 … W_0000000051", len(got.Nodes), got.Nodes[0], got.Nodes[len(got.Nodes)-1])
	}
	if cap(got.Nodes) > 50 {
		t.Errorf("the alert's name list has room for %d names: it keeps more of the list than it shows", cap(got.Nodes))
	}
}

func TestBySession(t *testing.T) {
	node := func(owner int64, foreign bool) Node { return Node{owner: owner, Foreign: foreign} }
	tests := []struct {
		desc  string
		nodes []Node
		want  [][]int // sorted by first index
	}{
		{"none", nil, [][]int{}},
		{"one session owns all, in queue order", []Node{node(7, false), node(7, false), node(7, false)}, [][]int{{0, 1, 2}}},
		{"sessions interleaved; persistent and foreign nodes left out",
			[]Node{node(1, false), node(2, false), node(1, false), node(0, false), node(3, false), node(2, true), node(2, false)},
			[][]int{{0, 2}, {1, 6}, {4}}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			got := bySession(tt.nodes)
			slices.SortFunc(got, func(a, b []int) int { return a[0] - b[0] })
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("bySession = %v, want %v", got, tt.want)
			}
		})
	}
}

// Each watch says what it is, not what its node's edge is: a waiter that
// watches its predecessor and another node has one confirmed watch and one
// unexpected. A node whose one watch confirms its rule sends none.
func TestJoinWatchKinds(t *testing.T) {
	now := time.Unix(1000, 0)
	// W1 holds; W2, W3 and W4 wait, each for the one before it.
	names := []string{"W_0000000001", "W_0000000002", "W_0000000003", "W_0000000004"}
	exact := map[string]time.Time{} // no debounce
	for _, n := range names {
		exact[n] = time.Time{}
	}
	tests := []struct {
		desc    string
		source  string
		watches map[int64][]string
		since   map[string]time.Time
		want    map[string][]Watch // by node, in Watching's (sorted) order; the rest nil
	}{
		{desc: "every waiter on its predecessor: nothing sent",
			watches: map[int64][]string{2: {"/q/W_0000000001"}, 3: {"/q/W_0000000002"}, 4: {"/q/W_0000000003"}},
			since:   exact},
		{desc: "its predecessor and a node of another lock: nothing sent",
			watches: map[int64][]string{2: {"/q/W_0000000001", "/other/x"}},
			since:   exact},
		{desc: "its predecessor and another node: one confirmed, one unexpected",
			watches: map[int64][]string{3: {"/q/W_0000000002", "/q/W_0000000001"}},
			since:   exact,
			want:    map[string][]Watch{names[2]: {{To: names[0], Kind: EdgeUnexpected}, {To: names[1], Kind: EdgeConfirmed}}}},
		{desc: "a gone node beside its predecessor",
			watches: map[int64][]string{4: {"/q/W_0000000003", "/q/W_0000000000"}},
			since:   exact,
			want:    map[string][]Watch{names[3]: {{To: "W_0000000000", Kind: EdgeDangling}, {To: names[2], Kind: EdgeConfirmed}}}},
		{desc: "a holder's watch within the stall grace is unexpected",
			watches: map[int64][]string{1: {"/q/W_0000000002"}},
			since:   map[string]time.Time{},
			want:    map[string][]Watch{names[0]: {{To: names[1], Kind: EdgeUnexpected}}}},
		{desc: "a holder's watch past the grace is its stall",
			watches: map[int64][]string{1: {"/q/W_0000000002"}},
			since:   exact,
			want:    map[string][]Watch{names[0]: {{To: names[1], Kind: EdgeStalled}}}},
		{desc: "a suspect watch is unknown while its edge is debounced",
			watches: map[int64][]string{3: {"/q/W_0000000001"}},
			since:   map[string]time.Time{},
			want:    map[string][]Watch{names[2]: {{To: names[0], Kind: EdgeUnknown}}}},
		{desc: "two waiters watch each other: the cycle's watches marked, not the other",
			watches: map[int64][]string{3: {"/q/W_0000000004"}, 4: {"/q/W_0000000003", "/q/W_0000000000"}},
			since:   exact,
			want: map[string][]Watch{
				names[2]: {{To: names[3], Kind: EdgeUnexpected, Cycle: true}},
				names[3]: {{To: "W_0000000000", Kind: EdgeDangling}, {To: names[2], Kind: EdgeConfirmed, Cycle: true}},
			}},
		{desc: "a children watch the simulator lists",
			source:  "simulator",
			watches: map[int64][]string{2: {"/q/W_0000000001", "/q"}},
			since:   exact,
			want:    map[string][]Watch{names[1]: {{Kind: EdgeChildWatch}, {To: names[0], Kind: EdgeConfirmed}}}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			source := tt.source
			if source == "" {
				source = "4lw"
			}
			s := Build("/q", kids(names...), Options{})
			Join(&s, WatchTable{Source: source, Watches: tt.watches, ChildWatches: -1}, maps.Clone(tt.since), now, JoinOptions{})
			for _, n := range s.Nodes {
				if got, want := n.Watches(), tt.want[n.Name]; !slices.Equal(got, want) {
					t.Errorf("%s: Watches = %+v, want %+v", n.Name, got, want)
				}
			}
			// A replay keeps Watching and Edge and derives the kinds
			// again, as the join did (a stall is not recorded).
			replay := s
			replay.Nodes = slices.Clone(s.Nodes)
			for i := range replay.Nodes {
				replay.Nodes[i].SetWatches(nil)
			}
			StampWatches(&replay)
			for i, n := range replay.Nodes {
				want := s.Nodes[i].Watches()
				if n.Holding && n.StalledOn() != "" {
					continue
				}
				if got := n.Watches(); !slices.Equal(got, want) {
					t.Errorf("replayed %s: Watches = %+v, want the join's %+v", n.Name, got, want)
				}
			}
		})
	}
}

// The parent bar says the first of: not live, no lock, children watches
// the server cannot list, a semaphore's standbys, a herd; and counts the
// waiters on the children whatever it says.
func TestStampParent(t *testing.T) {
	herd := func(n int, folder string) []Node {
		out := []Node{{Name: "a", Holding: true}}
		for i := range n {
			nd := Node{Name: fmt.Sprint("w", i), WaitsOn: OnChildren}
			nd.SetFolder(folder)
			out = append(out, nd)
		}
		return out
	}
	live := Snapshot{Path: "/q", Connection: Connected, Exists: true}
	with := func(s Snapshot, f func(*Snapshot)) Snapshot { f(&s); return s }
	tests := []struct {
		desc string
		s    Snapshot
		want Parent
	}{
		{"a queue by predecessor", with(live, func(s *Snapshot) { s.Nodes = []Node{{Name: "a", Holding: true}, {Name: "b", WaitsFor: "a"}} }), Parent{}},
		{"a herd", with(live, func(s *Snapshot) { s.Nodes = herd(3, "") }), Parent{Is: ParentHerd, N: 3, ChildWatchers: 3}},
		{"a semaphore's standbys", with(live, func(s *Snapshot) { s.Nodes = herd(2, "/q/leases") }), Parent{Is: ParentLeases, N: 2, ChildWatchers: 2}},
		{"watches the server cannot list", with(live, func(s *Snapshot) { s.Nodes = herd(2, ""); s.InvisibleChildWatches = 5 }), Parent{Is: ParentInvisible, N: 5, ChildWatchers: 2}},
		{"no lock", with(live, func(s *Snapshot) { s.Exists = false }), Parent{Is: ParentMissing}},
		{"reconnecting", with(live, func(s *Snapshot) { s.Connection = Reconnecting; s.Nodes = herd(1, "") }), Parent{Is: ParentUnknown, ChildWatchers: 1}},
		{"an error", with(live, func(s *Snapshot) { s.Error = "boom" }), Parent{Is: ParentUnknown}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			s := tt.s
			StampParent(&s)
			if s.Parent != tt.want {
				t.Errorf("Parent = %+v, want %+v", s.Parent, tt.want)
			}
		})
	}
}

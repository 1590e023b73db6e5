package lockqueue

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestBuildServerQueue(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 19, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	now := at(100)
	type want struct {
		order    []string
		holders  []string
		waitsFor map[string]string
		blocked  map[string][]string
		alerts   map[string][]string // kind → nodes
		message  map[string]string   // kind → a part of its message
	}
	for _, tc := range []struct {
		name string
		q    ServerQueue
		want want
	}{
		{
			name: "holder then waiters by wait start, not by name or session start",
			q: ServerQueue{Now: now, LongWait: 2 * time.Minute, IdleGrace: 10 * time.Second, Sessions: []ServerSession{
				{Name: "pid-3", Waiting: true, WaitStart: at(50), Since: at(1), BlockedBy: []string{"pid-2", "pid-9"}},
				{Name: "pid-2", Waiting: true, WaitStart: at(40), Since: at(5), BlockedBy: []string{"pid-9"}},
				{Name: "pid-9", Since: at(2)},
			}, Waits: map[string][]string{"pid-3": {"pid-2", "pid-9"}, "pid-2": {"pid-9"}}},
			want: want{
				order: []string{"pid-9", "pid-2", "pid-3"}, holders: []string{"pid-9"},
				waitsFor: map[string]string{"pid-2": "pid-9", "pid-3": "pid-9"},
				blocked:  map[string][]string{"pid-2": {"pid-9"}, "pid-3": {"pid-9", "pid-2"}},
			},
		},
		{
			name: "shared holders both hold, ordered by since",
			q: ServerQueue{Now: now, Sessions: []ServerSession{
				{Name: "pid-5", Mode: Read, Since: at(20)}, {Name: "pid-4", Mode: Read, Since: at(10)},
				{Name: "pid-6", Mode: Exclusive, Waiting: true, WaitStart: at(30), BlockedBy: []string{"pid-5", "pid-4"}},
			}},
			want: want{order: []string{"pid-4", "pid-5", "pid-6"}, holders: []string{"pid-4", "pid-5"},
				waitsFor: map[string]string{"pid-6": "pid-4"}, blocked: map[string][]string{"pid-6": {"pid-4", "pid-5"}}},
		},
		{
			name: "a blocker outside the lock comes after the lock's own",
			q: ServerQueue{Now: now, Sessions: []ServerSession{
				{Name: "pid-1"}, {Name: "pid-2", Waiting: true, WaitStart: at(1), BlockedBy: []string{"pid-0", "pid-1"}},
			}},
			want: want{order: []string{"pid-1", "pid-2"}, holders: []string{"pid-1"},
				waitsFor: map[string]string{"pid-2": "pid-1"}, blocked: map[string][]string{"pid-2": {"pid-1", "pid-0"}}},
		},
		{
			name: "a cycle through another lock: each holds one and waits for the other's",
			q: ServerQueue{Now: now, Sessions: []ServerSession{
				{Name: "pid-1", Since: at(1)},
				{Name: "pid-2", Waiting: true, WaitStart: at(3), BlockedBy: []string{"pid-1"}},
			}, Waits: map[string][]string{"pid-2": {"pid-1"}, "pid-1": {"pid-2"}}},
			want: want{order: []string{"pid-1", "pid-2"}, holders: []string{"pid-1"},
				waitsFor: map[string]string{"pid-2": "pid-1"}, blocked: map[string][]string{"pid-2": {"pid-1"}},
				alerts:  map[string][]string{AlertWaitCycle: {"pid-1", "pid-2"}},
				message: map[string]string{AlertWaitCycle: "pid-1 → pid-2 → pid-1"}},
		},
		{
			name: "a cycle of three, one member in another lock only",
			q: ServerQueue{Now: now, Sessions: []ServerSession{
				{Name: "pid-1"}, {Name: "pid-2", Waiting: true, WaitStart: at(3), BlockedBy: []string{"pid-1"}},
			}, Waits: map[string][]string{"pid-2": {"pid-1"}, "pid-1": {"pid-7"}, "pid-7": {"pid-2"}}},
			want: want{order: []string{"pid-1", "pid-2"}, holders: []string{"pid-1"},
				waitsFor: map[string]string{"pid-2": "pid-1"}, blocked: map[string][]string{"pid-2": {"pid-1"}},
				alerts:  map[string][]string{AlertWaitCycle: {"pid-1", "pid-2"}},
				message: map[string]string{AlertWaitCycle: "pid-1 → pid-7 → pid-2 → pid-1"}},
		},
		{
			name: "a cycle elsewhere that the lock's nodes only wait behind is not this lock's",
			q: ServerQueue{Now: now, Sessions: []ServerSession{
				{Name: "pid-1"}, {Name: "pid-2", Waiting: true, WaitStart: at(3), BlockedBy: []string{"pid-1"}},
			}, Waits: map[string][]string{"pid-2": {"pid-1"}, "pid-1": {"pid-7"}, "pid-7": {"pid-8"}, "pid-8": {"pid-7"}}},
			want: want{order: []string{"pid-1", "pid-2"}, holders: []string{"pid-1"},
				waitsFor: map[string]string{"pid-2": "pid-1"}, blocked: map[string][]string{"pid-2": {"pid-1"}}},
		},
		{
			name: "a holder idle in a transaction past the grace, and a long waiter",
			q: ServerQueue{Now: now, LongWait: 30 * time.Second, IdleGrace: 10 * time.Second, Sessions: []ServerSession{
				{Name: "pid-1", IdleInTxSince: at(80)},
				{Name: "pid-2", Waiting: true, WaitStart: at(60), BlockedBy: []string{"pid-1"}},
				{Name: "pid-3", Waiting: true, WaitStart: at(75), BlockedBy: []string{"pid-1"}},
			}},
			want: want{order: []string{"pid-1", "pid-2", "pid-3"}, holders: []string{"pid-1"},
				waitsFor: map[string]string{"pid-2": "pid-1", "pid-3": "pid-1"},
				blocked:  map[string][]string{"pid-2": {"pid-1"}, "pid-3": {"pid-1"}},
				alerts:   map[string][]string{AlertIdleInTransaction: {"pid-1"}, AlertLongWait: {"pid-2"}},
				message: map[string]string{AlertIdleInTransaction: "2 waiters wait on it",
					AlertLongWait: "1 session has waited longer than 30s: pid-2 (the longest since 19:01:00 UTC)"}},
		},
		{
			name: "idle in a transaction within the grace, waits under the limit, and an idle waiter: no alert",
			q: ServerQueue{Now: now, LongWait: 30 * time.Second, IdleGrace: 10 * time.Second, Sessions: []ServerSession{
				{Name: "pid-1", IdleInTxSince: at(95)},
				{Name: "pid-2", Waiting: true, WaitStart: at(71), IdleInTxSince: at(1), BlockedBy: []string{"pid-1"}},
			}},
			want: want{order: []string{"pid-1", "pid-2"}, holders: []string{"pid-1"},
				waitsFor: map[string]string{"pid-2": "pid-1"}, blocked: map[string][]string{"pid-2": {"pid-1"}}},
		},
		{
			name: "thresholds of zero turn the alerts off",
			q: ServerQueue{Now: now, Sessions: []ServerSession{
				{Name: "pid-1", IdleInTxSince: at(0)},
				{Name: "pid-2", Waiting: true, WaitStart: at(0), BlockedBy: []string{"pid-1"}},
			}},
			want: want{order: []string{"pid-1", "pid-2"}, holders: []string{"pid-1"},
				waitsFor: map[string]string{"pid-2": "pid-1"}, blocked: map[string][]string{"pid-2": {"pid-1"}}},
		},
		{name: "no sessions", q: ServerQueue{Now: now}, want: want{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes, alerts := BuildServerQueue(tc.q)
			var order, holders []string
			for i, n := range nodes {
				order = append(order, n.Name)
				if n.Holding {
					holders = append(holders, n.Name)
				}
				if n.Order() != int64(i+1) || n.Seq != -1 {
					t.Errorf("%s: order %d seq %d, want %d and -1", n.Name, n.Order(), n.Seq, i+1)
				}
				if got := tc.want.waitsFor[n.Name]; n.WaitsFor != got {
					t.Errorf("%s waits for %q, want %q", n.Name, n.WaitsFor, got)
				}
				if n.WaitsFor != "" && n.WaitsForSource() != ByServer {
					t.Errorf("%s: edge vouched for by %q, want the server", n.Name, n.WaitsForSource())
				}
				if got := tc.want.blocked[n.Name]; !slices.Equal(n.BlockedBy(), got) {
					t.Errorf("%s blocked by %v, want %v", n.Name, n.BlockedBy(), got)
				}
			}
			if !slices.Equal(order, tc.want.order) || !slices.Equal(holders, tc.want.holders) {
				t.Errorf("order %v holders %v, want %v and %v", order, holders, tc.want.order, tc.want.holders)
			}
			// The order survives a client's re-sort (websocket deltas).
			resorted := slices.Clone(nodes)
			slices.Reverse(resorted)
			SortNodes(resorted)
			for i := range resorted {
				if resorted[i].Name != nodes[i].Name {
					t.Fatalf("SortNodes reorders the queue: %v", resorted)
				}
			}
			got := map[string][]string{}
			for _, a := range alerts {
				got[a.Kind] = a.Nodes
				if part := tc.want.message[a.Kind]; !strings.Contains(a.Message, part) {
					t.Errorf("%s message %q does not say %q", a.Kind, a.Message, part)
				}
			}
			if len(got) != len(tc.want.alerts) {
				t.Errorf("alerts %v, want %v", alerts, tc.want.alerts)
			}
			for k, v := range tc.want.alerts {
				if !slices.Equal(got[k], v) {
					t.Errorf("alert %s on %v, want %v", k, got[k], v)
				}
			}
		})
	}
}

func TestWaitCycleThrough(t *testing.T) {
	for _, tc := range []struct {
		name  string
		waits map[string][]string
		start string
		want  []string
	}{
		{"none", map[string][]string{"a": {"b"}}, "a", nil},
		{"two", map[string][]string{"a": {"b"}, "b": {"a"}}, "a", []string{"a", "b"}},
		{"the shortest of two", map[string][]string{"a": {"b", "c"}, "b": {"d"}, "d": {"a"}, "c": {"a"}}, "a", []string{"a", "c"}},
		{"a cycle it only reaches", map[string][]string{"a": {"b"}, "b": {"c"}, "c": {"b"}}, "a", nil},
		{"from the middle", map[string][]string{"a": {"b"}, "b": {"c"}, "c": {"a"}}, "b", []string{"b", "c", "a"}},
	} {
		if got := WaitCycleThrough(tc.waits, tc.start); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestSceneWaitCycle(t *testing.T) {
	holds := func(name string) Node { return Node{Name: name, Holding: true} }
	waits := func(name string, on ...string) Node {
		return Node{Name: name, Rare: &Rare{BlockedBy: on, WaitsForSource: ByServer}, WaitsFor: on[0]}
	}
	lock := func(nodes ...Node) Snapshot { return Snapshot{Service: "postgres", Nodes: nodes} }
	for _, tc := range []struct {
		name  string
		locks []Snapshot
		want  []string
	}{
		{"two rows, opposite order", []Snapshot{lock(holds("a"), waits("b", "a")), lock(holds("b"), waits("a", "b"))}, []string{"a", "b"}},
		{"one row seen alone", []Snapshot{lock(holds("a"), waits("b", "a"))}, nil},
		{"after the detector aborted b", []Snapshot{lock(holds("a")), lock(holds("a"))}, nil},
		{"a queue, no cycle", []Snapshot{lock(holds("a"), waits("b", "a"), waits("c", "b", "a")), lock(holds("c"))}, nil},
		{"three rows, three sessions", []Snapshot{lock(holds("a"), waits("c", "a")), lock(holds("b"), waits("a", "b")), lock(holds("c"), waits("b", "c"))}, []string{"a", "b", "c"}},
	} {
		a, ok := SceneWaitCycle(tc.locks)
		if ok != (tc.want != nil) || !slices.Equal(a.Nodes, tc.want) {
			t.Errorf("%s: cycle %v (%v), want %v", tc.name, a.Nodes, ok, tc.want)
			continue
		}
		if !ok {
			continue
		}
		// The scene's alert is the one a single lock holding every session
		// raises: the same words on the lock page and in the classroom.
		var nodes []Node
		graph := map[string][]string{}
		for _, s := range tc.locks {
			for _, n := range s.Nodes {
				if !n.Holding {
					graph[n.Name] = n.BlockedBy()
				}
			}
			nodes = append(nodes, s.Nodes...)
		}
		one, _ := waitCycleAlert(nodes, graph)
		if a.Kind != AlertWaitCycle || a.Message != one.Message {
			t.Errorf("%s: %s %q, want %s %q", tc.name, a.Kind, a.Message, AlertWaitCycle, one.Message)
		}
	}
}

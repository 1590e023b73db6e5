package lockqueue

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

const (
	uuidA = "aaaaaaaa-2fa1-11d2-883f-0016d3cca427"
	uuidB = "bbbbbbbb-2fa1-11d2-883f-0016d3cca427"
	hexA  = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	hexB  = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	// hexDigits is a kazoo lease name (32 hex digits) that also reads as
	// a 22-character prefix and a ZooKeeper sequence.
	hexDigits = "cccccccccccccccccccccc0123456789"
)

// kids makes children owned by sessions 1, 2, 3, ... in the order given, with
// czxid growing in the same order.
func kids(names ...string) []Child {
	out := make([]Child, len(names))
	for i, n := range names {
		out[i] = Child{Name: n, EphemeralOwner: int64(i + 1), Czxid: int64(100 + i)}
	}
	return out
}

type want struct {
	name     string
	mode     Mode
	holding  bool
	waitsFor string
	waitsOn  WaitOn
}

func TestBuildRecipes(t *testing.T) {
	tests := []struct {
		desc     string
		children []Child
		opt      Options
		recipe   Recipe
		want     []want // queue order
		alerts   []string
	}{
		{
			desc:     "seed 000 LOCK1-LOCK5: readers wait for the nearest preceding writer",
			children: kids("R_0000000005", "W_0000000002", "R_0000000001", "W_0000000003", "R_0000000004"),
			recipe:   SeedRW,
			want: []want{
				{"R_0000000001", Read, true, "", ""},
				{"W_0000000002", Write, false, "R_0000000001", ""},
				{"W_0000000003", Write, false, "W_0000000002", ""},
				{"R_0000000004", Read, false, "W_0000000003", ""},
				{"R_0000000005", Read, false, "W_0000000003", ""},
			},
		},
		{
			desc: "Curator read/write: readers all wait for the first writer",
			children: kids("_c_"+uuidA+"-__WRIT__0000000001", "_c_"+uuidB+"-__WRIT__0000000002",
				"_c_"+uuidA+"-__READ__0000000003", "_c_"+uuidB+"-__READ__0000000004"),
			recipe: Curator,
			want: []want{
				{"_c_" + uuidA + "-__WRIT__0000000001", Write, true, "", ""},
				{"_c_" + uuidB + "-__WRIT__0000000002", Write, false, "_c_" + uuidA + "-__WRIT__0000000001", ""},
				{"_c_" + uuidA + "-__READ__0000000003", Read, false, "_c_" + uuidA + "-__WRIT__0000000001", ""},
				{"_c_" + uuidB + "-__READ__0000000004", Read, false, "_c_" + uuidA + "-__WRIT__0000000001", ""},
			},
		},
		{
			desc:     "Curator read/write: readers before any writer all hold",
			children: kids("_c_"+uuidA+"-__READ__0000000001", "_c_"+uuidB+"-__READ__0000000002", "_c_"+uuidA+"-__WRIT__0000000003"),
			recipe:   Curator,
			want: []want{
				{"_c_" + uuidA + "-__READ__0000000001", Read, true, "", ""},
				{"_c_" + uuidB + "-__READ__0000000002", Read, true, "", ""},
				{"_c_" + uuidA + "-__WRIT__0000000003", Write, false, "_c_" + uuidB + "-__READ__0000000002", ""},
			},
		},
		{
			desc:     "Curator mutex orders by the sequence, not the random prefix",
			children: kids("_c_"+uuidA+"-lock-0000000002", "_c_"+uuidB+"-lock-0000000001"),
			recipe:   Curator,
			want: []want{
				{"_c_" + uuidB + "-lock-0000000001", Exclusive, true, "", ""},
				{"_c_" + uuidA + "-lock-0000000002", Exclusive, false, "_c_" + uuidB + "-lock-0000000001", ""},
			},
		},
		{
			desc:     "kazoo Lock alone: exclusive",
			children: kids(hexB+"__lock__0000000001", hexA+"__lock__0000000002"),
			recipe:   Kazoo,
			want: []want{
				{hexB + "__lock__0000000001", Exclusive, true, "", ""},
				{hexA + "__lock__0000000002", Exclusive, false, hexB + "__lock__0000000001", ""},
			},
		},
		{
			desc:     "kazoo ReadLock/WriteLock: __lock__ is exclusive beside __rlock__ too (one mode, whatever its siblings)",
			children: kids(hexA+"__rlock__0000000000", hexB+"__lock__0000000001", hexA+"__rlock__0000000002"),
			recipe:   Kazoo,
			want: []want{
				{hexA + "__rlock__0000000000", Read, true, "", ""},
				{hexB + "__lock__0000000001", Exclusive, false, hexA + "__rlock__0000000000", ""},
				{hexA + "__rlock__0000000002", Read, false, hexB + "__lock__0000000001", ""},
			},
		},
		{
			desc:     "kazoo Semaphore: unsequenced leases, limit from the parent's data",
			children: kids(hexA, hexB, "cccccccccccccccccccccccccccccccc"),
			opt:      Options{ParentData: []byte("2")},
			recipe:   Kazoo,
			want: []want{
				{hexA, Lease, true, "", ""},
				{hexB, Lease, true, "", ""},
				{"cccccccccccccccccccccccccccccccc", Lease, false, "", OnChildren},
			},
		},
		{
			desc:     "go-zookeeper Lock",
			children: kids("_c_"+hexA+"-lock-0000000003", "_c_"+hexB+"-lock-0000000004"),
			recipe:   GoZookeeper,
			want: []want{
				{"_c_" + hexA + "-lock-0000000003", Exclusive, true, "", ""},
				{"_c_" + hexB + "-lock-0000000004", Exclusive, false, "_c_" + hexA + "-lock-0000000003", ""},
			},
		},
		{
			desc:     "ZooKeeper's Java WriteLock recipe",
			children: kids("x-72057594037927937-0000000001", "x-72057594037927936-0000000000"),
			recipe:   ZookeeperRecipe,
			want: []want{
				{"x-72057594037927936-0000000000", Exclusive, true, "", ""},
				{"x-72057594037927937-0000000001", Exclusive, false, "x-72057594037927936-0000000000", ""},
			},
		},
		{
			desc:     "ZooKeeper's Java WriteLock recipe with a negative session id (server id >= 128)",
			children: kids("x--8070450532247928831-0000000006", "x-72057594037927936-0000000005"),
			recipe:   ZookeeperRecipe,
			want: []want{
				{"x-72057594037927936-0000000005", Exclusive, true, "", ""},
				{"x--8070450532247928831-0000000006", Exclusive, false, "x-72057594037927936-0000000005", ""},
			},
		},
		{
			desc:     "ZooKeeper's C recipe: x-<16 hex>-<seq>",
			children: kids("x-0123456789abcdef-0000000002", "x-fedcba9876543210-0000000001"),
			recipe:   ZookeeperRecipe,
			want: []want{
				{"x-fedcba9876543210-0000000001", Exclusive, true, "", ""},
				{"x-0123456789abcdef-0000000002", Exclusive, false, "x-fedcba9876543210-0000000001", ""},
			},
		},
		{
			desc: "ZooKeeper docs shared lock: a reader waits for the nearest lower write-, a writer for the next lower node",
			children: kids("g5-read-0000000005", "g4-write-0000000004", "g3-read-0000000003",
				"g2-write-0000000002", "g1-read-0000000001"),
			recipe: ZookeeperRecipe,
			want: []want{
				{"g1-read-0000000001", Read, true, "", ""},
				{"g2-write-0000000002", Write, false, "g1-read-0000000001", ""},
				{"g3-read-0000000003", Read, false, "g2-write-0000000002", ""},
				{"g4-write-0000000004", Write, false, "g3-read-0000000003", ""},
				{"g5-read-0000000005", Read, false, "g4-write-0000000004", ""},
			},
		},
		{
			desc:     "ZooKeeper docs exclusive lock: <guid>-lock-<seq>",
			children: kids("g2-lock-0000000008", "g1-lock-0000000007"),
			recipe:   ZookeeperRecipe,
			want: []want{
				{"g1-lock-0000000007", Exclusive, true, "", ""},
				{"g2-lock-0000000008", Exclusive, false, "g1-lock-0000000007", ""},
			},
		},
		{
			desc:     "Curator LeaderLatch: the first latch node leads, each other watches its predecessor",
			children: kids("_c_"+uuidA+"-latch-0000000001", "_c_"+uuidB+"-latch-0000000000", "_c_"+uuidA+"-latch-0000000003"),
			recipe:   Curator,
			want: []want{
				{"_c_" + uuidB + "-latch-0000000000", Exclusive, true, "", ""},
				{"_c_" + uuidA + "-latch-0000000001", Exclusive, false, "_c_" + uuidB + "-latch-0000000000", ""},
				{"_c_" + uuidA + "-latch-0000000003", Exclusive, false, "_c_" + uuidA + "-latch-0000000001", ""},
			},
		},
		{
			desc: "Curator semaphore leases with --leases 2: the newest lease beyond the limit is the pending acquirer on a children watch",
			children: kids("_c_"+uuidA+"-lease-0000000003", "_c_"+uuidB+"-lease-0000000001",
				"_c_"+uuidA+"-lease-0000000002"),
			opt:    Options{Leases: 2},
			recipe: Curator,
			want: []want{
				{"_c_" + uuidB + "-lease-0000000001", Lease, true, "", ""},
				{"_c_" + uuidA + "-lease-0000000002", Lease, true, "", ""},
				{"_c_" + uuidA + "-lease-0000000003", Lease, false, "", OnChildren},
			},
		},
		{
			desc:     "Curator semaphore leases, limit unknown: every lease is held",
			children: kids("_c_"+uuidA+"-lease-0000000002", "_c_"+uuidB+"-lease-0000000001"),
			recipe:   Curator,
			want: []want{
				{"_c_" + uuidB + "-lease-0000000001", Lease, true, "", ""},
				{"_c_" + uuidA + "-lease-0000000002", Lease, true, "", ""},
			},
		},
		{
			desc:     "WatchChildren (the naive recipe): waiters still name the blocking node, but wait on the parent's children",
			children: kids("R_0000000003", "W_0000000001", "W_0000000002"),
			opt:      Options{WatchChildren: true},
			recipe:   SeedRW,
			want: []want{
				{"W_0000000001", Write, true, "", ""},
				{"W_0000000002", Write, false, "W_0000000001", OnChildren},
				{"R_0000000003", Read, false, "W_0000000002", OnChildren},
			},
		},
		{
			desc:     "N-holder queue (seed 001): the first N hold, standbys watch the children",
			children: kids("lock0000000001", "lock0000000002", "lock0000000003", "lock0000000004"),
			opt:      Options{Leases: 2},
			recipe:   Generic,
			want: []want{
				{"lock0000000001", Lease, true, "", ""},
				{"lock0000000002", Lease, true, "", ""},
				{"lock0000000003", Lease, false, "", OnChildren},
				{"lock0000000004", Lease, false, "", OnChildren},
			},
		},
		{
			desc:     "foreign children go last and are flagged",
			children: kids("W_0000000001", "README", "R_0000000002"),
			recipe:   SeedRW,
			want: []want{
				{"W_0000000001", Write, true, "", ""},
				{"R_0000000002", Read, false, "W_0000000001", ""},
				{"README", Unknown, false, "", ""},
			},
			alerts: []string{AlertForeign},
		},
		{
			desc:     "mixed conventions: one queue by sequence, alert",
			children: kids("W_0000000001", hexA+"__lock__0000000002"),
			recipe:   Mixed,
			want: []want{
				{"W_0000000001", Write, true, "", ""},
				{hexA + "__lock__0000000002", Exclusive, false, "W_0000000001", ""},
			},
			alerts: []string{AlertMixed},
		},
		{
			desc:     "not a lock at all",
			children: kids("config", "status"),
			recipe:   NoRecipe,
			want: []want{
				{"config", Unknown, false, "", ""},
				{"status", Unknown, false, "", ""},
			},
			alerts: []string{AlertNotALock},
		},
		{
			desc:     "wrapped sequence numbers",
			children: kids("W_2147483647", "W_-2147483648"),
			recipe:   SeedRW,
			want: []want{
				{"W_-2147483648", Write, true, "", ""},
				{"W_2147483647", Write, false, "W_-2147483648", ""},
			},
			alerts: []string{AlertSeqWrap},
		},
		{
			desc:     "cversion near 2^31 warns before names wrap",
			children: kids("W_2147000000"),
			opt:      Options{CVersion: 2147000001},
			recipe:   SeedRW,
			want:     []want{{"W_2147000000", Write, true, "", ""}},
			alerts:   []string{AlertSeqWrap},
		},
		{
			desc:     "empty folder",
			children: nil,
			recipe:   NoRecipe,
		},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			s := Build("/locks/x", tt.children, tt.opt)
			if s.Recipe != tt.recipe {
				t.Errorf("recipe = %q, want %q", s.Recipe, tt.recipe)
			}
			checkQueue(t, s, tt.want, tt.alerts)
		})
	}
}

// checkQueue compares a snapshot's nodes, in queue order, and the kinds of
// its alerts with what a test wants.
func checkQueue(t *testing.T, s Snapshot, wantNodes []want, wantAlerts []string) {
	t.Helper()
	var got []want
	for _, n := range s.Nodes {
		got = append(got, want{n.Name, n.Mode, n.Holding, n.WaitsFor, n.WaitsOn})
	}
	if !reflect.DeepEqual(got, wantNodes) {
		t.Errorf("queue:\n got %+v\nwant %+v", got, wantNodes)
	}
	var kinds []string
	for _, a := range s.Alerts {
		kinds = append(kinds, a.Kind)
	}
	if !reflect.DeepEqual(kinds, wantAlerts) {
		t.Errorf("alerts = %v (%+v), want %v", kinds, s.Alerts, wantAlerts)
	}
}

func TestBuildPersistentAndBinary(t *testing.T) {
	s := Build("/l", []Child{
		{Name: "W_0000000001", EphemeralOwner: 0, Data: []byte{0x12, 0x34, 0xff}},
		{Name: "W_0000000002", EphemeralOwner: 0x1000008971f0017, Data: []byte("host-a 10.0.0.1")},
	}, Options{})
	if s.Alerts[0].Kind != AlertPersistent || !reflect.DeepEqual(s.Alerts[0].Nodes, []string{"W_0000000001"}) {
		t.Errorf("alerts = %+v, want persistent-node on W_0000000001", s.Alerts)
	}
	if n := s.Nodes[0]; !n.DataBinary || n.Data != "EjT/" || n.Session != "0x0" {
		t.Errorf("binary node = %+v", n)
	}
	// Session ids exceed 2^53: they must survive exactly.
	if n := s.Nodes[1]; n.DataBinary || n.Data != "host-a 10.0.0.1" || n.Session != "0x1000008971f0017" {
		t.Errorf("text node = %+v", n)
	}
}

func TestBuildLargeQueue(t *testing.T) {
	var cs []Child
	for i := 10000; i > 0; i-- {
		cs = append(cs, Child{Name: SeqName("W_", int64(i)), EphemeralOwner: int64(i)})
	}
	s := Build("/big", cs, Options{})
	if len(s.Nodes) != 10000 || !s.Nodes[0].Holding || s.Nodes[9999].WaitsFor != "W_0000009999" {
		t.Fatalf("large queue built wrong: %d nodes, first %+v, last %+v", len(s.Nodes), s.Nodes[0], s.Nodes[9999])
	}
}

func TestJoinWatches(t *testing.T) {
	now := time.Unix(1000, 0)
	base := Build("/q", kids("W_0000000001", "W_0000000002", "W_0000000003", "W_0000000004"), Options{})
	tests := []struct {
		desc    string
		table   WatchTable
		since   map[string]time.Time
		edges   []Edge
		alerts  []string
		zombies []string
	}{
		{
			desc:  "every waiter watches its predecessor",
			table: WatchTable{Source: "4lw", Watches: map[int64][]string{2: {"/q/W_0000000001"}, 3: {"/q/W_0000000002"}, 4: {"/q/W_0000000003"}}},
			edges: []Edge{"", EdgeConfirmed, EdgeConfirmed, EdgeConfirmed},
		},
		{
			desc:  "missing is debounced at first sight",
			table: WatchTable{Source: "4lw", Watches: map[int64][]string{2: {"/q/W_0000000001"}, 3: {"/q/W_0000000002"}}},
			edges: []Edge{"", EdgeConfirmed, EdgeConfirmed, EdgeNone},
		},
		{
			desc:   "missing after the debounce, and an orphan alert",
			table:  WatchTable{Source: "4lw", Watches: map[int64][]string{2: {"/q/W_0000000001"}, 3: {"/q/W_0000000002"}}},
			since:  map[string]time.Time{"W_0000000004": now.Add(-3 * time.Second)},
			edges:  []Edge{"", EdgeConfirmed, EdgeConfirmed, EdgeMissing},
			alerts: []string{AlertOrphan},
		},
		{
			desc:  "unexpected and dangling are debounced at first sight (the table may be a poll older than the listing)",
			table: WatchTable{Source: "4lw", Watches: map[int64][]string{2: {"/q/W_0000000001"}, 3: {"/q/W_0000000001"}, 4: {"/q/W_0000000000"}}},
			edges: []Edge{"", EdgeConfirmed, EdgeNone, EdgeNone},
		},
		{
			desc:  "unexpected and dangling watches after the debounce",
			table: WatchTable{Source: "4lw", Watches: map[int64][]string{2: {"/q/W_0000000001"}, 3: {"/q/W_0000000001"}, 4: {"/q/W_0000000000"}}},
			since: map[string]time.Time{"W_0000000003": now.Add(-3 * time.Second), "W_0000000004": now.Add(-3 * time.Second)},
			edges: []Edge{"", EdgeConfirmed, EdgeUnexpected, EdgeDangling},
		},
		{
			desc:  "a fresh watch cycle is not a deadlock yet",
			table: WatchTable{Source: "admin", Watches: map[int64][]string{2: {"/q/W_0000000001"}, 3: {"/q/W_0000000004"}, 4: {"/q/W_0000000003"}}},
			edges: []Edge{"", EdgeConfirmed, EdgeNone, EdgeConfirmed},
		},
		{
			desc:   "a watch cycle that outlives the debounce is a deadlock",
			table:  WatchTable{Source: "admin", Watches: map[int64][]string{2: {"/q/W_0000000001"}, 3: {"/q/W_0000000004"}, 4: {"/q/W_0000000003"}}},
			since:  map[string]time.Time{"W_0000000003": now.Add(-3 * time.Second)},
			edges:  []Edge{"", EdgeConfirmed, EdgeUnexpected, EdgeConfirmed},
			alerts: []string{AlertDeadlock},
		},
		{
			desc: "only some members asked: sessions seen on none are neither zombies nor orphans, their watches unknown",
			table: WatchTable{Source: "4lw", Partial: true, Watches: map[int64][]string{2: {"/q/W_0000000001"}},
				Connected: map[int64]bool{2: true}, Expiry: map[int64]time.Time{1: now.Add(time.Second)}},
			since: map[string]time.Time{"W_0000000003": now.Add(-3 * time.Second), "W_0000000004": now.Add(-3 * time.Second)},
			edges: []Edge{"", EdgeConfirmed, EdgeUnknown, EdgeUnknown},
		},
		{
			desc:    "a session with no connection is a zombie",
			table:   WatchTable{Source: "4lw", Watches: map[int64][]string{2: {"/q/W_0000000001"}, 3: {"/q/W_0000000002"}, 4: {"/q/W_0000000003"}}, Connected: map[int64]bool{2: true, 3: true, 4: true}, Expiry: map[int64]time.Time{1: now.Add(1500 * time.Millisecond)}},
			edges:   []Edge{"", EdgeConfirmed, EdgeConfirmed, EdgeConfirmed},
			alerts:  []string{AlertZombie},
			zombies: []string{"W_0000000001"},
		},
		{
			desc:  "no source: edges unknown, watching nil",
			table: NoWatches,
			edges: []Edge{"", EdgeUnknown, EdgeUnknown, EdgeUnknown},
		},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			s := base
			s.Nodes = append([]Node(nil), base.Nodes...)
			s.Alerts = nil
			JoinWatches(&s, tt.table, tt.since, now)
			var edges []Edge
			var zombies []string
			for _, n := range s.Nodes {
				edges = append(edges, n.Edge)
				if n.Zombie {
					zombies = append(zombies, n.Name)
				}
				if (tt.table.Source == "none" || tt.table.Partial && !tt.table.Connected[n.Owner()]) && n.Watching != nil {
					t.Errorf("%s: watching = %v with no source", n.Name, n.Watching)
				}
			}
			if !reflect.DeepEqual(edges, tt.edges) {
				t.Errorf("edges = %q, want %q", edges, tt.edges)
			}
			var kinds []string
			for _, a := range s.Alerts {
				kinds = append(kinds, a.Kind)
			}
			if !reflect.DeepEqual(kinds, tt.alerts) {
				t.Errorf("alerts = %v, want %v (%+v)", kinds, tt.alerts, s.Alerts)
			}
			if !reflect.DeepEqual(zombies, tt.zombies) {
				t.Errorf("zombies = %v, want %v", zombies, tt.zombies)
			}
			if len(tt.zombies) > 0 && !strings.Contains(s.Alerts[0].Message, "expires in 1.5s") {
				t.Errorf("zombie alert %q does not tell the time left", s.Alerts[0].Message)
			}
		})
	}
}

// One session owning several waiters (threads sharing a client): the server
// lists the session's watches, and each must be given to the right node.
func TestJoinWatchesSharedSession(t *testing.T) {
	now := time.Unix(1000, 0)
	long := now.Add(-3 * time.Second) // past the debounce
	tests := []struct {
		desc     string
		owners   []int64 // of W_1 ... W_5
		watches  map[int64][]string
		edges    []Edge
		watching [][]string
		alerts   []string
	}{
		{
			desc:   "each of the session's waiters watches its predecessor: no cycle through a sibling's watch",
			owners: []int64{1, 7, 3, 7, 7},
			// The old join gave W2 also W4's watch on W3, and W3 watches W2: a false deadlock.
			watches: map[int64][]string{7: {"/q/W_0000000001", "/q/W_0000000003", "/q/W_0000000004"}, 3: {"/q/W_0000000002"}},
			edges:   []Edge{"", EdgeConfirmed, EdgeConfirmed, EdgeConfirmed, EdgeConfirmed},
			watching: [][]string{{}, {"/q/W_0000000001"}, {"/q/W_0000000002"}, {"/q/W_0000000003"},
				{"/q/W_0000000004"}},
		},
		{
			desc:   "one waiter of the session lacks its watch: its siblings' watches do not make it unexpected",
			owners: []int64{1, 7, 3, 7, 7},
			// The old join called W2 unexpected (it watched W3, W4) instead of missing.
			watches:  map[int64][]string{7: {"/q/W_0000000003", "/q/W_0000000004"}, 3: {"/q/W_0000000002"}},
			edges:    []Edge{"", EdgeMissing, EdgeConfirmed, EdgeConfirmed, EdgeConfirmed},
			watching: [][]string{{}, {}, {"/q/W_0000000002"}, {"/q/W_0000000003"}, {"/q/W_0000000004"}},
			alerts:   []string{AlertOrphan},
		},
		{
			desc:     "the one waiter without its target owns the session's other watch",
			owners:   []int64{1, 7, 3, 7, 7},
			watches:  map[int64][]string{7: {"/q/W_0000000003", "/q/W_0000000004", "/q/W_0000000009"}, 3: {"/q/W_0000000002"}},
			edges:    []Edge{"", EdgeDangling, EdgeConfirmed, EdgeConfirmed, EdgeConfirmed},
			watching: [][]string{{}, {"/q/W_0000000009"}, {"/q/W_0000000002"}, {"/q/W_0000000003"}, {"/q/W_0000000004"}},
		},
		{
			desc:   "a real cycle through the one unresolved waiter of a shared session is found",
			owners: []int64{1, 7, 3, 7, 7},
			// W2 → W5 → W4 → W3 → W2.
			watches:  map[int64][]string{7: {"/q/W_0000000003", "/q/W_0000000004", "/q/W_0000000005"}, 3: {"/q/W_0000000002"}},
			edges:    []Edge{"", EdgeUnexpected, EdgeConfirmed, EdgeConfirmed, EdgeConfirmed},
			watching: [][]string{{}, {"/q/W_0000000005"}, {"/q/W_0000000002"}, {"/q/W_0000000003"}, {"/q/W_0000000004"}},
			alerts:   []string{AlertDeadlock},
		},
		{
			desc:   "two waiters without their target and another watch: unknown, and no cycle from it",
			owners: []int64{1, 7, 3, 4, 7},
			// Session 7's watch on W3 is W2's (a cycle with W3) or W5's (no
			// cycle): it must not make a deadlock, nor an orphan.
			watches:  map[int64][]string{7: {"/q/W_0000000003"}, 3: {"/q/W_0000000002"}, 4: {"/q/W_0000000003"}},
			edges:    []Edge{"", EdgeUnknown, EdgeConfirmed, EdgeConfirmed, EdgeUnknown},
			watching: [][]string{{}, {"/q/W_0000000003"}, {"/q/W_0000000002"}, {"/q/W_0000000003"}, {"/q/W_0000000003"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			var children []Child
			since := map[string]time.Time{}
			for i, o := range tt.owners {
				name := SeqName("W_", int64(i+1))
				children = append(children, Child{Name: name, EphemeralOwner: o, Czxid: int64(101 + i)})
				since[name] = long
			}
			s := Build("/q", children, Options{})
			JoinWatches(&s, WatchTable{Source: "4lw", Watches: tt.watches, ChildWatches: -1}, since, now)
			var edges []Edge
			var watching [][]string
			for _, n := range s.Nodes {
				edges = append(edges, n.Edge)
				watching = append(watching, n.Watching)
			}
			if !reflect.DeepEqual(edges, tt.edges) {
				t.Errorf("edges = %q, want %q", edges, tt.edges)
			}
			if !reflect.DeepEqual(watching, tt.watching) {
				t.Errorf("watching = %q, want %q", watching, tt.watching)
			}
			var kinds []string
			for _, a := range s.Alerts {
				kinds = append(kinds, a.Kind)
			}
			if !reflect.DeepEqual(kinds, tt.alerts) {
				t.Errorf("alerts = %v, want %v (%+v)", kinds, tt.alerts, s.Alerts)
			}
		})
	}
}

// A session's own nodes: Curator grants the read lock at once to the thread
// that holds the write lock (its documented downgrade), so that reader holds
// beside its writer, watches nothing and is no orphan; another session's
// reader still waits for the writer. kazoo's ReadLock and the ZooKeeper
// recipe's shared lock have no such rule: their reader of the writer's own
// session waits for it.
func TestBuildOwnSessionReader(t *testing.T) {
	now := time.Unix(1000, 0)
	long := now.Add(-3 * time.Second) // past the debounce
	curW, curR := func(u string, seq int64) string { return SeqName("_c_"+u+"-__WRIT__", seq) }, func(u string, seq int64) string { return SeqName("_c_"+u+"-__READ__", seq) }
	tests := []struct {
		desc     string
		children []Child
		watches  map[int64][]string
		want     []want
		alerts   []string
	}{
		{
			desc: "Curator: the write holder's session takes its read lock: held, no alert",
			children: []Child{
				{Name: curW(uuidA, 1), EphemeralOwner: 7, Czxid: 101},
				{Name: curR(uuidA, 2), EphemeralOwner: 7, Czxid: 102},
			},
			want: []want{{curW(uuidA, 1), Write, true, "", ""}, {curR(uuidA, 2), Read, true, "", ""}},
		},
		{
			desc: "Curator: another session's reader between still waits for the writer, a writer after waits for the downgrade",
			children: []Child{
				{Name: curW(uuidA, 1), EphemeralOwner: 7, Czxid: 101},
				{Name: curR(uuidB, 2), EphemeralOwner: 8, Czxid: 102},
				{Name: curR(uuidA, 3), EphemeralOwner: 7, Czxid: 103},
				{Name: curW(uuidB, 4), EphemeralOwner: 9, Czxid: 104},
			},
			watches: map[int64][]string{8: {"/q/" + curW(uuidA, 1)}, 9: {"/q/" + curR(uuidA, 3)}},
			want: []want{
				{curW(uuidA, 1), Write, true, "", ""},
				{curR(uuidB, 2), Read, false, curW(uuidA, 1), ""},
				{curR(uuidA, 3), Read, true, "", ""},
				{curW(uuidB, 4), Write, false, curR(uuidA, 3), ""},
			},
		},
		{
			desc: "Curator: a reader of a waiting writer's session waits (only a holder downgrades)",
			children: []Child{
				{Name: curW(uuidB, 1), EphemeralOwner: 8, Czxid: 101},
				{Name: curW(uuidA, 2), EphemeralOwner: 7, Czxid: 102},
				{Name: curR(uuidA, 3), EphemeralOwner: 7, Czxid: 103},
			},
			watches: map[int64][]string{7: {"/q/" + curW(uuidB, 1)}},
			want: []want{
				{curW(uuidB, 1), Write, true, "", ""},
				{curW(uuidA, 2), Write, false, curW(uuidB, 1), ""},
				{curR(uuidA, 3), Read, false, curW(uuidB, 1), ""},
			},
		},
		{
			desc: "kazoo: the writer's own ReadLock waits for its WriteLock",
			children: []Child{
				{Name: hexA + "__lock__0000000001", EphemeralOwner: 7, Czxid: 101},
				{Name: hexB + "__rlock__0000000002", EphemeralOwner: 7, Czxid: 102},
			},
			watches: map[int64][]string{7: {"/q/" + hexA + "__lock__0000000001"}},
			want: []want{
				{hexA + "__lock__0000000001", Exclusive, true, "", ""},
				{hexB + "__rlock__0000000002", Read, false, hexA + "__lock__0000000001", ""},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			since := map[string]time.Time{}
			for _, c := range tt.children {
				since[c.Name] = long
			}
			s := Build("/q", tt.children, Options{})
			JoinWatches(&s, WatchTable{Source: "4lw", Watches: tt.watches, ChildWatches: -1}, since, now)
			checkQueue(t, s, tt.want, tt.alerts)
			for _, n := range s.Nodes {
				if n.Holding && n.Edge != EdgeNone {
					t.Errorf("holder %s has edge %q", n.Name, n.Edge)
				}
			}
		})
	}
}

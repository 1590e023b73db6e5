package lockqueue

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
)

func TestSemaphoreFolders(t *testing.T) {
	tests := []struct {
		desc   string
		path   string
		names  []string
		data   string
		recipe Recipe
		want   []string
	}{
		{"Curator: both folders", "/s", []string{"locks", "leases"}, "", Curator, []string{"/s/leases", "/s/locks"}},
		{"Curator: the locks container deleted", "/s", []string{"leases"}, "10.0.0.1", Curator, []string{"/s/leases"}},
		{"Curator at the root", "/", []string{"leases", "locks"}, "", Curator, []string{"/leases", "/locks"}},
		{"a folder with more than Curator's two", "/s", []string{"leases", "locks", "orders"}, "", NoRecipe, nil},
		{"kazoo: leases and the limit", "/k", []string{hexA, hexB}, "2", Kazoo, []string{"/k-__lock__"}},
		{"kazoo: no lease yet", "/k", nil, " 3\n", Kazoo, []string{"/k-__lock__"}},
		{"kazoo leases without a limit in the data", "/k", []string{hexA}, "p0", Kazoo, []string{"/k-__lock__"}},
		{"kazoo leases beside other names", "/k", []string{hexA, "notes"}, "2", NoRecipe, nil},
		{"an empty folder with no data", "/k", nil, "", NoRecipe, nil},
		{"a lock folder whose data is a number", "/k", []string{"_c_" + uuidA + "-lock-0000000001"}, "2", NoRecipe, nil},
		{"a zero limit is no kazoo limit", "/k", nil, "0", NoRecipe, nil},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			r, got := SemaphoreFolders(tc.path, tc.names, []byte(tc.data))
			if r != tc.recipe || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("SemaphoreFolders(%s, %v, %q) = %q %v, want %q %v", tc.path, tc.names, tc.data, r, got, tc.recipe, tc.want)
			}
		})
	}
}

// semKid is one child of a semaphore: its folder, name and session.
func semKid(folder, name string, owner int64, czxid int64) Child {
	return Child{Folder: folder, Name: name, EphemeralOwner: owner, Czxid: czxid}
}

func curatorLease(uuid string, seq int64) string { return SeqName("_c_"+uuid+"-lease-", seq) }
func curatorLock(uuid string, seq int64) string  { return SeqName("_c_"+uuid+"-lock-", seq) }

func TestBuildSemaphore(t *testing.T) {
	const (
		leases = "/s/leases"
		locks  = "/s/locks"
		klock  = "/k-__lock__"
	)
	// Curator, 2 leases, 4 contenders: sessions 1 and 2 hold, 3 holds the
	// internal lock and its lease node is pending, 4 queues behind 3.
	curator := []Child{
		semKid(locks, curatorLock(uuidB, 3), 4, 108),
		semKid(leases, curatorLease(uuidA, 2), 3, 107),
		semKid(leases, curatorLease(uuidA, 0), 1, 101),
		semKid(locks, curatorLock(uuidA, 2), 3, 106),
		semKid(leases, curatorLease(uuidB, 1), 2, 103),
	}
	curatorWant := []want{
		{curatorLease(uuidA, 0), Lease, true, "", ""},
		{curatorLease(uuidB, 1), Lease, true, "", ""},
		{curatorLease(uuidA, 2), Lease, false, "", OnChildren},
		{curatorLock(uuidA, 2), Lease, false, "", OnChildren},
		{curatorLock(uuidB, 3), Lease, false, curatorLock(uuidA, 2), ""},
	}
	pendingPair := [2]string{curatorLock(uuidA, 2), curatorLease(uuidA, 2)}
	allHeld := slices.Clone(curatorWant)
	allHeld[2] = want{curatorLease(uuidA, 2), Lease, true, "", ""}
	tests := []struct {
		desc     string
		children []Child
		opt      Options
		recipe   Recipe
		leases   int
		inferred bool
		want     []want
		alerts   []string
		// partOf: the lock node that is its acquirer's lease node's
		// contender too, and that lease node.
		partOf [2]string
		// waiting: contenders waiting, each once.
		waiting int
	}{
		{desc: "Curator, the limit inferred from the pending acquirer", children: curator,
			recipe: Curator, leases: 2, inferred: true, want: curatorWant, partOf: pendingPair, waiting: 2},
		{desc: "Curator, the limit given and agreeing", children: curator, opt: Options{Leases: 2},
			recipe: Curator, leases: 2, want: curatorWant, partOf: pendingPair, waiting: 2},
		{desc: "Curator, a limit of 3 given: the lock holder's lease fits, it is about to release the lock",
			children: curator, opt: Options{Leases: 3}, recipe: Curator, leases: 3, want: allHeld, partOf: pendingPair, waiting: 1},
		{desc: "Curator, a limit of 1 given: more held than allowed", children: curator, opt: Options{Leases: 1},
			recipe: Curator, leases: 1, want: curatorWant, alerts: []string{AlertOverLeases}, partOf: pendingPair, waiting: 2},
		{desc: "Curator, the lock holder has not made its lease node yet: nothing to infer",
			children: []Child{curator[0], curator[2], curator[3], curator[4]}, recipe: Curator,
			want: []want{
				{curatorLease(uuidA, 0), Lease, true, "", ""},
				{curatorLease(uuidB, 1), Lease, true, "", ""},
				{curatorLock(uuidA, 2), Lease, false, "", OnChildren},
				{curatorLock(uuidB, 3), Lease, false, curatorLock(uuidA, 2), ""},
			}, waiting: 2},
		{desc: "Curator, one lease node, its owner still holding the lock: it holds (any limit is at least 1)",
			children: []Child{semKid(leases, curatorLease(uuidA, 0), 1, 101), semKid(locks, curatorLock(uuidA, 0), 1, 100)},
			recipe:   Curator,
			want: []want{
				{curatorLease(uuidA, 0), Lease, true, "", ""},
				{curatorLock(uuidA, 0), Lease, false, "", OnChildren},
			}, partOf: [2]string{curatorLock(uuidA, 0), curatorLease(uuidA, 0)}},
		{desc: "Curator, holders only", children: []Child{semKid(leases, curatorLease(uuidA, 0), 1, 101)},
			recipe: Curator, want: []want{{curatorLease(uuidA, 0), Lease, true, "", ""}}},
		{desc: "kazoo: leases in the path, the lock queue beside it, the limit in the data",
			children: []Child{
				semKid(klock, hexB+"__lock__0000000003", 4, 110),
				semKid("", hexA, 1, 102),
				semKid(klock, hexA+"__lock__0000000002", 3, 109),
				semKid("", hexB, 2, 104),
			},
			opt:    Options{ParentData: []byte("2")},
			recipe: Kazoo, leases: 2,
			want: []want{
				{hexA, Lease, true, "", ""},
				{hexB, Lease, true, "", ""},
				{hexA + "__lock__0000000002", Lease, false, "", OnChildren},
				{hexB + "__lock__0000000003", Lease, false, hexA + "__lock__0000000002", ""},
			}, waiting: 2},
		{desc: "kazoo: the lock holder has just made its lease node and not yet let the lock go",
			children: []Child{
				semKid("", hexA, 1, 102),
				semKid(klock, hexA+"__lock__0000000002", 1, 101),
				semKid(klock, hexB+"__lock__0000000003", 2, 103),
			},
			opt:    Options{ParentData: []byte("2")},
			recipe: Kazoo, leases: 2,
			want: []want{
				{hexA, Lease, true, "", ""},
				{hexA + "__lock__0000000002", Lease, false, "", OnChildren},
				{hexB + "__lock__0000000003", Lease, false, hexA + "__lock__0000000002", ""},
			}, partOf: [2]string{hexA + "__lock__0000000002", hexA}, waiting: 1},
		// uuid4().hex ends in ten decimal digits about once in 500 leases:
		// still a lease, or the folder turns mixed, the limit in the data
		// goes unused and the lease looks pending.
		{desc: "kazoo: a lease whose name ends in ten decimal digits",
			children: []Child{
				semKid("", hexA, 1, 102),
				semKid("", hexDigits, 2, 104),
				semKid(klock, hexA+"__lock__0000000003", 3, 109),
				semKid(klock, hexB+"__lock__0000000004", 4, 110),
			},
			opt:    Options{ParentData: []byte("2")},
			recipe: Kazoo, leases: 2,
			want: []want{
				{hexA, Lease, true, "", ""},
				{hexDigits, Lease, true, "", ""},
				{hexA + "__lock__0000000003", Lease, false, "", OnChildren},
				{hexB + "__lock__0000000004", Lease, false, hexA + "__lock__0000000003", ""},
			}, waiting: 2},
		{desc: "an empty kazoo semaphore", opt: Options{ParentData: []byte("2")}, recipe: Kazoo, leases: 2},
		{desc: "an empty Curator semaphore", recipe: Curator},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			opt := tc.opt
			opt.Semaphore = tc.recipe
			s := Build("/s", tc.children, opt)
			if s.Recipe != tc.recipe || s.Leases != tc.leases || s.LeasesInferred != tc.inferred {
				t.Errorf("recipe %q leases %d inferred %t, want %q %d %t", s.Recipe, s.Leases, s.LeasesInferred, tc.recipe, tc.leases, tc.inferred)
			}
			checkQueue(t, s, tc.want, tc.alerts)
			for _, n := range s.Nodes {
				if want := map[bool]string{true: tc.partOf[1]}[n.Name == tc.partOf[0]]; n.PartOf() != want {
					t.Errorf("%s part of %q, want %q", n.Name, n.PartOf(), want)
				}
			}
			if got := len(s.Waiters()); got != tc.waiting {
				t.Errorf("%d waiters %v, want %d: one per contender", got, s.Waiters(), tc.waiting)
			}
			// Clients re-sort patched snapshots: the folder comes first.
			shuffled := slices.Clone(s.Nodes)
			rand.New(rand.NewPCG(3, 4)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			SortNodes(shuffled)
			if !reflect.DeepEqual(nodeNames(shuffled), nodeNames(s.Nodes)) {
				t.Errorf("SortNodes %v, want Build's %v", nodeNames(shuffled), nodeNames(s.Nodes))
			}
		})
	}
}

// The server lists a semaphore waiter's getData watch on its predecessor in
// the semaphore's lock folder: that is its rule, confirmed; a watch on
// another lock node there is unexpected, on one gone dangling.
func TestJoinWatchesSemaphoreFolders(t *testing.T) {
	const locks = "/s/locks"
	head, second, third := curatorLock(uuidA, 2), curatorLock(uuidB, 3), curatorLock(uuidA, 4)
	children := []Child{
		semKid("/s/leases", curatorLease(uuidA, 0), 1, 101),
		semKid("/s/leases", curatorLease(uuidB, 1), 2, 103),
		semKid("/s/leases", curatorLease(uuidA, 2), 3, 107),
		semKid(locks, head, 3, 106),
		semKid(locks, second, 4, 108),
		semKid(locks, third, 5, 109),
	}
	table := WatchTable{Source: "4lw", ChildWatches: 1,
		Connected: map[int64]bool{1: true, 2: true, 3: true, 4: true, 5: true},
		Watches: map[int64][]string{
			4: {locks + "/" + head},
			5: {locks + "/" + head}, // not its predecessor
		}}
	s := Build("/s", children, Options{Semaphore: Curator})
	// A zero time for every node skips the debounce.
	since := map[string]time.Time{second: {}, third: {}}
	JoinWatches(&s, table, since, time.Now())
	edges := map[string]Edge{}
	for _, n := range s.Nodes {
		edges[n.Name] = n.Edge
	}
	want := map[string]Edge{
		curatorLease(uuidA, 0): EdgeNone, curatorLease(uuidB, 1): EdgeNone,
		curatorLease(uuidA, 2): EdgeChildWatch, head: EdgeChildWatch,
		second: EdgeConfirmed, third: EdgeUnexpected,
	}
	if !reflect.DeepEqual(edges, want) {
		t.Errorf("edges %v, want %v", edges, want)
	}
	if len(s.Alerts) != 0 {
		t.Errorf("alerts %v, want none", s.Alerts)
	}

	// Two lock waiters watching each other is a deadlock inside the folder.
	table.Watches = map[int64][]string{4: {locks + "/" + third}, 5: {locks + "/" + second}}
	s = Build("/s", children, Options{Semaphore: Curator})
	JoinWatches(&s, table, map[string]time.Time{second: {}, third: {}}, time.Now())
	if !hasKind(s.Alerts, AlertDeadlock) {
		t.Errorf("alerts %v, want a deadlock between %s and %s", s.Alerts, second, third)
	}

	// The same mapping of a watched path to a node serves stalls and
	// dangling watches: a lease holder still watching another lease node
	// (its folder's, not the parent's) is stalled; a watch on a node gone
	// from locks/ dangles.
	gone := curatorLock(uuidB, 1)
	table.Watches = map[int64][]string{1: {"/s/leases/" + curatorLease(uuidB, 1)}, 4: {locks + "/" + head}, 5: {locks + "/" + gone}}
	s = Build("/s", children, Options{Semaphore: Curator})
	JoinWatches(&s, table, map[string]time.Time{curatorLease(uuidA, 0): {}, second: {}, third: {}}, time.Now())
	if n := s.Nodes[0]; n.StalledOn() != curatorLease(uuidB, 1) || !hasKind(s.Alerts, AlertStalled) {
		t.Errorf("holder %s stalled on %q (alerts %v), want stalled on %s", n.Name, n.StalledOn(), s.Alerts, curatorLease(uuidB, 1))
	}
	if n := s.Nodes[5]; n.Name != third || n.Edge != EdgeDangling {
		t.Errorf("%s edge %s, want %s dangling", n.Name, n.Edge, third)
	}
}

func hasKind(alerts []Alert, kind string) bool {
	for _, a := range alerts {
		if a.Kind == kind {
			return true
		}
	}
	return false
}

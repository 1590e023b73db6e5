package zksim

import (
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/simulator"
)

// TestHerdSnapshotEdges: in a herd run every waiter watches the lock's
// children; the snapshot the browser gets reads that as the rule
// (waitsOn "children", edge "children"), not as a buggy "unexpected" watch,
// while waitsFor still names the node that blocks each waiter.
func TestHerdSnapshotEdges(t *testing.T) {
	m := newManager(t, simulator.ManagerConfig{})
	r, err := m.Start(simulator.Spec{Scenario: "lock1-5", Strategy: simulator.Herd})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Seek(5); err != nil {
		t.Fatal(err)
	}
	s := r.State()
	node := func(c string) string { return clientNamed(s, c).Node }
	waitsFor := map[string]string{"LOCK2": node("LOCK1"), "LOCK3": node("LOCK2"), "LOCK4": node("LOCK3"), "LOCK5": node("LOCK3")}
	for _, n := range s.Snapshot.Nodes {
		if n.Holding {
			if n.Name != node("LOCK1") {
				t.Errorf("%s holds", n.Name)
			}
			continue
		}
		owner := strings.TrimSpace(n.Data)
		if n.WaitsOn != "children" || n.Edge != lockqueue.EdgeChildWatch || n.WaitsFor != waitsFor[owner] {
			t.Errorf("%s (%s): waitsOn %q, edge %q, waitsFor %q; want children, %q, %q", n.Name, owner, n.WaitsOn, n.Edge, n.WaitsFor, lockqueue.EdgeChildWatch, waitsFor[owner])
		}
		if !slices.Equal(n.Watching, []string{s.Path}) {
			t.Errorf("%s watches %v, want the lock %s", n.Name, n.Watching, s.Path)
		}
	}
	for _, a := range s.Snapshot.Alerts {
		t.Errorf("alert on a healthy herd queue: %+v", a)
	}
	runAll(t, r)
	// Five acquires, five token reads; herd clients never call exists().
	if st := r.State().Stats; st.Exists != 0 || st.TokenReads != 5 {
		t.Errorf("stats %+v: want exists 0 (the recipe's own calls only), tokenReads 5", st)
	}
}

// TestHerdMissingWatch: a herd waiter cut off (paused) has no children
// watch in the simulator's table, so the snapshot published while its
// session lingers shows its edge as missing.
func TestHerdMissingWatch(t *testing.T) {
	var mu sync.Mutex
	var edges []lockqueue.Edge
	m := newManager(t, simulator.ManagerConfig{Publish: func(s lockqueue.Snapshot) {
		mu.Lock()
		defer mu.Unlock()
		for _, n := range s.Nodes {
			if n.Zombie && n.Data == "B" {
				edges = append(edges, n.Edge)
			}
		}
	}})
	r, err := m.Start(simulator.Spec{Strategy: simulator.Herd, Definition: &simulator.Scenario{Lock: simulator.ExclusiveLock, Steps: []simulator.Action{
		{Client: "A", Action: simulator.ActAdd}, {Client: "B", Action: simulator.ActAdd}, {Client: "C", Action: simulator.ActAdd},
		{Client: "B", Action: simulator.ActPause},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	runAll(t, r)
	mu.Lock()
	defer mu.Unlock()
	if len(edges) == 0 || !slices.Contains(edges, lockqueue.EdgeMissing) {
		t.Errorf("B's edges while cut off: %v, want %q", edges, lockqueue.EdgeMissing)
	}
	// C still waits with its children watch.
	for _, n := range r.State().Snapshot.Nodes {
		if n.Data == "C" && n.Edge != lockqueue.EdgeChildWatch {
			t.Errorf("C: edge %q", n.Edge)
		}
	}
}

// TestTokenAtAcquire: a client reads its fencing token as it acquires, so
// a holder that pauses before it ever wrote comes back with its real token.
// Its first stale write gets through while the new holder has not written
// (fencing on: the resource has seen nothing newer), and the checker says
// so; once the new holder has written, the stale one is fenced.
func TestTokenAtAcquire(t *testing.T) {
	m := newManager(t, simulator.ManagerConfig{})
	on := true
	r, err := m.Start(simulator.Spec{Fencing: &on, Definition: &simulator.Scenario{Lock: simulator.ExclusiveLock, Steps: []simulator.Action{
		{Client: "A", Action: simulator.ActAdd}, {Client: "B", Action: simulator.ActAdd},
		{Client: "A", Action: simulator.ActPause}, // A never wrote
		{Client: "A", Action: simulator.ActWrite}, // accepted: nothing newer seen yet
		{Client: "B", Action: simulator.ActWrite},
		{Client: "A", Action: simulator.ActWrite}, // fenced
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Seek(2); err != nil {
		t.Fatal(err)
	}
	tokA := clientNamed(r.State(), "A").Token
	if tokA == 0 {
		t.Fatalf("A holds but has no token: %+v", clientNamed(r.State(), "A"))
	}
	runAll(t, r)
	rep := r.Report()
	tokB := clientNamed(r.State(), "B").Token
	if tokB <= tokA {
		t.Fatalf("tokens A %#x, B %#x: B's must be newer", tokA, tokB)
	}
	var got []string
	for _, e := range rep.Events {
		if e.Event == simulator.EvWrite || e.Event == simulator.EvFenced {
			got = append(got, e.Client+" "+e.Event)
			if want := map[string]int64{"A": tokA, "B": tokB}[e.Client]; e.Token != want {
				t.Errorf("step %d: %s wrote with token %#x, want %#x", e.Step, e.Client, e.Token, want)
			}
		}
		if e.Event == simulator.EvFenced && !strings.Contains(e.Text, "already seen token") {
			t.Errorf("fenced for the wrong reason: %s", e.Text)
		}
	}
	if want := []string{"A write", "B write", "A fenced"}; !slices.Equal(got, want) {
		t.Errorf("writes %v, want %v", got, want)
	}
	if len(rep.Violations) != 1 {
		t.Fatalf("violations %+v, want the one stale write", rep.Violations)
	}
	v := rep.Violations[0]
	if v.Kind != "unfenced-write" || !slices.Equal(v.Steps, []int{3, 4}) || !strings.Contains(v.Message, "fencing is on, but the resource had not yet seen a token newer than") {
		t.Errorf("violation %+v", v)
	}
	// The recipe's only exists() is B's watch on A; the token reads are
	// counted apart.
	if rep.Stats.Exists != 1 || rep.Stats.TokenReads != 2 {
		t.Errorf("stats %+v: want exists 1, tokenReads 2", rep.Stats)
	}
}

// TestPredecessorGoneBeforeExists: when the node a waiter means to watch is
// deleted between its getChildren and its exists(), exists() answers "no
// node" and leaves a creation watch that will never fire; the client goes
// back to getChildren and watches the node now in front of it. The
// simulator's watch table must not show the dead watch as a live one.
func TestPredecessorGoneBeforeExists(t *testing.T) {
	m, b := newManagerOn(t, Config{}, simulator.ManagerConfig{})
	var w *world
	b.onWorld = func(opened *world) { w = opened }
	var deleted string
	b.beforeExists = func(client, target string) {
		if client == "C" && deleted == "" {
			// B's node goes just before C asks about it.
			if err := b.obs.Delete(target, -1); err != nil {
				t.Errorf("delete %s: %v", target, err)
			}
			deleted = target
		}
	}
	r, err := m.Start(simulator.Spec{Strategy: simulator.Predecessor, Definition: &simulator.Scenario{Lock: simulator.ExclusiveLock, Steps: []simulator.Action{
		{Client: "A", Action: simulator.ActAdd}, {Client: "B", Action: simulator.ActAdd}, {Client: "C", Action: simulator.ActAdd},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Seek(2); err != nil {
		t.Fatal(err)
	}
	if err := r.Seek(3); err != nil {
		t.Fatal(err)
	}
	s := r.State()
	a, c := clientNamed(s, "A"), clientNamed(s, "C")
	if deleted == "" || c.State != simulator.StateWaiting || c.WaitsFor != "A" {
		t.Fatalf("C: %+v (deleted %q)", c, deleted)
	}
	// Seek has returned: no step touches the world now.
	cc := w.byName["C"]
	var creation []string
	for _, aw := range cc.watches {
		if aw.creation {
			creation = append(creation, aw.path)
		}
	}
	if !slices.Equal(creation, []string{deleted}) {
		t.Errorf("C's creation watches %v, want the one on %s", creation, deleted)
	}
	for _, n := range s.Snapshot.Nodes {
		if n.Name != c.Node {
			continue
		}
		if want := []string{s.Path + "/" + a.Node}; !slices.Equal(n.Watching, want) || n.Edge != lockqueue.EdgeConfirmed {
			t.Errorf("C watches %v (edge %q), want only %v: the creation watch on the gone node is not a live one", n.Watching, n.Edge, want)
		}
	}
	// B: getChildren, exists(A). C: getChildren, exists(B) → no node,
	// getChildren again, exists(A).
	if st := s.Stats; st.Exists != 3 || st.GetChildren != 4 || st.Notifications != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestNodePrefixParses: lockqueue does not export its name markers, so the
// simulator spells them; lockqueue must read each back as what it is.
func TestNodePrefixParses(t *testing.T) {
	for _, mode := range []lockqueue.Mode{lockqueue.Read, lockqueue.Write, lockqueue.Exclusive, lockqueue.Lease} {
		name := lockqueue.SeqName(nodePrefix(mode, "C01"), 7)
		nm, ok := lockqueue.ParseName(name)
		want := mode
		if mode == lockqueue.Lease {
			want = lockqueue.Exclusive // Options.Leases makes them leases
		}
		if !ok || nm.Mode != want || nm.Seq != 7 {
			t.Errorf("%s: %+v (ok %v), want mode %s", name, nm, ok, want)
		}
	}
}

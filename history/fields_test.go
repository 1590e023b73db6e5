package history_test

import (
	"slices"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/lockqueue/fieldtest"
)

// The history keeps what each field of lockqueue's one list says it keeps
// (its history tag) and nothing it says it does not: a change of a kept
// field comes back in the lock replayed from the segment files, a change
// of another leaves the replay as it was. A field added to the list
// without saying, or said wrongly, fails here.
func TestRecordsFieldsAsTagged(t *testing.T) {
	at := t0.Add(time.Minute)
	zk := queue("/locks/fields", at, "a", "b", "c")
	other := zk
	other.Service = "redis"
	other.Nodes = append([]lockqueue.Node(nil), zk.Nodes...)
	for i := range other.Nodes {
		other.Nodes[i].Session = ""
		other.Nodes[i].SetClient("token-" + other.Nodes[i].Name)
	}
	for _, f := range fieldtest.NodeFields() {
		t.Run("node "+f.Name, func(t *testing.T) {
			kept := map[string]bool{}
			for name, base := range map[string]lockqueue.Snapshot{"zookeeper": zk, "redis": other} {
				changed := base
				changed.Nodes = append([]lockqueue.Node(nil), base.Nodes...)
				changed.Nodes[1] = f.ChangeNode(base.Nodes[1])
				was, now := f.OfNode(named(replay(t, base), base.Nodes[1].Name)), f.OfNode(named(replay(t, changed), changed.Nodes[1].Name))
				switch {
				case fieldtest.Same(now, f.OfNode(changed.Nodes[1])):
					kept[name] = true
				case !fieldtest.Same(now, was):
					t.Errorf("%s: replayed as %v, neither as recorded (%v) nor as before (%v)", name, now, f.OfNode(changed.Nodes[1]), was)
				}
			}
			checkKept(t, f, kept["zookeeper"] && kept["redis"], kept["zookeeper"] != kept["redis"])
		})
	}
	for _, f := range fieldtest.SnapshotFields() {
		t.Run("snapshot "+f.Name, func(t *testing.T) {
			changed := f.ChangeSnapshot(zk)
			was, now := f.OfSnapshot(replay(t, zk)), f.OfSnapshot(replay(t, changed))
			isKept := fieldtest.Same(now, f.OfSnapshot(changed))
			if !isKept && !fieldtest.Same(now, was) {
				t.Errorf("replayed as %v, neither as recorded (%v) nor as before (%v)", now, f.OfSnapshot(changed), was)
			}
			checkKept(t, f, isKept, false)
		})
	}
}

// checkKept holds f's history tag to what the replay showed: kept (on
// every service), kept on one (as the node's client) or not.
func checkKept(t *testing.T, f fieldtest.Field, kept, oneService bool) {
	t.Helper()
	got := "-"
	switch {
	case kept:
		got = "kept"
	case oneService:
		got = "client"
	}
	if f.History() != got {
		t.Errorf(`%s is tagged history:%q, but the history does as history:%q says`, f.Name, f.History(), got)
	}
}

// replay records snap alone in a new store, then reads the lock back at
// snap's time from the segment files, by another store.
// named is s's node of that name (a replay puts a changed folder or a
// foreign node where the queue's order does), zero when it has none.
func named(s lockqueue.Snapshot, name string) lockqueue.Node {
	if i := slices.IndexFunc(s.Nodes, func(n lockqueue.Node) bool { return n.Name == name }); i >= 0 {
		return s.Nodes[i]
	}
	return lockqueue.Node{}
}

func replay(t *testing.T, snap lockqueue.Snapshot) lockqueue.Snapshot {
	t.Helper()
	dir := t.TempDir()
	s := openStore(t, history.Options{Dir: dir, Now: newClock(t0).Now})
	record(t, s, snap)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Opened later: the gap it records from the first one's close is
	// after snap.
	r := openStore(t, history.Options{Dir: dir, Now: newClock(snap.UpdatedAt.Add(time.Minute)).Now})
	st, err := r.At(history.KeyOf(snap), snap.UpdatedAt)
	if err != nil {
		t.Fatal(err)
	}
	return st.Snapshot()
}

package history_test

import (
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/lockqueue"
)

// A node whose name outlives its hold (a PostgreSQL backend that asks
// again, an etcd session's key made anew) stops holding and holds again
// while still queued: its second wait is counted from when it stopped
// holding, not from when the node first queued, and a replay shows it
// waiting since then.
func TestUnheldWaitsAnew(t *testing.T) {
	s := openStore(t, history.Options{Dir: t.TempDir(), Now: (newClock(t0)).Now})
	const p = "postgres:advisory/42"
	at := func(sec int, holder string, names ...string) lockqueue.Snapshot {
		snap := lockqueue.Snapshot{Service: "postgres", Path: "advisory/42", Connection: lockqueue.Connected, Exists: true,
			UpdatedAt: t0.Add(time.Duration(sec) * time.Second)}
		for _, n := range names {
			snap.Nodes = append(snap.Nodes, lockqueue.Node{Name: n, Holding: n == holder, Ctime: t0, Rare: &lockqueue.Rare{Client: n}})
		}
		return snap
	}
	record(t, s,
		at(0, "", "pid-1", "pid-2"),
		at(1, "pid-1", "pid-1", "pid-2"),
		at(5, "pid-2", "pid-1", "pid-2"), // pid-1 let go and asked again
		at(6, "pid-1", "pid-1", "pid-2"),
	)
	evs, err := s.Events(p, t0, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	var waits []time.Duration
	for _, e := range evs {
		if e.Node == "pid-1" && e.Kind == history.Acquired {
			waits = append(waits, e.Wait())
		}
	}
	if len(waits) != 2 || waits[0] != time.Second || waits[1] != time.Second {
		t.Errorf("pid-1's waits %v, want 1s (from its first sight) and 1s (from when it stopped holding)", waits)
	}
	st, err := s.At(p, t0.Add(5*time.Second+time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range st.Snapshot().Nodes {
		if n.Name == "pid-1" && !n.Ctime.Equal(t0.Add(5*time.Second)) {
			t.Errorf("pid-1 at 5s waits since %v, want since it stopped holding at 5s", n.Ctime)
		}
	}
}

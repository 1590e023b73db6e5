package history_test

import (
	"slices"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/lockqueue"
)

// A key released 700 ms before its TTL ran out is told released on Redis,
// whose reader reads each key's PTTL with every snapshot, to the
// millisecond; on etcd, whose lease's time left is read once a poll in
// whole seconds, a lease due within a second of the key's going may have
// run out already, and is told expired.
func TestLeaseSlack(t *testing.T) {
	for _, tc := range []struct {
		service, path string
		want          history.How
	}{
		{"redis", "orders", history.Released},
		{"etcd", "/locks/orders", history.Expired},
	} {
		s := openStore(t, history.Options{Dir: t.TempDir(), Now: (newClock(t0)).Now})
		snap := func(at time.Duration, leftMs int64, names ...string) lockqueue.Snapshot {
			sn := lockqueue.Snapshot{Service: tc.service, Path: tc.path, Connection: lockqueue.Connected, Exists: true, UpdatedAt: t0.Add(at)}
			for _, n := range names {
				sn.Nodes = append(sn.Nodes, lockqueue.Node{Name: n, Holding: true, Rare: &lockqueue.Rare{Client: n, LeaseTTLMs: 3000, LeaseLeftMs: leftMs}})
			}
			return sn
		}
		record(t, s,
			snap(0, 3000),
			snap(time.Second, 3000, "c1:1"),   // its key taken with a TTL of 3 s
			snap(2*time.Second, 2000, "c1:1"), // due at 4 s
			snap(3300*time.Millisecond, 0),    // gone at 3.3 s, 700 ms early
		)
		evs, err := s.Events(tc.service+":"+tc.path, t0, t0.Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(evs, func(e history.Event) bool { return e.Kind == history.Left })
		if i < 0 || evs[i].How != tc.want {
			t.Errorf("%s: left %v, want %s", tc.service, kinds(evs), tc.want)
		}
	}
}

package history_test

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/lockqueue"
)

// A big queue first shown by a reader that could not read it yet (empty,
// not live, its disconnection alerted), then read whole, then its watch
// table read: what was there before the recorder saw it is restated, as
// in a keyframe, not recorded as one queued, waits-for and watch event per
// node. The changes after it are recorded as ever, and a moment replays
// the whole queue. The same with a cache too small for any segment, which
// every query then reads from the segment files as it goes.
func TestBigQueueFirstSeenIsARestatement(t *testing.T) {
	const p, n = "/locks/runaway", 20_000
	names, at := bigNames(n), afterT0
	unread := lockqueue.Snapshot{Path: p, Connection: lockqueue.Reconnecting, UpdatedAt: at(0), Nodes: []lockqueue.Node{},
		Alerts: []lockqueue.Alert{{Kind: "disconnected", Message: "the reader is not connected"}}}
	// The listing comes before the watch table: no watches known.
	listed := queue(p, at(1000), names...)
	for i := range listed.Nodes {
		listed.Nodes[i].Edge = lockqueue.EdgeNone
	}
	watched := queue(p, at(2000), names...)
	for i := 1; i < n; i++ {
		watched.Nodes[i].Watching = []string{p + "/" + names[i-1]}
	}
	handedOff := queue(p, at(3000), names[1:]...)
	for i := 1; i < n-1; i++ {
		handedOff.Nodes[i].Watching = []string{p + "/" + names[i]}
	}

	for _, tc := range []struct {
		name  string
		cache int64
	}{{"default cache", 0}, {"cache smaller than a segment", 1}} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock(t0)
			s := openStore(t, history.Options{Dir: t.TempDir(), Now: c.Now, SegmentAge: 500 * time.Millisecond, CacheSize: tc.cache})
			flushAt := func(ms int) {
				c.set(at(ms))
				if err := s.Flush(false); err != nil {
					t.Fatal(err)
				}
			}
			record(t, s, unread, listed)
			flushAt(1600) // a new segment, its keyframe the whole queue
			record(t, s, watched)
			flushAt(2600)
			record(t, s, handedOff)

			evs, err := s.Events(p, t0, at(10_000))
			if err != nil {
				t.Fatal(err)
			}
			// The reader back, the lock there, its alert cleared; then the
			// hand-off.
			want := []string{"connection", "exists", "recipe", "alert-cleared",
				"left " + names[0] + " released", "acquired " + names[1], "waits-for " + names[1], "watch " + names[1]}
			if got := kinds(evs); !slices.Equal(got, want) {
				if len(got) > 20 {
					got = append(got[:20], fmt.Sprintf("… %d in all", len(got)))
				}
				t.Errorf("events:\n got %q\nwant %q", got, want)
			}
			for _, tm := range []struct {
				ms      int
				holder  string
				waiters int
				watched bool
			}{{1500, names[0], n - 1, false}, {2500, names[0], n - 1, true}, {3500, names[1], n - 2, true}} {
				st, err := s.At(p, at(tm.ms))
				if err != nil {
					t.Fatal(err)
				}
				snap := st.Snapshot()
				if h := snap.Holders(); !snap.Live() || len(h) != 1 || h[0] != tm.holder || len(snap.Nodes) != tm.waiters+1 {
					t.Errorf("at %dms: live %v, holders %q, %d nodes; want live, %s holding, %d nodes", tm.ms, snap.Live(), h, len(snap.Nodes), tm.holder, tm.waiters+1)
				}
				if last := snap.Nodes[len(snap.Nodes)-1]; (len(last.Watching) == 1) != tm.watched {
					t.Errorf("at %dms: the last waiter watches %q, want a watch: %v", tm.ms, last.Watching, tm.watched)
				}
			}
			stats, err := s.Stats(p, t0, at(10_000))
			if err != nil {
				t.Fatal(err)
			}
			if stats.Acquisitions != 1 || stats.Released != 1 || stats.Wait.Count != 1 ||
				len(stats.Gaps) != 1 || !stats.Gaps[0].From.Equal(at(0)) || !stats.Gaps[0].To.Equal(at(1000)) {
				t.Errorf("figures %+v: want the hand-off's acquisition, release and wait, and the gap before the first read", stats)
			}
			// The strip follows the restated queue, walked as it is read.
			f := history.NewStripFold(history.State{}, t0, at(4000), 4)
			if err := s.Walk(p, t0, at(4000), func(e history.Event) error { f.Add(e); return nil }); err != nil {
				t.Fatal(err)
			}
			strip := f.Done()
			if got := []int{strip.Buckets[0].Waiters, strip.Buckets[1].Waiters, strip.Buckets[2].Waiters}; !slices.Equal(got, []int{0, n - 1, n - 1}) || strip.MaxQueue != n {
				t.Errorf("strip waiters %v (max queue %d), want [0 %d %d] (max %d)", got, strip.MaxQueue, n-1, n-1, n)
			}
		})
	}
}

// Recording a big queue's first live sight and then its watch table's
// first read allocates a few times the queue's own state, not a list of
// every event it restates (three a node at 384 bytes each, and the list's
// regrowth): the events are written and applied as they are found.
func TestBigQueueRecordedAsFound(t *testing.T) {
	const n = 20_000
	unread, listed, watched := bigQueueSightings("/locks/runaway", t0, n)
	s := openStore(t, history.Options{Dir: t.TempDir()})
	record(t, s, unread)
	for _, tc := range []struct {
		name  string
		snap  lockqueue.Snapshot
		bound uint64
	}{
		// About 23 and 3 MB now (the state's nodes, the encoder's frame
		// and strings); 144 and 51 MB when diff built its list.
		{"first live sight", listed, 48 << 20},
		{"watch table's first read", watched, 24 << 20},
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		record(t, s, tc.snap)
		runtime.ReadMemStats(&after)
		if got := after.TotalAlloc - before.TotalAlloc; got > tc.bound {
			t.Errorf("recording the %s of %d nodes allocated %d MB, want at most %d MB", tc.name, n, got>>20, tc.bound>>20)
		}
	}
}

// bigNames is n lock node names in queue order, for the big-queue tests.
func bigNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("lock-%010d", i)
	}
	return names
}

// afterT0 is ms milliseconds after t0.
func afterT0(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

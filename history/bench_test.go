package history_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/lockqueue"
)

// handoffs are snapshots of a busy lock: five contenders, the holder
// leaves and a newcomer queues in each; about nine events a snapshot.
func handoffs(path string, start time.Time, n int) []lockqueue.Snapshot {
	out := make([]lockqueue.Snapshot, n)
	for i := range out {
		names := make([]string, 5)
		for j := range names {
			names[j] = fmt.Sprintf("_c_5b2c3f0e-8d7a-4f1b-9c2e-%012d-lock-%010d", i+j, i+j)
		}
		out[i] = withWho(queue(path, start.Add(time.Duration(i)*time.Millisecond), names...))
	}
	return out
}

const benchCluster = "10.0.0.1:2181,10.0.0.2:2181,10.0.0.3:2181/payments"

// withWho gives s's nodes what the history keeps of who they are, at its
// largest: MaxData bytes of data each (a lock client's identifier is
// usually far shorter), and a cluster of three members and a chroot.
func withWho(s lockqueue.Snapshot) lockqueue.Snapshot {
	s.Cluster = benchCluster
	for i := range s.Nodes {
		n := &s.Nodes[i]
		id := "worker " + n.Name + " on payments-7d9f8c6b5-x2x4q pid 4242 "
		n.Data = strings.Repeat(id, history.MaxData/len(id)+1)[:history.MaxData]
	}
	return s
}

// Recording: events stored per second and bytes per event on disk,
// keyframes included, each node with MaxData bytes of data (withWho)
// (go test -bench Record -run ^$ ./history/).
func BenchmarkRecord(b *testing.B) {
	s := openStore(b, history.Options{Dir: b.TempDir()})
	locks := []string{"/locks/a", "/locks/b", "/locks/c", "/locks/d"}
	snaps := map[string][]lockqueue.Snapshot{}
	for _, l := range locks {
		snaps[l] = handoffs(l, time.Now(), 4096)
	}
	events := 0
	b.ResetTimer()
	start := time.Now()
	for i := 0; b.Loop(); i++ {
		l := locks[i%len(locks)]
		evs, err := s.Record(snaps[l][(i/len(locks))%4096])
		if err != nil {
			b.Fatal(err)
		}
		events += len(evs)
	}
	elapsed := time.Since(start)
	if err := s.Flush(true); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(events)/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(s.Size())/float64(s.Recorded()), "bytes/event")
}

// Replay: a day of one lock at one change a second, each node with
// MaxData bytes of data (withWho), then the queue at random moments, each
// decoding its segment from the keyframe (the cache of decoded segments
// holds 8 of the day's 144).
func BenchmarkAtRandomMomentOfADay(b *testing.B) {
	c := newClock(t0)
	dir := b.TempDir()
	s, err := history.Open(history.Options{Dir: dir, Now: c.Now, SyncEvery: 24 * time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	const day = 86400
	names := []string{}
	for i := range day {
		c.set(t0.Add(time.Duration(i) * time.Second))
		// A queue of one to four, a holder going or a waiter coming each
		// second.
		if len(names) < 4 && (len(names) == 0 || i%3 != 0) {
			names = append(names, fmt.Sprintf("_c_5b2c3f0e-8d7a-4f1b-9c2e-lock-%010d", i))
		} else {
			names = names[1:]
		}
		if _, err := s.Record(withWho(queue("/locks/day", c.Now(), names...))); err != nil {
			b.Fatal(err)
		}
		if i%60 == 0 {
			if err := s.Flush(false); err != nil {
				b.Fatal(err)
			}
		}
	}
	recorded := s.Recorded()
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	c.set(t0.Add(day * time.Second))
	s = openStore(b, history.Options{Dir: dir, Now: c.Now})
	size := s.Size()
	r := rand.New(rand.NewPCG(1, 2))
	for b.Loop() {
		at := t0.Add(time.Duration(r.Int64N(day*1000)) * time.Millisecond)
		if _, err := s.At(history.Key(benchCluster, "/locks/day"), at); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(size)/day, "bytes/change")
	b.ReportMetric(float64(size)/float64(recorded), "bytes/event")
}

// A hand-off in a 10,000-node queue: what one snapshot of a big lock
// costs the recorder (its goroutine, never the reader's).
func BenchmarkRecordBigQueue(b *testing.B) {
	s := openStore(b, history.Options{Dir: b.TempDir()})
	const n = 10_000
	names := make([]string, n+4096)
	for i := range names {
		names[i] = fmt.Sprintf("_c_5b2c3f0e-8d7a-4f1b-9c2e-lock-%010d", i)
	}
	start := time.Now()
	snaps := make([]lockqueue.Snapshot, 64)
	for i := range snaps {
		snaps[i] = queue("/locks/big", start.Add(time.Duration(i)*time.Millisecond), names[i:i+n]...)
	}
	if _, err := s.Record(snaps[0]); err != nil {
		b.Fatal(err)
	}
	i := 1
	for b.Loop() {
		// Hand-offs forward through the prepared snapshots; the first
		// keyframe is outside the loop.
		snap := snaps[i%len(snaps)]
		if i%len(snaps) == 0 {
			b.StopTimer()
			s.Close()
			s = openStore(b, history.Options{Dir: b.TempDir()})
			s.Record(snap)
			b.StartTimer()
			i++
			continue
		}
		if _, err := s.Record(snap); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// bigQueueSightings are a queue of n nodes as a watcher first publishes
// it: not yet read (empty, not live, its disconnection alerted), then
// listed whole with no watches known, then with its watch table read.
func bigQueueSightings(path string, start time.Time, n int) (unread, listed, watched lockqueue.Snapshot) {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("_c_5b2c3f0e-8d7a-4f1b-9c2e-lock-%010d", i)
	}
	unread = lockqueue.Snapshot{Path: path, Connection: lockqueue.Reconnecting, UpdatedAt: start, Nodes: []lockqueue.Node{},
		Alerts: []lockqueue.Alert{{Kind: "disconnected", Message: "the reader is not connected"}}}
	listed = queue(path, start.Add(time.Second), names...)
	watched = queue(path, start.Add(2*time.Second), names...)
	for i := range listed.Nodes {
		listed.Nodes[i].Edge = lockqueue.EdgeNone
		listed.Nodes[i].Data = "worker-" + names[i][len(names[i])-4:]
		watched.Nodes[i].Data = listed.Nodes[i].Data
		if i > 0 {
			watched.Nodes[i].Watching = []string{path + "/" + names[i-1]}
		}
	}
	return unread, listed, watched
}

// A queue of 100,000 first seen live (restated, as a keyframe is) and
// then its watch table's first read (restated too): what recording each
// allocates (B/op) and what the store keeps of the lock after both
// (kept-MB, the live heap it adds).
func BenchmarkRecordFirstSight100k(b *testing.B) {
	const n = 100_000
	unread, listed, watched := bigQueueSightings("/locks/runaway", time.Now(), n)
	for _, bc := range []struct {
		name   string
		before []lockqueue.Snapshot
		snap   lockqueue.Snapshot
	}{
		{"first-sight", []lockqueue.Snapshot{unread}, listed},
		{"first-watches", []lockqueue.Snapshot{unread, listed}, watched},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var kept float64
			for b.Loop() {
				b.StopTimer()
				var ms runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&ms)
				heap := ms.HeapAlloc
				s := openStore(b, history.Options{Dir: b.TempDir()})
				// Flushed after each snapshot, so that what the store
				// keeps does not depend on when its own flush ran: the
				// listing outgrows the segment, and the next one starts
				// with a keyframe of the whole queue.
				for _, snap := range bc.before {
					record(b, s, snap)
					flush(b, s)
				}
				b.StartTimer()
				record(b, s, bc.snap)
				b.StopTimer()
				flush(b, s)
				runtime.GC()
				runtime.ReadMemStats(&ms)
				kept = max(kept, float64(ms.HeapAlloc)-float64(heap))
				runtime.KeepAlive(s)
				s.Close()
				b.StartTimer()
			}
			b.ReportMetric(kept/(1<<20), "kept-MB")
		})
	}
}

// flush writes what s buffered, twice: a flush that starts a new segment
// leaves its keyframe buffered for the next.
func flush(b *testing.B, s *history.Store) {
	for range 2 {
		if err := s.Flush(false); err != nil {
			b.Fatal(err)
		}
	}
}

package history

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// A recorder that cannot keep up never makes the reader wait: what does
// not fit its queue is set aside, the newest per lock, and recorded after
// a gap, so the history ends where the reader did and says what it missed.
func TestRecorderOverflowIsAGapNotAStall(t *testing.T) {
	s, err := Open(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m := NewMetrics()
	r := NewRecorder(s, m, 2, nil)
	start := time.Now()
	snap := func(i int) lockqueue.Snapshot {
		return lockqueue.Snapshot{Path: "/locks/busy", Connection: lockqueue.Connected, Exists: true, UpdatedAt: start.Add(time.Duration(i) * time.Millisecond),
			Nodes: []lockqueue.Node{{Name: fmt.Sprintf("n%d", i), Holding: true}}}
	}
	r.Offer(snap(0))
	// The store is busy (its lock held): the recorder's goroutine is stuck
	// in Record. Every Offer must still return.
	s.mu.Lock()
	for i := 1; i <= 50; i++ {
		r.Offer(snap(i))
	}
	s.mu.Unlock()
	r.Close()

	evs, err := s.Events("/locks/busy", start.Add(-time.Minute), time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	gaps := 0
	for _, e := range evs {
		if e.Kind == Gap && strings.Contains(e.Message, "overflow") {
			gaps++
		}
	}
	if gaps == 0 {
		t.Errorf("no overflow gap in %+v", evs)
	}
	if n := testutil.ToFloat64(m.overflows); n < 40 {
		t.Errorf("%s = %v, want the 47 or more snapshots set aside", MetricOverflows, n)
	}
	st, err := s.At("/locks/busy", time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if h := st.Snapshot().Holders(); len(h) != 1 || h[0] != "n50" {
		t.Errorf("holder after catching up %q, want the last offered, n50", h)
	}
}

// The recorder lingers before it records, but a read through its Source
// never trails the live views: whatever was offered before the hub was given
// it (as serve does) is recorded by the time a read made after it answers.
func TestSourceNeverTrailsTheLiveView(t *testing.T) {
	s, err := Open(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := NewRecorder(s, nil, 0, nil)
	defer r.Close()
	src := r.Source(s)
	start := time.Now()
	queued := func(name string) bool {
		evs, err := src.Events("/locks/seen", start.Add(-time.Minute), time.Now().Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if e.Kind == Queued && e.Node == name {
				return true
			}
		}
		return false
	}
	checked := 0
	sink := func(snap lockqueue.Snapshot) {
		r.Offer(snap)
		if len(snap.Nodes) == 0 {
			return // the lock's first state: recorded as it is, no events
		}
		// A viewer reading the history the moment it sees a node.
		if name := snap.Nodes[len(snap.Nodes)-1].Name; !queued(name) {
			t.Errorf("%s shown live, but the history read then has no queued event for it", name)
		}
		checked++
	}
	nodes := []lockqueue.Node{}
	for i := range 6 {
		sink(lockqueue.Snapshot{Path: "/locks/seen", Connection: lockqueue.Connected, Exists: true,
			UpdatedAt: start.Add(time.Duration(i) * time.Millisecond), Nodes: slices.Clone(nodes)})
		nodes = append(nodes, lockqueue.Node{Name: fmt.Sprintf("n%d", i), Seq: int64(i), Holding: i == 0})
	}
	if checked != 5 {
		t.Errorf("%d snapshots with nodes checked, want 5", checked)
	}
}

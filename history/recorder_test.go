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

// The recorder counts a snapshot's events without listing them all
// (recordCounted): the count and the events the metrics time are Record's,
// for a first sight, a hand-off, a waiter giving up and a change of every
// waiter's edge at once.
func TestRecordCountedIsRecordCounted(t *testing.T) {
	start := time.Now()
	snap := func(sec int, edge lockqueue.Edge, names ...string) lockqueue.Snapshot {
		s := lockqueue.Snapshot{Path: "/locks/counted", Connection: lockqueue.Connected, Exists: true, Recipe: lockqueue.Kazoo,
			UpdatedAt: start.Add(time.Duration(sec) * time.Second)}
		for i, name := range names {
			n := lockqueue.Node{Name: name, Mode: lockqueue.Exclusive, Holding: i == 0, Session: "0x" + name}
			if i > 0 {
				n.WaitsFor, n.Edge = names[i-1], edge
			}
			s.Nodes = append(s.Nodes, n)
		}
		return s
	}
	many := make([]string, 300)
	for i := range many {
		many[i] = fmt.Sprintf("n%03d", i)
	}
	// events and timed: at least so many events listed by Record, and
	// whether some are timed, so that no step compares nothing.
	steps := []struct {
		name   string
		snap   lockqueue.Snapshot
		events int
		timed  bool
	}{
		{"first sight", snap(0, lockqueue.EdgeConfirmed, many...), 0, false},
		{"every edge changes", snap(1, lockqueue.EdgeNone, many...), len(many) - 1, false},
		{"a hand-off", snap(2, lockqueue.EdgeNone, many[1:]...), 2, true},
		{"a waiter gives up", snap(3, lockqueue.EdgeNone, slices.Delete(slices.Clone(many[1:]), 5, 6)...), 1, true},
		{"the queue empties", snap(4, lockqueue.EdgeNone), len(many) - 2, true},
	}
	// One clock for both stores: a first sight's times come from it.
	now := func() time.Time { return start }
	listed, err := Open(Options{Dir: t.TempDir(), Now: now})
	if err != nil {
		t.Fatal(err)
	}
	defer listed.Close()
	counted, err := Open(Options{Dir: t.TempDir(), Now: now})
	if err != nil {
		t.Fatal(err)
	}
	defer counted.Close()
	for _, st := range steps {
		evs, err := listed.Record(st.snap)
		if err != nil {
			t.Fatalf("%s: Record: %v", st.name, err)
		}
		n, timed, err := counted.recordCounted(st.snap)
		if err != nil {
			t.Fatalf("%s: recordCounted: %v", st.name, err)
		}
		if n != len(evs) {
			t.Errorf("%s: %d events counted, Record listed %d", st.name, n, len(evs))
		}
		want := slices.DeleteFunc(slices.Clone(evs), func(e Event) bool { return e.Kind != Acquired && e.Kind != Left })
		same := func(a, b Event) bool { return fmt.Sprint(a) == fmt.Sprint(b) }
		if !slices.EqualFunc(timed, want, same) {
			t.Errorf("%s: %d timed events, want Record's %d acquisitions and departures, the same", st.name, len(timed), len(want))
		}
		if len(evs) < st.events || st.timed != (len(want) > 0) {
			t.Errorf("%s: Record listed %d events (%d timed), want at least %d (timed: %v): the step compares less than it should",
				st.name, len(evs), len(want), st.events, st.timed)
		}
	}
}

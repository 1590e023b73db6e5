package history_test

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/lockqueue"
)

// Following a lock's events from the queue at a window's start with
// State.Apply gives, at every change, the queue At rebuilds from the
// segment's keyframe: across segment boundaries, zombies and alerts, and
// the gap of a store that was closed for a while.
func TestApplyFollowsAt(t *testing.T) {
	dir := t.TempDir()
	c := newClock(t0)
	opts := history.Options{Dir: dir, Now: c.Now, SegmentAge: time.Minute}
	s, err := history.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	const p = "/locks/apply"
	rotate(t, s, c, p, func() {})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	c.set(t0.Add(10 * time.Minute))
	s = openStore(t, opts)
	for i, names := range [][]string{{"z!", "w1", "w2"}, {"z!", "w1", "w2"}, {"w1", "w2"}, {"w2"}, {}} {
		c.set(t0.Add(10*time.Minute + time.Duration(i+1)*time.Second))
		record(t, s, queue(p, c.Now(), names...))
	}

	from := t0.Add(30 * time.Second)
	st, err := s.At(p, from)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := s.Events(p, from.Add(time.Millisecond), c.Now())
	if err != nil {
		t.Fatal(err)
	}
	changes := 0
	for i := 0; i < len(evs); {
		j := i
		for j < len(evs) && evs[j].Time.Equal(evs[i].Time) {
			j++
		}
		before := st.Snapshot()
		st = st.Apply(evs[i:j])
		if got := st.Snapshot(); !reflect.DeepEqual(before, got) {
			changes++
		}
		want, err := s.At(p, evs[i].Time)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := st.Snapshot(), want.Snapshot(); !reflect.DeepEqual(got, want) {
			t.Fatalf("at %s after %v:\nApply %+v\nAt    %+v", evs[i].Time.Format(time.StampMilli), kinds(evs[i:j]), got, want)
		}
		i = j
	}
	if changes < 270+4 {
		t.Errorf("%d changes followed, want every second of the rotation after 30s and the queue after the gap", changes)
	}
}

// A replayed holder carries when the recorder saw it begin to hold, or
// first saw it holding (a bound), so the page times it from the snapshot;
// waiters carry none.
func TestReplayStampsHolds(t *testing.T) {
	c := newClock(t0)
	s := openStore(t, history.Options{Dir: t.TempDir(), Now: c.Now})
	const p = "/locks/held"
	record(t, s, queue(p, c.Now(), "a", "b"))
	c.set(t0.Add(3 * time.Second))
	record(t, s, queue(p, c.Now(), "b"))
	st, err := s.At(p, c.Now())
	if err != nil {
		t.Fatal(err)
	}
	nodes := st.Snapshot().Nodes
	if len(nodes) != 1 || !nodes[0].HeldSince().Equal(t0.Add(3*time.Second)) || nodes[0].HeldBound() != "" {
		t.Fatalf("b after the hand-off: %+v, want it held since %s, seen", nodes, t0.Add(3*time.Second))
	}
	st, err = s.At(p, t0)
	if err != nil {
		t.Fatal(err)
	}
	nodes = st.Snapshot().Nodes
	if !nodes[0].HeldSince().Equal(t0) || !nodes[1].HeldSince().IsZero() {
		t.Errorf("at the start: a held since %s, b (waiting) %s; want %s and zero", nodes[0].HeldSince(), nodes[1].HeldSince(), t0)
	}
	// a held when the history began: at least since then.
	if nodes[0].HeldBound() != lockqueue.HeldAtLeast {
		t.Errorf("at the start: a's clock is bound %q, want %q (first seen holding)", nodes[0].HeldBound(), lockqueue.HeldAtLeast)
	}
}

// A holder first seen holding has the clock at a past moment that the
// live page gave it (lockqueue.CarryHolds): held at most since its
// creation when the service told it, else at least since that sight. The
// history keeps whether a creation time is only a bound (CtimeAtMost), so
// a replay cannot tell a first sight for a creation.
func TestReplayHoldClockIsTheLiveOne(t *testing.T) {
	const p = "/locks/clock"
	made := t0.Add(-time.Minute)
	for _, tc := range []struct {
		name string
		node func(n *lockqueue.Node)
	}{
		{"its creation known", func(n *lockqueue.Node) { n.Ctime = made }},
		{"its creation a bound", func(n *lockqueue.Node) { n.Ctime, n.CtimeAtMost = made, true }},
		{"its creation unknown", func(n *lockqueue.Node) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock(t0)
			s := openStore(t, history.Options{Dir: t.TempDir(), Now: c.Now, SegmentAge: time.Minute})
			live := queue(p, t0, "a", "b")
			tc.node(&live.Nodes[0])
			lockqueue.CarryHolds(nil, &live, t0)
			record(t, s, live)
			c.set(t0.Add(2 * time.Minute)) // past a segment's end: a keyframe restates the queue
			later := live
			later.UpdatedAt = c.Now()
			record(t, s, later)
			if err := s.Flush(false); err != nil {
				t.Fatal(err)
			}
			want := live.Nodes[0]
			for _, at := range []time.Time{t0, c.Now()} {
				st, err := s.At(p, at)
				if err != nil {
					t.Fatal(err)
				}
				got := st.Snapshot().Nodes[0]
				if !got.HeldSince().Equal(want.HeldSince()) || got.HeldBound() != want.HeldBound() || got.CtimeAtMost != (want.CtimeAtMost || want.Ctime.IsZero()) {
					t.Errorf("at %s: held since %s (%q), ctime at most %v; live: %s (%q), ctime %s at most %v",
						at, got.HeldSince(), got.HeldBound(), got.CtimeAtMost, want.HeldSince(), want.HeldBound(), want.Ctime, want.CtimeAtMost)
				}
			}
		})
	}
}

// A session known to watch nothing (a holder's) is one at a past moment
// too, across a keyframe, and one whose watches are unknown stays unknown:
// the page says "nothing" for the first, "unknown" for the second, as live.
func TestReplayKeepsAWatchOfNothing(t *testing.T) {
	const p = "/locks/nothing"
	c := newClock(t0)
	s := openStore(t, history.Options{Dir: t.TempDir(), Now: c.Now, SegmentAge: time.Minute})
	live := queue(p, t0, "a", "b", "c")
	live.Nodes[0].Watching = []string{}
	live.Nodes[1].Watching = []string{p + "/a"}
	record(t, s, live)
	c.set(t0.Add(2 * time.Minute)) // past a segment's end: a keyframe restates the queue
	later := live
	later.Nodes = slices.Clone(live.Nodes)
	later.Nodes[0].Watching = nil // the watch table unread: unknown again
	later.Nodes[2].Watching = []string{}
	later.UpdatedAt = c.Now()
	record(t, s, later)
	if err := s.Flush(false); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		at   time.Time
		want lockqueue.Snapshot
	}{{t0, live}, {c.Now(), later}} {
		st, err := s.At(p, tc.at)
		if err != nil {
			t.Fatal(err)
		}
		for i, n := range st.Snapshot().Nodes {
			w := tc.want.Nodes[i].Watching
			if (n.Watching == nil) != (w == nil) || !slices.Equal(n.Watching, w) {
				t.Errorf("at %s: %s watches %#v, want %#v", tc.at, n.Name, n.Watching, w)
			}
		}
	}
}

// What a reader reads beside the nodes (a semaphore's lease limit, the
// children watches it cannot attribute, the waiters the server counts
// but cannot name) is the live answer's at a past moment too, across a
// keyframe, as it changes.
func TestReplayKeepsTheFiguresBesideTheNodes(t *testing.T) {
	const p = "/locks/beside"
	c := newClock(t0)
	s := openStore(t, history.Options{Dir: t.TempDir(), Now: c.Now, SegmentAge: time.Minute})
	at := func(d time.Duration, leases, invisible, anonymous int) lockqueue.Snapshot {
		c.set(t0.Add(d))
		q := queue(p, c.Now(), "a", "b")
		q.Leases, q.LeasesInferred, q.InvisibleChildWatches = leases, leases > 0, invisible
		if anonymous > 0 {
			q.AnonymousWaiters, q.AnonymousSince = anonymous, t0.Add(time.Second)
		}
		return q
	}
	steps := []lockqueue.Snapshot{
		at(0, 2, 0, 0),
		at(time.Second, 2, 1, 3),
		at(2*time.Minute, 3, 1, 3), // past a segment's end: a keyframe restates the figures
		at(3*time.Minute, 3, 0, 0),
	}
	for _, q := range steps {
		record(t, s, q)
	}
	if err := s.Flush(false); err != nil {
		t.Fatal(err)
	}
	for _, want := range steps {
		st, err := s.At(p, want.UpdatedAt)
		if err != nil {
			t.Fatal(err)
		}
		got := st.Snapshot()
		if got.Leases != want.Leases || got.LeasesInferred != want.LeasesInferred || got.InvisibleChildWatches != want.InvisibleChildWatches ||
			got.AnonymousWaiters != want.AnonymousWaiters || !got.AnonymousSince.Equal(want.AnonymousSince) {
			t.Errorf("at %s: leases %d (inferred %v), invisible %d, anonymous %d since %s; want %d (%v), %d, %d since %s", want.UpdatedAt,
				got.Leases, got.LeasesInferred, got.InvisibleChildWatches, got.AnonymousWaiters, got.AnonymousSince,
				want.Leases, want.LeasesInferred, want.InvisibleChildWatches, want.AnonymousWaiters, want.AnonymousSince)
		}
	}
}

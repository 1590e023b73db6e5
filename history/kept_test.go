package history_test

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/history"
)

// A walk that stops early (the first change of a window, found in a
// keyframe's wake) still leaves its closed segment in memory for the
// queries after it, which then do not read the file: here the file is
// gone, as retention would remove it, and the next walk still reads the
// segment whole. A walk that collected the segment and dropped it at the
// stop read it from the file again at every query.
func TestWalkStoppedEarlyKeepsTheSegment(t *testing.T) {
	const p = "/locks/orders"
	names, at := bigNames(50), afterT0
	c := newClock(t0)
	dir := t.TempDir()
	s := openStore(t, history.Options{Dir: dir, Now: c.Now, SegmentAge: 500 * time.Millisecond})
	for i := range 10 {
		record(t, s, queue(p, at(10*i), names[i:i+20]...))
	}
	c.set(at(600))
	if err := s.Flush(false); err != nil { // closes the first segment
		t.Fatal(err)
	}
	record(t, s, queue(p, at(700), names[10:30]...))
	segs := s.Segments()
	if len(segs) < 2 {
		t.Fatalf("segments %q: want the first closed", segs)
	}
	count := func(s *history.Store) int {
		n := 0
		if err := s.Walk(p, t0, at(500), func(history.Event) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	want := count(s)
	if want < 100 {
		t.Fatalf("the first segment has %d records of the lock, want its ten hand-offs' and keyframe's", want)
	}
	// The same store opened again: nothing of it in memory.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, history.Options{Dir: dir, Now: c.Now, SegmentAge: 500 * time.Millisecond})
	stop := errors.New("stop")
	if err := s.Walk(p, t0, at(500), func(history.Event) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("a walk stopped at its first record returned %v, want the stop", err)
	}
	if err := os.Remove(segs[0]); err != nil {
		t.Fatal(err)
	}
	if got := count(s); got != want {
		t.Errorf("with the first segment's file gone, a walk reads %d records, want the %d it had", got, want)
	}
}

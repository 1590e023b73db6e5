package history

import (
	"testing"
	"time"
)

// A bucket begins where its times do: every time t of the window is in
// the bucket i with Start(i) <= t < Start(i+1), for windows that cut into
// whole milliseconds, that do not, that are shorter than their buckets and
// that have no length; times outside the window are in the end's bucket.
func TestBucketsStartWhereTheirTimesAre(t *testing.T) {
	t0 := time.UnixMilli(1_767_323_045_000)
	for _, tc := range []struct {
		span time.Duration
		n    int
	}{
		{10 * time.Second, 10},
		{10 * time.Second, 3},
		{7 * time.Millisecond, 600},
		{0, 4},
		{time.Hour, 1},
	} {
		b := NewBuckets(t0, t0.Add(tc.span), tc.n)
		from, to := t0.UnixMilli(), t0.Add(tc.span).UnixMilli()
		if got := b.Start(0); got != from {
			t.Errorf("span %s in %d: bucket 0 starts at %d, want the window's start %d", tc.span, tc.n, got-from, 0)
		}
		if got := b.Start(tc.n); got != to+1 {
			t.Errorf("span %s in %d: the last bucket ends at %d, want past the window's end, %d", tc.span, tc.n, got-from, to+1-from)
		}
		for ms := from; ms <= to; ms++ {
			i := b.Of(ms)
			if b.Start(i) > ms || ms >= b.Start(i+1) {
				t.Fatalf("span %s in %d: %d ms is in bucket %d, which spans [%d, %d)", tc.span, tc.n, ms-from, i, b.Start(i)-from, b.Start(i+1)-from)
			}
		}
		if b.Of(from-1) != 0 || b.Of(to+1) != tc.n-1 || b.In(from-1) || b.In(to+1) || !b.In(from) || !b.In(to) {
			t.Errorf("span %s in %d: times outside the window: buckets %d and %d, in %t and %t; want 0 and %d, not in",
				tc.span, tc.n, b.Of(from-1), b.Of(to+1), b.In(from-1), b.In(to+1), tc.n-1)
		}
	}
}

package history

import "time"

// Buckets lays a window [from, to] out in n equal buckets, in
// milliseconds: bucket i holds the times t with (t-from)*n/(to-from)
// rounded down = i, and a time at to is in the last. It is the one layout
// of the time bar's density, of its pages of moments (web) and of the
// strip (StripFold), so a page's bucket is the density's. A window of no
// length is taken as one millisecond long: its one time is in bucket 0.
type Buckets struct {
	from, to, span int64
	n              int
}

// NewBuckets lays [from, to] out in n buckets; n is 1 at least.
func NewBuckets(from, to time.Time, n int) Buckets {
	lo, hi := from.UnixMilli(), to.UnixMilli()
	return Buckets{from: lo, to: hi, span: max(hi-lo, 1), n: n}
}

// In says whether the time t (ms) is in the window.
func (b Buckets) In(t int64) bool { return t >= b.from && t <= b.to }

// Of is the bucket of the time t (ms). A time outside the window is in the
// bucket at the window's end nearest it: a time bar asked about a moment
// past its window's end (a clock ahead) shows the end.
func (b Buckets) Of(t int64) int {
	return int(min(max((t-b.from)*int64(b.n)/b.span, 0), int64(b.n-1)))
}

// Start is where bucket i begins, in ms: the first time whose bucket is i.
// Start(n), where the last bucket ends, is past to, as the last holds it.
func (b Buckets) Start(i int) int64 {
	if i >= b.n {
		return max(b.to, b.from) + 1
	}
	return b.from + (int64(i)*b.span+int64(b.n)-1)/int64(b.n)
}

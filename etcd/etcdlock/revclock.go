package etcdlock

import (
	"slices"
	"time"
)

// maxRevSamples bounds a revClock: past it, every other sample is dropped,
// which loosens the bounds it gives, never makes them wrong.
const maxRevSamples = 1024

// revClock is when the reader first saw each etcd revision: every response
// header tells the store's revision at the moment it answered. etcd keeps
// no creation time of a key, but a key of create revision r was made no
// later than the first answer at a revision at or past r.
type revClock struct {
	revs  []int64 // ascending
	times []time.Time
}

// note records that an answer at revision rev came at t.
func (c *revClock) note(rev int64, t time.Time) {
	if n := len(c.revs); rev <= 0 || (n > 0 && rev <= c.revs[n-1]) {
		return
	}
	if len(c.revs) >= maxRevSamples {
		// Keep the first (the oldest keys' bound) and the last.
		keep := func(i int) bool { return i == 0 || i == len(c.revs)-1 || i%2 == 0 }
		c.revs, c.times = thin(c.revs, keep), thin(c.times, keep)
	}
	c.revs, c.times = append(c.revs, rev), append(c.times, t)
}

func thin[T any](s []T, keep func(int) bool) []T {
	out := s[:0]
	for i, v := range s {
		if keep(i) {
			out = append(out, v)
		}
	}
	return out
}

// by is the earliest time the reader knows revision rev existed: the first
// answer at or past it; late when none is recorded (an answer not noted
// yet).
func (c *revClock) by(rev int64, late time.Time) time.Time {
	i, _ := slices.BinarySearch(c.revs, rev)
	if i == len(c.revs) || c.times[i].After(late) {
		return late
	}
	return c.times[i]
}

package history

import (
	"time"
)

// Strip is a lock's window cut into equal buckets for a chart of it: how
// long the queue was and the longest wait in each, the alerts raised and
// cleared, and the gaps. It is computed from the window's events in one
// pass, not by rebuilding the lock at every bucket.
type Strip struct {
	From    time.Time `json:"from"`
	To      time.Time `json:"to"`
	Buckets []Bucket  `json:"buckets"`
	Alerts  []Mark    `json:"alerts"`
	Gaps    []Span    `json:"gaps"`
	// MaxQueue is the most holders and waiters at once in the window;
	// MaxWait the longest wait in it, in seconds.
	MaxQueue int     `json:"maxQueue"`
	MaxWait  float64 `json:"maxWait"`
}

// Bucket is one stretch of a Strip: bucket i of n holds the times t with
// (t-from)*n/(to-from) rounded down = i, in milliseconds (t = to is in the
// last), as the time bar's density counts them.
type Bucket struct {
	// Holders and Waiters are the queue when it was longest in the bucket
	// (its start counts: the queue carried over from the bucket before).
	Holders int `json:"holders"`
	Waiters int `json:"waiters"`
	// MaxWait is the longest any node had waited, in seconds, while it
	// waited in the bucket.
	MaxWait float64 `json:"maxWait"`
}

// Mark is an alert raised or cleared.
type Mark struct {
	Time    time.Time `json:"time"`
	Alert   string    `json:"alert"`
	Raised  bool      `json:"raised"`
	Message string    `json:"message,omitempty"`
}

// StripOf cuts [from, to] into n buckets (n >= 1); before is the lock at
// from, evs its events in the window in order. Nodes that are neither
// holders nor waiters (foreign children, parts of another contender) are
// not counted.
func StripOf(before State, evs []Event, from, to time.Time, n int) Strip {
	st := Strip{From: from, To: to, Buckets: make([]Bucket, n), Alerts: []Mark{}, Gaps: Gaps(before, evs, to)}
	lo, hi := from.UnixMilli(), to.UnixMilli()
	span := max(hi-lo, 1)
	// end is where bucket i stops, in ms: the first ms of bucket i+1.
	end := func(i int) int64 { return lo + (int64(i+1)*span+int64(n)-1)/int64(n) }
	s := before.Apply(nil)
	queue := func() (holders, waiters int) {
		for _, nd := range s.nodes {
			switch {
			case nd.Foreign || nd.PartOf != "":
			case nd.Holding:
				holders++
			default:
				waiters++
			}
		}
		return holders, waiters
	}
	// note keeps the queue in bucket b when it is the longest seen there.
	note := func(b int) {
		h, w := queue()
		if bk := &st.Buckets[b]; h+w > bk.Holders+bk.Waiters {
			bk.Holders, bk.Waiters = h, w
		}
	}
	// waited keeps, in bucket b, how long the waiters had waited at ms t.
	waited := func(b int, t int64) {
		for _, nd := range s.nodes {
			if !nd.Holding && !nd.Foreign && nd.PartOf == "" && !nd.QueuedAt.IsZero() {
				st.Buckets[b].MaxWait = max(st.Buckets[b].MaxWait, float64(t-nd.QueuedAt.UnixMilli())/1000)
			}
		}
	}
	b := 0
	note(0)
	for k, e := range evs {
		ms := e.Time.UnixMilli()
		if ms < lo || ms > hi {
			continue
		}
		for b < n-1 && ms >= end(b) {
			waited(b, end(b))
			b++
			note(b) // the queue carried over
		}
		// A node that stops waiting ends its wait here.
		if (e.Kind == Acquired || e.Kind == Left) && e.Node != "" {
			if i := s.node(e.Node); i >= 0 {
				if nd := s.nodes[i]; !nd.Holding && !nd.Foreign && nd.PartOf == "" && !nd.QueuedAt.IsZero() && e.Value != "after-gap" {
					st.Buckets[b].MaxWait = max(st.Buckets[b].MaxWait, float64(ms-nd.QueuedAt.UnixMilli())/1000)
				}
			}
		}
		s.apply(e)
		switch e.Kind {
		case AlertRaised, AlertCleared:
			st.Alerts = append(st.Alerts, Mark{Time: e.Time, Alert: e.Alert, Raised: e.Kind == AlertRaised, Message: e.Message})
		}
		// The queue is counted once the moment's changes are all in: a
		// hand-off is not a moment with one node more or less.
		if k+1 == len(evs) || evs[k+1].Time.UnixMilli() != ms {
			note(b)
		}
	}
	for ; b < n; b++ {
		note(b)
		waited(b, min(end(b), hi))
	}
	for _, bk := range st.Buckets {
		st.MaxQueue = max(st.MaxQueue, bk.Holders+bk.Waiters)
		st.MaxWait = max(st.MaxWait, bk.MaxWait)
	}
	return st
}

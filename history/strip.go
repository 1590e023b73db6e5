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
// last), as the time bar's density counts them (Buckets).
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

// StripFold computes a Strip one record at a time, as a walk reads the
// window (Source.Walk): it keeps the lock's state, not the window's
// events. A restatement (Synthetic: a keyframe, or what a first sight
// restated) only sets the state. Nodes that are neither holders nor
// waiters (foreign children, parts of another contender) are not counted.
type StripFold struct {
	st   Strip
	gaps gapFold
	s    State
	n    int
	hi   int64
	bk   Buckets
	b    int
	// moment is the time (ms) of the changes not yet counted in the
	// queue: the queue is counted once a moment's changes are all in, so
	// a hand-off is not a moment with one node more or less.
	moment  int64
	pending bool
	// counted: holders, waiters and oldest (the first queueing among the
	// waiters, ms; waiting says there is one) are the queue's since the
	// last record applied. A window of 120 buckets over a 100,000-node queue counted
	// the whole queue twice at every bucket it passed.
	counted          bool
	holders, waiters int
	oldest           int64
	waiting          bool
}

// NewStripFold starts the strip of [from, to] in n buckets from before,
// the lock at from.
func NewStripFold(before State, from, to time.Time, n int) *StripFold {
	f := &StripFold{
		st:   Strip{From: from, To: to, Buckets: make([]Bucket, n), Alerts: []Mark{}},
		gaps: newGapFold(before), s: before.Apply(nil), n: n,
		hi: to.UnixMilli(), bk: NewBuckets(from, to, n),
	}
	f.note(0)
	return f
}

// end is where bucket i stops, in ms: the first ms of bucket i+1 (past
// hi for the last).
func (f *StripFold) end(i int) int64 {
	return f.bk.Start(i + 1)
}

func (f *StripFold) queue() (holders, waiters int) {
	if f.counted {
		return f.holders, f.waiters
	}
	f.holders, f.waiters, f.waiting = 0, 0, false
	for _, nd := range f.s.nodes {
		switch {
		case nd.Foreign || nd.more().PartOf != "":
		case nd.Holding:
			f.holders++
		default:
			f.waiters++
			if q := nd.QueuedAt; !q.IsZero() && (!f.waiting || q.UnixMilli() < f.oldest) {
				f.oldest, f.waiting = q.UnixMilli(), true
			}
		}
	}
	f.counted = true
	return f.holders, f.waiters
}

// note keeps the queue in bucket b when it is the longest seen there.
func (f *StripFold) note(b int) {
	h, w := f.queue()
	if bk := &f.st.Buckets[b]; h+w > bk.Holders+bk.Waiters {
		bk.Holders, bk.Waiters = h, w
	}
}

// waited keeps, in bucket b, how long the waiters had waited at ms t.
func (f *StripFold) waited(b int, t int64) {
	if f.queue(); f.waiting {
		f.st.Buckets[b].MaxWait = max(f.st.Buckets[b].MaxWait, float64(t-f.oldest)/1000)
	}
}

// Add takes the window's next record.
func (f *StripFold) Add(e Event) {
	if !e.Synthetic {
		f.gaps.add(e)
	}
	ms := e.Time.UnixMilli()
	if !f.bk.In(ms) {
		return
	}
	if f.pending && ms != f.moment {
		f.note(f.b)
		f.pending = false
	}
	for f.b < f.n-1 && ms >= f.end(f.b) {
		f.waited(f.b, f.end(f.b))
		f.b++
		f.note(f.b) // the queue carried over
	}
	if !e.Synthetic {
		// A node that stops waiting ends its wait here.
		if (e.Kind == Acquired || e.Kind == Left) && e.Node != "" {
			if i := f.s.node(e.Node); i >= 0 {
				if nd := f.s.nodes[i]; !nd.Holding && !nd.Foreign && nd.more().PartOf == "" && !nd.QueuedAt.IsZero() && e.Value != "after-gap" {
					f.st.Buckets[f.b].MaxWait = max(f.st.Buckets[f.b].MaxWait, float64(ms-nd.QueuedAt.UnixMilli())/1000)
				}
			}
		}
		switch e.Kind {
		case AlertRaised, AlertCleared:
			f.st.Alerts = append(f.st.Alerts, Mark{Time: e.Time, Alert: e.Alert, Raised: e.Kind == AlertRaised, Message: e.Message})
		}
	}
	if e.Kind == keyframe {
		// A keyframe restates the whole queue: its nodes go where the
		// ones before it were (the fold's own copy). A window over a
		// 100,000-node queue grew a new list of them for each segment it
		// walked.
		f.s.restate(e, true)
	} else {
		f.s.apply(e)
	}
	f.counted = false
	f.moment, f.pending = ms, true
}

// Done is the strip.
func (f *StripFold) Done() Strip {
	if f.pending {
		f.note(f.b)
		f.pending = false
	}
	for ; f.b < f.n; f.b++ {
		f.note(f.b)
		f.waited(f.b, min(f.end(f.b), f.hi))
	}
	st := f.st
	st.Gaps = f.gaps.done(st.To)
	for _, bk := range st.Buckets {
		st.MaxQueue = max(st.MaxQueue, bk.Holders+bk.Waiters)
		st.MaxWait = max(st.MaxWait, bk.MaxWait)
	}
	return st
}

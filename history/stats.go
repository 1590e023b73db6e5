package history

import (
	"cmp"
	"errors"
	"slices"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// Figures summarise durations, in seconds.
type Figures struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
}

// figures computes nearest-rank percentiles.
func figures(ds []time.Duration) Figures {
	if len(ds) == 0 {
		return Figures{}
	}
	slices.Sort(ds)
	rank := func(p float64) float64 {
		i := int(p*float64(len(ds))+0.999999) - 1
		return ds[min(max(i, 0), len(ds)-1)].Seconds()
	}
	return Figures{Count: len(ds), P50: rank(0.50), P95: rank(0.95), P99: rank(0.99), Max: ds[len(ds)-1].Seconds()}
}

// Hour is one clock hour of a window.
type Hour struct {
	Hour         time.Time `json:"hour"`
	Acquisitions int       `json:"acquisitions"`
	MaxWait      float64   `json:"maxWait"`
}

// Span is a stretch of time the history does not know about, and why.
type Span struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	Why  string    `json:"why"`
}

// Stats are a lock's figures over a window.
type Stats struct {
	Service string    `json:"service"`
	Path    string    `json:"path"`
	From    time.Time `json:"from"`
	To      time.Time `json:"to"`
	// Wait: from queueing to holding, of nodes that acquired in the window.
	// Hold: from holding to leaving, of nodes that left in it.
	// Acquisitions (and so Wait, HandoffsPerMin and BusiestHours) leave
	// out a holder first seen holding after a gap (one already holding
	// when zklockviz started, or that acquired while the reader was not
	// connected): when it acquired is not known, maybe before the window.
	Wait           Figures `json:"wait"`
	Hold           Figures `json:"hold"`
	Acquisitions   int     `json:"acquisitions"`
	HandoffsPerMin float64 `json:"handoffsPerMin"`
	Released       int     `json:"released"`
	GaveUp         int     `json:"gaveUp"`
	Expired        int     `json:"expired"`
	// GiveUpWait: how long the waits that gave up had lasted.
	GiveUpWait Figures `json:"giveUpWait"`
	// BusiestHours are the window's clock hours with the most
	// acquisitions, busiest first (at most five).
	BusiestHours []Hour `json:"busiestHours"`
	// Gaps are the stretches the reader did not see.
	Gaps []Span `json:"gaps"`
	// LongestHolds are the window's longest holds that ended in it, and
	// who held (at most five, longest first).
	LongestHolds []Held `json:"longestHolds"`
}

// MeasuredWait is the wait e counts in the figures: an acquisition's,
// unless it came after a gap (when the node queued is not known).
func (e Event) MeasuredWait() (time.Duration, bool) {
	if !e.SeenAcquired() || e.Since.IsZero() {
		return 0, false
	}
	return e.Wait(), true
}

// SeenAcquired reports whether e is an acquisition the reader saw happen:
// not a holder first seen holding after a gap, which acquired at some
// unknown time before.
func (e Event) SeenAcquired() bool {
	return e.Kind == Acquired && e.Value != "after-gap"
}

// MeasuredHold is the hold e counts in the figures: a holder's that left
// while the reader saw it.
func (e Event) MeasuredHold() (time.Duration, bool) {
	if e.Kind != Left || e.Acquired.IsZero() || e.How == Unseen {
		return 0, false
	}
	return e.Hold(), true
}

// statsFold computes a lock's figures one event at a time, as a walk
// reads them: what it keeps is the window's measured durations, not its
// events.
type statsFold struct {
	st                   Stats
	gaps                 gapFold
	waits, holds, gaveUp []time.Duration
	hours                map[time.Time]*Hour
	holders              holdsFold
}

func newStatsFold(lock string, before State, from, to time.Time) *statsFold {
	id := parseKey(lock)
	return &statsFold{
		st:      Stats{Service: id.Service, Path: id.Name, From: from, To: to, BusiestHours: []Hour{}},
		gaps:    newGapFold(before),
		hours:   map[time.Time]*Hour{},
		holders: newHoldsFold(before),
	}
}

// add counts e, the window's next record; a restatement (Synthetic) is no
// change, and only tells who a node belongs to.
func (f *statsFold) add(e Event) {
	f.holders.add(e)
	if e.Synthetic {
		return
	}
	f.gaps.add(e)
	st := &f.st
	switch {
	case e.SeenAcquired():
		st.Acquisitions++
		h := f.hours[e.Time.UTC().Truncate(time.Hour)]
		if h == nil {
			h = &Hour{Hour: e.Time.UTC().Truncate(time.Hour)}
			f.hours[h.Hour] = h
		}
		h.Acquisitions++
		if w, ok := e.MeasuredWait(); ok {
			f.waits = append(f.waits, w)
			h.MaxWait = max(h.MaxWait, w.Seconds())
		}
	case e.Kind == Left && e.How == Released:
		st.Released++
	case e.Kind == Left && e.How == GaveUp:
		st.GaveUp++
		f.gaveUp = append(f.gaveUp, e.Wait())
	case e.Kind == Left && e.How == Expired:
		st.Expired++
	}
	if h, ok := e.MeasuredHold(); ok {
		f.holds = append(f.holds, h)
	}
}

func (f *statsFold) done() Stats {
	st := f.st
	st.Gaps = f.gaps.done(st.To)
	st.Wait, st.Hold, st.GiveUpWait = figures(f.waits), figures(f.holds), figures(f.gaveUp)
	if mins := st.To.Sub(st.From).Minutes(); mins > 0 {
		st.HandoffsPerMin = float64(st.Acquisitions) / mins
	}
	for _, h := range f.hours {
		st.BusiestHours = append(st.BusiestHours, *h)
	}
	slices.SortFunc(st.BusiestHours, func(a, b Hour) int {
		return cmp.Or(cmp.Compare(b.Acquisitions, a.Acquisitions), a.Hour.Compare(b.Hour))
	})
	st.BusiestHours = st.BusiestHours[:min(len(st.BusiestHours), 5)]
	st.LongestHolds = f.holders.done()
	return st
}

// Gaps are the stretches in evs (up to end) when the reader did not see
// the lock: a connection other than connected, a read error, a recorder
// that was not running or overflowed. before is the state when evs start.
func Gaps(before State, evs []Event, end time.Time) []Span {
	f := newGapFold(before)
	for _, e := range evs {
		f.add(e)
	}
	return f.done(end)
}

// gapFold finds the gaps one change at a time.
type gapFold struct {
	out  []Span
	open *Span
}

func newGapFold(before State) gapFold {
	f := gapFold{out: []Span{}}
	if before.Lock != "" && !before.Live() {
		f.open = &Span{From: before.Time, Why: gapWhy(before.Connection, before.Error)}
	}
	return f
}

func (f *gapFold) add(e Event) {
	switch e.Kind {
	case Gap:
		f.out = append(f.out, Span{From: e.Since, To: e.Time, Why: e.Message})
	case Connection:
		live := lockqueue.Connection(e.Connection) == lockqueue.Connected && e.Message == ""
		switch {
		case live && f.open != nil:
			f.open.To = e.Time
			f.out = append(f.out, *f.open)
			f.open = nil
		case !live && f.open == nil:
			f.open = &Span{From: e.Time, Why: gapWhy(lockqueue.Connection(e.Connection), e.Message)}
		}
	}
}

func (f *gapFold) done(end time.Time) []Span {
	out := f.out
	if f.open != nil {
		open := *f.open
		open.To = end
		out = append(out, open)
	}
	slices.SortFunc(out, func(a, b Span) int { return a.From.Compare(b.From) })
	return out
}

func gapWhy(c lockqueue.Connection, msg string) string {
	switch {
	case msg != "":
		return msg
	case c == "":
		return "not recording"
	}
	return "reader " + string(c)
}

// Stats computes the lock's figures over [from, to].
func (s *Store) Stats(lock string, from, to time.Time) (Stats, error) {
	return statsOf(s, lock, from, to)
}

// statsOf computes a lock's figures from what src recorded, as its walk
// reads it.
func statsOf(src Source, lock string, from, to time.Time) (Stats, error) {
	return StatsWalk(src, lock, from, to, nil)
}

// StatsWalk is src's figures of lock over [from, to], computed as its walk
// reads them, calling also (unless nil) with each record of the walk: what
// else a page shows of the window (the figures' histograms) comes from
// the same walk, not another of an hour of a big queue.
func StatsWalk(src Source, lock string, from, to time.Time, also func(Event)) (Stats, error) {
	before, err := src.At(lock, from)
	if err != nil && !errors.Is(err, ErrNoHistory) {
		return Stats{}, err
	}
	f := newStatsFold(lock, before, from, to)
	if err := src.Walk(lock, from, to, func(e Event) error {
		f.add(e)
		if also != nil {
			also(e)
		}
		return nil
	}); err != nil {
		return Stats{}, err
	}
	return f.done(), nil
}

// Life is one node's life as far as the history saw it: when it queued,
// acquired and left, and how; what was still going at the window's end is
// left zero, its wait or hold counted to the end.
type Life struct {
	Node string `json:"node"`
	// Owner is who the node belongs to.
	Owner
	Queued   time.Time `json:"queued"`
	Acquired time.Time `json:"acquired,omitzero"`
	Left     time.Time `json:"left,omitzero"`
	How      How       `json:"how,omitempty"`
	// Wait is from queueing to holding, or to leaving (a give-up), or to
	// the window's end; Hold from holding to leaving or the end. Seconds.
	Wait float64 `json:"wait"`
	Hold float64 `json:"hold"`
	// WaitUnknown: the node already held when it was first seen (at the
	// reader's start, or after a gap), so when it queued and acquired is
	// not known: Wait is 0 and means nothing, and Hold counts from that
	// first sight.
	WaitUnknown bool `json:"waitUnknown,omitempty"`
}

// LivesFold computes the lives of the nodes there at a window's start or
// queued in it, in the order they queued, one record at a time, as a walk
// reads the window (Source.Walk). The records may hold the window's
// restatements too (Synthetic): the nodes a first sight restates were
// there when the history began, and are lives as the nodes there at the
// start are.
type LivesFold struct {
	out []Life
	at  map[string]int // the index in out of each node not gone yet
}

// NewLivesFold starts the lives of a window from before, the lock at its
// start.
func NewLivesFold(before State) *LivesFold {
	f := &LivesFold{out: []Life{}, at: map[string]int{}}
	for _, n := range before.nodes {
		if !n.Foreign && n.more().PartOf == "" {
			f.add(n.Name, n.owner(), n.QueuedAt, n.AcquiredAt)
			f.out[len(f.out)-1].WaitUnknown = n.Holding && n.acquiredUnseen
		}
	}
	return f
}

func (f *LivesFold) add(node string, owner Owner, queued, acquired time.Time) {
	f.at[node] = len(f.out)
	f.out = append(f.out, Life{Node: node, Owner: owner, Queued: queued, Acquired: acquired})
}

// Add takes the window's next record. A restatement tells only of nodes
// the window did not know: those there at a first sight (or at the oldest
// keyframe kept, when the history's start was cut away); of a node it
// knows, the changes told it already.
func (f *LivesFold) Add(e Event) {
	i, known := f.at[e.Node]
	switch {
	case e.Kind == Queued && !known && !e.Foreign && e.PartOf == "":
		f.add(e.Node, e.Owner(), e.Since, time.Time{})
	case e.Kind == Acquired && known && e.Synthetic:
		if l := &f.out[i]; l.Acquired.IsZero() {
			// As State.apply reads it: a keyframe says when the node
			// began to hold, a first sight only that it held then.
			l.Acquired, l.WaitUnknown = cmp.Or(e.Acquired, e.Time), !e.SeenAcquired()
		}
	case e.Synthetic:
	case e.Kind == Acquired && known:
		f.out[i].Acquired, f.out[i].WaitUnknown = e.Time, !e.SeenAcquired()
	case e.Kind == Left && known:
		f.out[i].Left, f.out[i].How = e.Time, e.How
		delete(f.at, e.Node)
	}
}

// Done is the lives, each still going counted to end.
func (f *LivesFold) Done(end time.Time) []Life {
	out := f.out
	for i := range out {
		l := &out[i]
		stop := cmp.Or(l.Left, end)
		switch {
		case l.Acquired.IsZero():
			l.Wait = stop.Sub(l.Queued).Seconds()
		default:
			if !l.WaitUnknown {
				l.Wait = l.Acquired.Sub(l.Queued).Seconds()
			}
			l.Hold = stop.Sub(l.Acquired).Seconds()
		}
	}
	return out
}

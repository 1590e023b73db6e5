package lab

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Report is what a run's checker found.
type Report struct {
	// Overlaps are the times two clients believed they held at once.
	Overlaps []Overlap `json:"overlaps"`
	// Acknowledged counts the writes the resource took; Final is the
	// counter at the end. Each write adds one, so Final below
	// Acknowledged means lost updates: LostUpdates of them.
	Acknowledged int   `json:"acknowledged"`
	Final        int64 `json:"final"`
	LostUpdates  int   `json:"lostUpdates"`
	// Refused counts writes the resource refused for a stale token.
	Refused int `json:"refused"`
	// Acquisitions counts how often any client got the lock; Faults what
	// the nemesis did.
	Acquisitions int            `json:"acquisitions"`
	Faults       map[string]int `json:"faults"`
}

// Overlap is a stretch when two clients each believed they held the lock.
type Overlap struct {
	A, B     string
	From, To time.Time
}

// belief is one stretch a client believed it held.
type belief struct {
	client   string
	from, to time.Time
}

// Check reads a run's events (any order) and the counter at the end.
// A client believes it holds from Acquired until it Released, learnt it
// Lost the lock, was Killed, or the run ended (end); a pause does not end
// a belief: a paused client wakes up still believing, which is the hazard.
func Check(events []Event, final int64, end time.Time) Report {
	events = slices.Clone(events)
	slices.SortStableFunc(events, func(a, b Event) int { return a.At.Compare(b.At) })
	r := Report{Final: final, Faults: map[string]int{}}
	open := map[string]time.Time{}
	var beliefs []belief
	closeBelief := func(client string, at time.Time) {
		if from, ok := open[client]; ok {
			beliefs = append(beliefs, belief{client, from, at})
			delete(open, client)
		}
	}
	for _, e := range events {
		switch e.Kind {
		case Acquired:
			closeBelief(e.Client, e.At)
			open[e.Client] = e.At
			r.Acquisitions++
		case Released, Lost, Killed:
			closeBelief(e.Client, e.At)
		case Wrote:
			r.Acknowledged++
		case Refused:
			r.Refused++
		}
		if e.Kind == Paused || e.Kind == Killed {
			r.Faults[string(e.Kind)]++
		}
	}
	for client := range open {
		closeBelief(client, end)
	}
	r.Overlaps = overlaps(beliefs)
	r.LostUpdates = max(0, r.Acknowledged-int(final))
	return r
}

func overlaps(bs []belief) []Overlap {
	slices.SortFunc(bs, func(a, b belief) int { return a.from.Compare(b.from) })
	var out []Overlap
	for i, a := range bs {
		for _, b := range bs[i+1:] {
			if !b.from.Before(a.to) {
				break
			}
			if a.client != b.client {
				out = append(out, Overlap{A: a.client, B: b.client, From: b.from, To: minTime(a.to, b.to)})
			}
		}
	}
	return out
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// Safe reports whether the data came through: no update lost. Two
// believers are what every lock service allows under pauses; a lost
// update is what fencing is for.
func (r Report) Safe() bool { return r.LostUpdates == 0 }

// maxShown is how many overlaps the words list; the JSON has them all.
const maxShown = 10

// String is the report in words.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d acquisitions; %d writes taken, counter %d", r.Acquisitions, r.Acknowledged, r.Final)
	if r.LostUpdates > 0 {
		fmt.Fprintf(&b, ": %d lost updates", r.LostUpdates)
	}
	fmt.Fprintf(&b, "; %d writes refused for a stale token\n", r.Refused)
	if len(r.Faults) > 0 {
		fmt.Fprintf(&b, "faults: %d paused, %d killed\n", r.Faults[string(Paused)], r.Faults[string(Killed)])
	}
	if len(r.Overlaps) == 0 {
		b.WriteString("never two believers at once\n")
	}
	for i, o := range r.Overlaps {
		if i == maxShown {
			fmt.Fprintf(&b, "and %d more times two believers\n", len(r.Overlaps)-maxShown)
			break
		}
		fmt.Fprintf(&b, "two believers: %s and %s, %s for %v\n", o.A, o.B, o.From.Format("15:04:05.000"), o.To.Sub(o.From).Round(time.Millisecond))
	}
	return b.String()
}

package lab

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Report is what a run's checker found.
type Report struct {
	// Overlaps are the times two clients believed they held at once, a
	// pair at a time; Stretches the same by belief: each client's stretch
	// of belief during which others held too (a paused holder's, mostly).
	Overlaps  []Overlap `json:"overlaps"`
	Stretches []Stretch `json:"stretches"`
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

// Stretch is one client's belief during which others believed too.
type Stretch struct {
	Client   string    `json:"client"`
	Token    int64     `json:"token"`
	From     time.Time `json:"from"`
	To       time.Time `json:"to"`
	Others   []string  `json:"others"`
	Overlaps int       `json:"overlaps"`
}

// belief is one stretch a client believed it held.
type belief struct {
	client   string
	token    int64
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
	open := map[string]belief{}
	var beliefs []belief
	closeBelief := func(client string, at time.Time) {
		if b, ok := open[client]; ok {
			b.to = at
			beliefs = append(beliefs, b)
			delete(open, client)
		}
	}
	for _, e := range events {
		switch e.Kind {
		case Acquired:
			closeBelief(e.Client, e.At)
			open[e.Client] = belief{client: e.Client, token: e.Token, from: e.At}
			r.Acquisitions++
		case Released, Lost, Killed:
			closeBelief(e.Client, e.At)
		case Wrote:
			r.Acknowledged++
		case Refused:
			r.Refused++
		}
		if isFault(e.Kind) {
			r.Faults[string(e.Kind)]++
		}
	}
	for client := range open {
		closeBelief(client, end)
	}
	r.Overlaps, r.Stretches = overlaps(beliefs)
	r.LostUpdates = max(0, r.Acknowledged-int(final))
	return r
}

func overlaps(bs []belief) ([]Overlap, []Stretch) {
	slices.SortFunc(bs, func(a, b belief) int { return a.from.Compare(b.from) })
	var out []Overlap
	stretches := map[int]*Stretch{}
	note := func(i int, other string) {
		st := stretches[i]
		if st == nil {
			b := bs[i]
			st = &Stretch{Client: b.client, Token: b.token, From: b.from, To: b.to}
			stretches[i] = st
		}
		st.Overlaps++
		if !slices.Contains(st.Others, other) {
			st.Others = append(st.Others, other)
		}
	}
	for i, a := range bs {
		for j := i + 1; j < len(bs); j++ {
			b := bs[j]
			if !b.from.Before(a.to) {
				break
			}
			if a.client != b.client {
				out = append(out, Overlap{A: a.client, B: b.client, From: b.from, To: minTime(a.to, b.to)})
				// The longer belief is the one the others fell inside.
				if b.to.Sub(b.from) > a.to.Sub(a.from) {
					note(j, a.client)
				} else {
					note(i, b.client)
				}
			}
		}
	}
	var st []Stretch
	for _, i := range slices.Sorted(maps.Keys(stretches)) {
		st = append(st, *stretches[i])
	}
	return out, st
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

// maxShown is how many stretches or mismatches the words list; the JSON
// has them all.
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
		fmt.Fprintf(&b, "faults: %s\n", faultWords(r.Faults))
	}
	if len(r.Overlaps) == 0 {
		b.WriteString("never two believers at once\n")
	}
	for i, s := range r.Stretches {
		if i == maxShown {
			fmt.Fprintf(&b, "and %d more stretches of two believers\n", len(r.Stretches)-maxShown)
			break
		}
		fmt.Fprintf(&b, "two believers: %s (token %d) believed it held from %s for %v while %s held too (%d times)\n",
			s.Client, s.Token, s.From.Format("15:04:05.000"), s.To.Sub(s.From).Round(time.Millisecond), strings.Join(s.Others, " and "), s.Overlaps)
	}
	return b.String()
}

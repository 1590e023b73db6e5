package lab

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Invariant is what a search looks for a break of.
type Invariant string

// The invariants a search knows.
const (
	// MutualExclusion breaks when two clients believe they hold at once.
	MutualExclusion Invariant = "mutual-exclusion"
	// NoLostUpdate breaks when the counter ends below the writes it took.
	NoLostUpdate Invariant = "no-lost-update"
)

// Invariants are those a search knows, for messages.
var Invariants = []Invariant{MutualExclusion, NoLostUpdate}

// ParseInvariant reads an invariant's name.
func ParseInvariant(s string) (Invariant, error) {
	if inv := Invariant(s); slices.Contains(Invariants, inv) {
		return inv, nil
	}
	return "", fmt.Errorf("unknown invariant %q: want %s or %s", s, MutualExclusion, NoLostUpdate)
}

// Broken says whether a run's report breaks the invariant.
func (inv Invariant) Broken(r Report) bool {
	switch inv {
	case MutualExclusion:
		return len(r.Overlaps) > 0
	case NoLostUpdate:
		return r.LostUpdates > 0
	}
	return false
}

// Trial is one real run of a schedule for a duration (the lab on a
// service). The schedule is never nil: no faults is an empty one.
type Trial func(ctx context.Context, schedule []Fault, d time.Duration) (Report, []Event, error)

// Search is a search for a seed whose run breaks an invariant, then the
// shrinking of its schedule.
type Search struct {
	Invariant Invariant
	// Runs bounds the seeds tried (1, 2, …, Runs).
	Runs int
	// Duration is a search run's length; a shrunk schedule runs until its
	// last fault is over and Tail more, at most Duration.
	Duration, Tail time.Duration
	// Plan is a seed's schedule.
	Plan func(seed uint64) []Fault
	// Tries is how many runs of a smaller schedule must all break for it
	// to be taken: a run on real servers is not repeatable to the
	// millisecond, and a shrink taken on one lucky run would not replay.
	Tries int
	// MinPause is the shortest a pause is shortened to: the service's
	// session, lease or TTL (a shorter pause cannot outlive it).
	MinPause time.Duration
	// ShrinkRuns bounds the runs shrinking may take; 0 is no bound.
	ShrinkRuns int
	Run        Trial
	// Progress, when set, is told each step, a line each.
	Progress func(string)
}

// Found is a break a search found, and what shrinking made of it.
type Found struct {
	Seed uint64
	// Original is the seed's schedule; Schedule the smallest found that
	// still broke the invariant Tries times out of Tries.
	Original, Schedule []Fault
	// Duration is what Schedule was run for; Report and Events are of its
	// last run that broke.
	Duration time.Duration
	Report   Report
	Events   []Event
	// Runs counts every run the search and the shrink made; Bounded says
	// the shrink stopped before it was done: ShrinkRuns ran out, or the
	// search was interrupted.
	Runs    int
	Bounded bool
}

// Find runs seeds 1 to s.Runs until one's run breaks the invariant, then
// shrinks its schedule. found is false when no seed broke it.
func (s Search) Find(ctx context.Context) (f Found, found bool, err error) {
	for seed := uint64(1); seed <= uint64(s.Runs); seed++ {
		sched := nonNil(s.Plan(seed))
		r, events, err := s.Run(ctx, sched, s.Duration)
		if err != nil {
			return f, false, fmt.Errorf("seed %d: %w", seed, err)
		}
		f.Runs++
		broke := s.Invariant.Broken(r)
		s.progress("search: seed %d of at most %d (%d faults, %v): %s", seed, s.Runs, len(sched), s.Duration, s.verdict(r, broke))
		if broke {
			f = Found{Seed: seed, Original: sched, Schedule: sched, Duration: s.Duration, Report: r, Events: events, Runs: f.Runs}
			return s.shrink(ctx, f)
		}
		if ctx.Err() != nil {
			return f, false, ctx.Err()
		}
	}
	return f, false, nil
}

func (s Search) verdict(r Report, broke bool) string {
	v := fmt.Sprintf("%d two-believer moments, %d lost updates, %d refused", len(r.Overlaps), r.LostUpdates, r.Refused)
	if broke {
		return v + ": " + string(s.Invariant) + " broke"
	}
	return v
}

func (s Search) progress(format string, args ...any) {
	if s.Progress != nil {
		s.Progress(fmt.Sprintf(format, args...))
	}
}

func nonNil(s []Fault) []Fault {
	if s == nil {
		return []Fault{}
	}
	return s
}

// shrink makes f's schedule smaller while it still breaks: first it drops
// faults, halves of the schedule, then quarters, down to one at a time (a
// plain delta debugging), then it halves each pause down to MinPause.
func (s Search) shrink(ctx context.Context, f Found) (Found, bool, error) {
	// breaks runs a candidate Tries times and takes it when every run
	// broke; false too when the run budget is spent.
	searched := f.Runs
	breaks := func(cand []Fault, what string) (bool, error) {
		// Out of runs, or interrupted (Ctrl-C): the smallest so far is
		// still worth writing.
		if s.ShrinkRuns > 0 && f.Runs-searched >= s.ShrinkRuns || ctx.Err() != nil {
			f.Bounded = true
			return false, nil
		}
		d := min(s.Duration, ScheduleEnd(cand)+s.Tail)
		for try := 1; try <= max(1, s.Tries); try++ {
			r, events, err := s.Run(ctx, nonNil(cand), d)
			if err != nil {
				return false, err
			}
			f.Runs++
			broke := s.Invariant.Broken(r)
			s.progress("shrink: %s (%d faults, %v), try %d of %d: %s", what, len(cand), d.Round(time.Millisecond), try, s.Tries, s.verdict(r, broke))
			if !broke {
				return false, nil
			}
			if try == max(1, s.Tries) {
				f.Schedule, f.Duration, f.Report, f.Events = nonNil(slices.Clone(cand)), d, r, events
			}
		}
		return true, nil
	}
	for chunk := max(1, len(f.Schedule)/2); chunk >= 1 && !f.Bounded; chunk /= 2 {
		for i := 0; i < len(f.Schedule) && !f.Bounded; {
			end := min(i+chunk, len(f.Schedule))
			cand := slices.Concat(f.Schedule[:i], f.Schedule[end:])
			ok, err := breaks(cand, fmt.Sprintf("without fault %s", span(i, end)))
			if err != nil {
				return f, true, err
			}
			if !ok {
				i = end
			}
		}
	}
	for i := range f.Schedule {
		for !f.Bounded && f.Schedule[i].Kind == Pause && f.Schedule[i].For/2 >= s.MinPause && s.MinPause > 0 {
			cand := slices.Clone(f.Schedule)
			cand[i].For /= 2
			ok, err := breaks(cand, fmt.Sprintf("fault %d's pause %v → %v", i+1, f.Schedule[i].For, cand[i].For))
			if err != nil {
				return f, true, err
			}
			if !ok {
				break
			}
		}
	}
	return f, true, nil
}

// span names faults i+1 to end, as people count them.
func span(i, end int) string {
	if end-i == 1 {
		return fmt.Sprint(i + 1)
	}
	return fmt.Sprintf("%d–%d", i+1, end)
}

// String is what a search found, in words.
func (f Found) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d broke it; its %d faults shrunk to %d in %d runs", f.Seed, len(f.Original), len(f.Schedule), f.Runs)
	if f.Bounded {
		b.WriteString(" (the shrink stopped short, out of runs or interrupted: it may shrink further)")
	}
	fmt.Fprintf(&b, ":\n%s", FormatSchedule(f.Schedule))
	return b.String()
}

package lab

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

// trialOf is a Trial whose verdict is a function of the schedule alone,
// so that the shrink's own logic is what the test checks: broken says
// whether a run of that schedule breaks mutual exclusion. It counts the
// runs and keeps the durations it was given.
type trialOf struct {
	broken    func([]Fault) bool
	runs      int
	durations []time.Duration
}

func (t *trialOf) run(_ context.Context, s []Fault, d time.Duration) (Report, []Event, error) {
	t.runs++
	t.durations = append(t.durations, d)
	if s == nil {
		panic("a nil schedule: Run would plan the seed's own")
	}
	var r Report
	if t.broken(s) {
		r.Overlaps = []Overlap{{A: "c1", B: "c2"}}
	}
	return r, nil, nil
}

func sec(n float64) time.Duration { return time.Duration(n * float64(time.Second)) }

func TestSearchShrinks(t *testing.T) {
	// Seeds 1 and 2 plan schedules that do not break; seed 3's does.
	plans := map[uint64][]Fault{
		1: {{At: sec(1), Kind: Kill}},
		2: {{At: sec(1), Kind: Pause, For: sec(4)}},
		3: {
			{At: sec(1), Kind: Kill}, {At: sec(2), Kind: Pause, For: sec(4), Pick: 7}, {At: sec(3), Kind: Kill},
			{At: sec(4), Kind: Pause, For: sec(4)}, {At: sec(5), Kind: Kill}, {At: sec(6), Kind: Kill},
		},
	}
	for _, tc := range []struct {
		name   string
		broken func([]Fault) bool
		want   []Fault
	}{
		// A pause of 1.5 s or more with pick 7 breaks it: every other
		// fault goes, and the pause halves to 2 s (1 s would not break).
		{"one fault that matters", func(s []Fault) bool {
			return slices.ContainsFunc(s, func(f Fault) bool { return f.Pick == 7 && f.For >= sec(1.5) })
		}, []Fault{{At: sec(2), Kind: Pause, For: sec(2), Pick: 7}}},
		// Two faults together: the kill at 5 s and the pick-7 pause, of
		// any length down to the session.
		{"two faults together", func(s []Fault) bool {
			return slices.ContainsFunc(s, func(f Fault) bool { return f.Pick == 7 }) &&
				slices.ContainsFunc(s, func(f Fault) bool { return f.At == sec(5) })
		}, []Fault{{At: sec(2), Kind: Pause, For: sec(1), Pick: 7}, {At: sec(5), Kind: Kill}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &trialOf{broken: tc.broken}
			var lines []string
			s := Search{
				Invariant: MutualExclusion, Runs: 5, Duration: sec(20), Tail: sec(2), Tries: 2, MinPause: sec(1),
				Plan: func(seed uint64) []Fault { return plans[seed] }, Run: tr.run,
				Progress: func(l string) { lines = append(lines, l) },
			}
			f, found, err := s.Find(context.Background())
			if err != nil || !found {
				t.Fatalf("found %v, err %v", found, err)
			}
			if f.Seed != 3 || !slices.Equal(f.Original, plans[3]) {
				t.Errorf("seed %d, original %v; want seed 3's", f.Seed, f.Original)
			}
			if !slices.Equal(f.Schedule, tc.want) {
				t.Errorf("shrunk to\n%swant\n%s", FormatSchedule(f.Schedule), FormatSchedule(tc.want))
			}
			if f.Runs != tr.runs {
				t.Errorf("%d runs counted, %d made", f.Runs, tr.runs)
			}
			if want := ScheduleEnd(tc.want) + sec(2); f.Duration != want {
				t.Errorf("shrunk run's duration %v, want the schedule's end and the tail, %v", f.Duration, want)
			}
			if !strings.Contains(lines[2], "seed 3") || !strings.Contains(lines[2], "mutual-exclusion broke") {
				t.Errorf("progress %q", lines)
			}
		})
	}
}

// A smaller schedule that breaks only every other run is never taken: a
// shrink must repeat to be replayable.
func TestShrinkWantsTheBreakToRepeat(t *testing.T) {
	full := []Fault{{At: sec(1), Kind: Kill}, {At: sec(2), Kind: Pause, For: sec(4)}}
	n := 0
	tr := &trialOf{broken: func(s []Fault) bool {
		if slices.Equal(s, full) {
			return true
		}
		n++
		return n%2 == 1
	}}
	s := Search{Invariant: MutualExclusion, Runs: 1, Duration: sec(10), Tries: 2, MinPause: sec(1),
		Plan: func(uint64) []Fault { return full }, Run: tr.run}
	f, found, err := s.Find(context.Background())
	if err != nil || !found {
		t.Fatalf("found %v, err %v", found, err)
	}
	if !slices.Equal(f.Schedule, full) {
		t.Errorf("shrunk to %v on breaks that did not repeat", f.Schedule)
	}
}

func TestSearchFindsNothing(t *testing.T) {
	tr := &trialOf{broken: func([]Fault) bool { return false }}
	s := Search{Invariant: NoLostUpdate, Runs: 3, Duration: sec(5), Tries: 2,
		Plan: func(uint64) []Fault { return nil }, Run: tr.run}
	if _, found, err := s.Find(context.Background()); found || err != nil || tr.runs != 3 {
		t.Errorf("found %v, err %v after %d runs; want nothing after 3", found, err, tr.runs)
	}
}

func TestShrinkRunsBound(t *testing.T) {
	full := []Fault{{At: sec(1), Kind: Kill}, {At: sec(2), Kind: Kill}, {At: sec(3), Kind: Kill}, {At: sec(4), Kind: Kill}}
	tr := &trialOf{broken: func(s []Fault) bool { return len(s) == 4 }}
	s := Search{Invariant: MutualExclusion, Runs: 1, Duration: sec(10), Tries: 2, ShrinkRuns: 3,
		Plan: func(uint64) []Fault { return full }, Run: tr.run}
	f, _, _ := s.Find(context.Background())
	if !f.Bounded || tr.runs != 1+3 {
		t.Errorf("bounded %v after %d runs; want bounded after 1 search run and 3 shrink runs", f.Bounded, tr.runs)
	}
}

func TestParseInvariant(t *testing.T) {
	for _, name := range []string{"mutual-exclusion", "no-lost-update"} {
		if inv, err := ParseInvariant(name); err != nil || string(inv) != name {
			t.Errorf("%s: %v, %v", name, inv, err)
		}
	}
	_, err := ParseInvariant("liveness")
	if err == nil || !strings.Contains(err.Error(), "want mutual-exclusion or no-lost-update") {
		t.Errorf("liveness: %v", err)
	}
}

func TestInvariantBroken(t *testing.T) {
	two := Report{Overlaps: []Overlap{{A: "c1", B: "c2"}}}
	lost := Report{LostUpdates: 1}
	for _, tc := range []struct {
		inv  Invariant
		r    Report
		want bool
	}{
		{MutualExclusion, two, true}, {MutualExclusion, lost, false},
		{NoLostUpdate, lost, true}, {NoLostUpdate, two, false},
	} {
		if got := tc.inv.Broken(tc.r); got != tc.want {
			t.Errorf("%s on %+v: %v", tc.inv, tc.r, got)
		}
	}
}

// Interrupted (Ctrl-C) after the seed broke, the search still hands back
// what it found, marked as cut short.
func TestSearchInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	full := []Fault{{At: sec(1), Kind: Kill}, {At: sec(2), Kind: Kill}}
	tr := &trialOf{broken: func([]Fault) bool { cancel(); return true }}
	s := Search{Invariant: MutualExclusion, Runs: 5, Duration: sec(10), Tries: 2,
		Plan: func(uint64) []Fault { return full }, Run: tr.run}
	f, found, err := s.Find(ctx)
	if err != nil || !found || !f.Bounded || !slices.Equal(f.Schedule, full) || tr.runs != 1 {
		t.Errorf("found %v, err %v, bounded %v, schedule %v after %d runs; want seed 1's, cut short after 1", found, err, f.Bounded, f.Schedule, tr.runs)
	}
}

package simulator

import (
	"cmp"
	"context"
	"log/slog"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// What the worlds do the same way: keep the step being done and the clock
// of every step, tell a client's pseudocode line, show a snapshot mid-step
// and sleep within a step.

// StepClocks is a world's clock at the end of every step. Embedded in a
// World (through Base and Steps), its ClockAt is the World's.
type StepClocks struct {
	clocks []time.Duration // [0] is 0, before the first step
}

// ClockAt is the clock at the end of step k, 0 before the first step and
// for a step not done yet.
func (s *StepClocks) ClockAt(k int) time.Duration {
	if k <= 0 || k >= len(s.clocks) {
		return 0
	}
	return s.clocks[k]
}

// EndStep records clock as the end of step k (numbered from 1, in order),
// forgetting any later step's.
func (s *StepClocks) EndStep(k int, clock time.Duration) {
	if len(s.clocks) == 0 {
		s.clocks = []time.Duration{0}
	}
	s.clocks = append(s.clocks[:k], clock)
}

// Base is what every world is given and keeps the same way: its steps,
// the protected resource its clients write to, where it shows a mid-step
// snapshot and whether its scenario is split. Embedded in a World.
type Base struct {
	Steps
	Resource *Resource
	// Publish shows a mid-step snapshot (WorldSpec.Publish); may be nil.
	Publish func(lockqueue.Snapshot)
	Log     *slog.Logger
	// Split: the scenario tells the key moment step by step (it has an
	// expire step, Split): a holder's pause or crash only cuts it off, and
	// the expiry, the hand-over (wake, where a woken client must act) and
	// the resume are steps of their own.
	Split bool
}

// NewBase is the Base of the world spec opens, starting now. Its resource
// checks tokens when fencing is on, and words them as spec.Token does.
func NewBase(spec WorldSpec) Base {
	token := spec.Token
	if token == nil {
		token = decimalToken
	}
	return Base{
		Steps: Steps{Start: time.Now()}, Resource: &Resource{fencing: spec.Fencing, token: token},
		Publish: spec.Publish, Log: cmp.Or(spec.Logger, slog.New(slog.DiscardHandler)), Split: Split(spec.Scenario.Steps),
	}
}

// Steps is what every world keeps of its steps: the one being done (its
// number, what has happened in it so far and the run's clock) and, in
// StepClocks, the clock at the end of each step done. Embedded in a World,
// its ClockAt is the World's.
type Steps struct {
	StepClocks
	// Step is the step being done (numbered from 1); Events, what has
	// happened in it so far.
	Step   int
	Events []Event
	// Clock is the run's clock: a step moves it StepTick, plus what the
	// step waits on the run's clock (an expiry takes the lease or the
	// session timeout, whatever this machine took). Every time the
	// classroom shows comes from it, so a step reads the same live,
	// scrubbed or replayed from a shared link.
	Clock time.Duration
	// Start is when the world began: an event's AtMs is the real time
	// since.
	Start time.Time
}

// Begin starts step k: nothing has happened in it yet, and the clock is a
// tick past the end of step k-1.
func (s *Steps) Begin(k int) {
	s.Step, s.Events = k, nil
	s.Clock = s.ClockAt(k-1) + StepTick
}

// End records the clock as the end of the step being done.
func (s *Steps) End() { s.EndStep(s.Step, s.Clock) }

// Emit records e as the step's and answers its index in Events.
func (s *Steps) Emit(e Event) int {
	e.Step, e.Kind, e.AtMs = s.Step, e.Event, time.Since(s.Start).Milliseconds()
	s.Events = append(s.Events, e)
	return len(s.Events) - 1
}

// LineOf is World.Line for a world that keeps its clients by name: the
// line of the named client, 0 for one it does not know.
func LineOf[C any](byName map[string]*C, name string, line func(*C) int) int {
	if c := byName[name]; c != nil {
		return line(c)
	}
	return 0
}

// ShowMidStep publishes the lock as snapshot reads it now, in the middle
// of a step, when there is somewhere to publish it (WorldSpec.Publish). A
// snapshot that fails is not shown: the step's own snapshot tells.
func ShowMidStep(publish func(lockqueue.Snapshot), snapshot func() (lockqueue.Snapshot, bool, error)) {
	if publish == nil {
		return
	}
	if snap, _, err := snapshot(); err == nil {
		publish(snap)
	}
}

// Sleep waits for d, or until ctx ends and returns its cause.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

package simulator

import (
	"context"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// What the worlds of the services that start their own server (Redis, etcd,
// PostgreSQL) do the same way: keep the clock of every step, tell a
// client's pseudocode line, show a snapshot mid-step and sleep within a
// step.

// StepClocks is a world's clock at the end of every step. Embedded in a
// World, its ClockAt is the World's.
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

package simulator

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// A replay after a go-back records steps again from the one it redoes: the
// later clocks are forgotten.
func TestStepClocks(t *testing.T) {
	var s StepClocks
	if got := s.ClockAt(1); got != 0 {
		t.Errorf("before any step: ClockAt(1) = %v, want 0", got)
	}
	s.EndStep(1, time.Second)
	s.EndStep(2, 3*time.Second)
	s.EndStep(3, 4*time.Second)
	for k, want := range []time.Duration{0, time.Second, 3 * time.Second, 4 * time.Second, 0} {
		if got := s.ClockAt(k); got != want {
			t.Errorf("ClockAt(%d) = %v, want %v", k, got, want)
		}
	}
	s.EndStep(2, 2*time.Second)
	if got := s.ClockAt(2); got != 2*time.Second {
		t.Errorf("step 2 again: ClockAt(2) = %v, want 2s", got)
	}
	if got := s.ClockAt(3); got != 0 {
		t.Errorf("after step 2 again: ClockAt(3) = %v, want 0 (forgotten)", got)
	}
}

func TestLineOf(t *testing.T) {
	type client struct{ line int }
	byName := map[string]*client{"C1": {line: 4}, "C2": nil}
	line := func(c *client) int { return c.line }
	for name, want := range map[string]int{"C1": 4, "C2": 0, "C3": 0} {
		if got := LineOf(byName, name, line); got != want {
			t.Errorf("LineOf(%s) = %d, want %d", name, got, want)
		}
	}
}

func TestShowMidStep(t *testing.T) {
	var shown []string
	publish := func(s lockqueue.Snapshot) { shown = append(shown, s.Path) }
	ok := func() (lockqueue.Snapshot, bool, error) { return lockqueue.Snapshot{Path: "/a"}, true, nil }
	failed := func() (lockqueue.Snapshot, bool, error) {
		return lockqueue.Snapshot{Path: "/b"}, true, errors.New("read")
	}
	ShowMidStep(nil, ok)
	ShowMidStep(publish, failed)
	ShowMidStep(publish, ok)
	if len(shown) != 1 || shown[0] != "/a" {
		t.Errorf("shown %v, want only [/a]: nothing without publish, nothing that failed to read", shown)
	}
}

func TestSleep(t *testing.T) {
	if err := Sleep(context.Background(), time.Millisecond); err != nil {
		t.Errorf("Sleep: %v", err)
	}
	cause := errors.New("run closed")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	if err := Sleep(ctx, time.Hour); !errors.Is(err, cause) {
		t.Errorf("Sleep after cancel: %v, want the cause %v", err, cause)
	}
}

package redislock

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/hub"
	"github.com/zklockviz/zklockviz/lockservice"
	"github.com/zklockviz/zklockviz/simulator"
	"github.com/zklockviz/zklockviz/simulator/simtest"
)

// newClassroomAPI serves a Redis classroom over the HTTP API, as serve
// --sim does, publishing to h.
func newClassroomAPI(t *testing.T, h *hub.Hub, maxRuns int) *simtest.Classroom {
	t.Helper()
	skipWithoutRedis(t)
	cls, hm, err := NewClassroomWith(simulator.ManagerConfig{IdleTimeout: -1, MaxRuns: maxRuns, Publish: h.Publish, Remove: h.Remove,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := hm.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return simtest.Serve(t, lockservice.Service{Name: "redis", Title: "Redis", CheckName: func(string) error { return nil }, Classroom: cls}, h)
}

// TestPaceDoesNotChangeTheStory: every Redis scenario whose key has a real
// PX, stepped through the HTTP API with no pause between steps, stepped
// with a pause longer than the key's expiry after every step, and played at
// a speed as slow as that then scrubbed back step by step, tells the same
// story: the same events, verdicts and violations at the same steps, the
// expiry in the step that pauses or crashes its holder (or in its own
// expire step). The expiries are
// scaled down (the story is the same) so the slow runs take seconds; all
// runs go at once, most of their time is spent waiting.
func TestPaceDoesNotChangeTheStory(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: waits out key expiries between steps")
	}
	tests := []struct {
		name     string
		expiryMs int64
	}{
		{"redis-px-pause", 1000},
		{"redis-del-third", 1000},
		{"redis-token-fencing", 1000},
		{"redis-side-by-side", 1000},
		{"redis-token-side-by-side", 1000},
		// redsync's per-try timeout is 5% of the expiry: 5 s leaves it
		// 250 ms, enough for a busy machine (150 ms was not, at a load
		// average of 20 on 2 cores).
		{"redis-redlock-restart", 5000},
		{"redis-redlock-clock", 5000},
		// Renewed by the watchdog every third of its lease, in real time,
		// not held: it must not change either. Its own 3 s lease: a busy
		// machine can miss a renewal a shorter one needs (with 1.5 s this
		// test failed once on a busy CI machine; the log kept did not say
		// which run).
		{"redis-watchdog", 3000},
	}
	api := newClassroomAPI(t, hub.New(), 3*len(tests))
	var paces []simtest.Pace
	for _, tt := range tests {
		sc, ok := Catalog.Builtin(tt.name)
		if !ok {
			t.Fatalf("no scenario %s", tt.name)
		}
		paces = append(paces, simtest.Pace{Scenario: simtest.WithParam(t, sc, "expiryMs", tt.expiryMs),
			Gap: time.Duration(tt.expiryMs)*time.Millisecond + 300*time.Millisecond})
	}
	// The expiry comes in a pause or crash step, or in its own expire step
	// where a scenario tells the key moment in steps.
	api.SamePaceStories(t, paces, simulator.ActPause, simulator.ActCrash, simulator.ActExpire)
}

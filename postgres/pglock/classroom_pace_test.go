package pglock

import (
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/hub"
	"github.com/zklockviz/zklockviz/lockservice"
	"github.com/zklockviz/zklockviz/postgres/pglocal"
	"github.com/zklockviz/zklockviz/simulator"
	"github.com/zklockviz/zklockviz/simulator/simtest"
)

// A lecturer's pace does not change a PostgreSQL story: the scenarios
// whose holder sits idle in its transaction, stepped through the HTTP API
// with no pause, stepped with a pause longer than the idle timeout after
// every step, and played that slowly then scrubbed back, tell the same
// events, verdicts and violations at the same steps, and the server ends
// the paused session only in the step the scenario gives it, never before:
// pg-idle-in-tx's expire step (TestIdleInTransactionBlocksEveryone checks
// it is that step alone), pg-side-by-side's pause, which tells the whole
// key moment in one step as every service's side-by-side pane does.
// (Clicking every 6 s once ended the holder between clicks: "C1, C2 and
// C3 hold the lock at once", and later COMMIT: conn closed.) The timeout
// is scaled down to 1 s so the slow runs take seconds.
func TestPaceDoesNotChangeThePostgresStory(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: waits out idle timeouts between steps")
	}
	if err := pglocal.Installed(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	h := hub.New()
	cls, m, err := NewClassroom(simulator.ManagerConfig{IdleTimeout: -1, MaxRuns: 6, Publish: h.Publish, Remove: h.Remove,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	api := simtest.Serve(t, lockservice.Service{Name: Name, Title: "PostgreSQL", CheckName: func(string) error { return nil }, Classroom: cls}, h)
	const timeoutMs = 1000
	var paces []simtest.Pace
	for _, name := range []string{"pg-idle-in-tx", "pg-side-by-side"} {
		sc, ok := Catalog.Builtin(name)
		if !ok {
			t.Fatalf("no scenario %s", name)
		}
		paces = append(paces, simtest.Pace{Scenario: simtest.WithParam(t, sc, "idleInTxTimeoutMs", timeoutMs),
			Gap: timeoutMs*time.Millisecond + 300*time.Millisecond})
	}
	api.SamePaceStories(t, paces, simulator.ActPause, simulator.ActCrash, simulator.ActExpire)
}

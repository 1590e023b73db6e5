package etcdlock_test

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/etcd/etcdlock"
	"github.com/zklockviz/zklockviz/hub"
	"github.com/zklockviz/zklockviz/lockservice"
	"github.com/zklockviz/zklockviz/simulator"
	"github.com/zklockviz/zklockviz/simulator/simtest"
)

// TestPaceDoesNotChangeTheStory: each etcd scenario, stepped through the
// HTTP API with no pause between steps, stepped with a pause longer than
// its leases after every step, and played as slowly then scrubbed back,
// tells the same story: the same events, verdicts and violations at the
// same steps, a lease running out only where its holder pauses or crashes.
// The clients' keep-alives hold their leases between steps; nothing else
// may (a split scenario's silent holder's lease is kept by the classroom
// until its expire step). The leases are 3 s (etcd-mutex-queue's 5 s scaled down): a
// keep-alive every second survives a busy machine (with 2 s leases this
// test, or Redis's, failed once on a busy CI machine; the log kept did not
// say which).
func TestPaceDoesNotChangeTheStory(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: waits out leases between steps")
	}
	if err := (&etcdlock.Backend{}).Available(); err != nil {
		t.Skip(err)
	}
	const ttl = 3
	h := hub.New()
	api := simtest.Serve(t, classroomService(t, h, 3*len(etcdlock.Catalog.Names())), h)
	var paces []simtest.Pace
	for _, name := range etcdlock.Catalog.Names() {
		sc, _ := etcdlock.Catalog.Builtin(name)
		paces = append(paces, simtest.Pace{Scenario: simtest.WithParam(t, sc, "ttl", ttl), Gap: ttl*time.Second + 300*time.Millisecond})
	}
	api.SamePaceStories(t, paces, simulator.ActPause, simulator.ActCrash, simulator.ActExpire)
}

// classroomService is etcd's service with a classroom publishing to h,
// closed when the test ends.
func classroomService(t *testing.T, h *hub.Hub, maxRuns int) lockservice.Service {
	t.Helper()
	cls, hm, err := etcdlock.NewClassroom(simulator.ManagerConfig{IdleTimeout: -1, MaxRuns: maxRuns, Publish: h.Publish, Remove: h.Remove,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := hm.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	svc := etcdlock.Service(nil)
	svc.Classroom = cls
	return svc
}

package zksim

import (
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/hub"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/lockservice"
	"github.com/zklockviz/zklockviz/simulator"
	"github.com/zklockviz/zklockviz/simulator/simtest"
)

// TestPaceDoesNotChangeTheStory: every ZooKeeper scenario, stepped through
// the HTTP API with no pause between steps, stepped with a pause longer
// than a session's timeout after every step, and played at a speed as
// slow as that then scrubbed back step by step, tells the same story, as
// Redis's, etcd's and PostgreSQL's classrooms must: a session expires only
// in the step that pauses or crashes its client, or in its own expire step,
// however long a lecturer talks between clicks. The clients' sessions
// heartbeat between steps; a paused or crashed one does not, so its expiry
// is the one thing real time may do, and only where the story says.
func TestPaceDoesNotChangeTheStory(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: waits out sessions between steps")
	}
	names := Catalog.Names()
	h := hub.New()
	m, _ := newManagerOn(t, Config{}, simulator.ManagerConfig{IdleTimeout: -1, MaxRuns: 3 * len(names), Publish: h.Publish, Remove: h.Remove})
	api := simtest.Serve(t, lockservice.Service{Name: lockqueue.ZooKeeper, Title: "ZooKeeper",
		CheckName: func(string) error { return nil }, Classroom: simulator.NewClassroom(m)}, h)
	var paces []simtest.Pace
	for _, name := range names {
		sc, _ := Catalog.Builtin(name)
		paces = append(paces, simtest.Pace{Scenario: sc, Gap: testSessionTimeout + 300*time.Millisecond})
	}
	api.SamePaceStories(t, paces, simulator.ActPause, simulator.ActCrash, simulator.ActExpire)
}

package zksim

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/simulator"
	"github.com/zklockviz/zklockviz/zookeeper/zklocal/zktest"
)

// TestGCPauseStates follows gc-pause through the Go API: the paused holder
// shows as a zombie while its session lives on, comes back stale, and its
// unfenced write is a violation naming the steps. The key moment is four
// steps (pause 4, expiry 5, hand-over 6, resume 7), each with its state.
func TestGCPauseStates(t *testing.T) {
	pub := &published{last: map[string]lockqueue.Snapshot{}}
	var zombies []string
	m := newManager(t, simulator.ManagerConfig{Publish: func(s lockqueue.Snapshot) {
		for _, n := range s.Nodes {
			if n.Zombie {
				zombies = append(zombies, n.Name)
			}
		}
		pub.publish(s)
	}})
	off := false
	r, err := m.Start(simulator.Spec{Scenario: "gc-pause", Fencing: &off})
	if err != nil {
		t.Fatal(err)
	}
	keyMoment(t, r)
	if err := r.Seek(7); err != nil {
		t.Fatal(err)
	}
	s := r.State()
	// Stale since the step its session expired.
	if c := clientNamed(s, "LOCK1"); c.State != simulator.StateStale || c.Since != 5 || c.Token == 0 {
		t.Errorf("LOCK1 after the pause: %+v", c)
	}
	if c := clientNamed(s, "LOCK2"); c.State != simulator.StateHolding {
		t.Errorf("LOCK2 after the pause: %+v", c)
	}
	if h := s.Snapshot.Holders(); len(s.Snapshot.Nodes) != 1 || len(h) != 1 || h[0] != clientNamed(s, "LOCK2").Node {
		t.Errorf("snapshot after the pause: %+v", s.Snapshot.Nodes)
	}
	// While LOCK1 was cut off its node stayed, owned by a session with no
	// connection: the mid-step snapshot shows it as a zombie.
	if !slices.Contains(zombies, clientNamed(s, "LOCK1").Node) {
		t.Errorf("no zombie snapshot of LOCK1's node was published (zombies %v)", zombies)
	}
	if len(s.Violations) != 0 {
		t.Errorf("violations before the stale write: %v", s.Violations)
	}
	runAll(t, r)
	s = r.State()
	if len(s.Violations) != 1 || !slices.Equal(s.Violations[0].Steps, []int{5, 9}) {
		t.Errorf("violations: %+v", s.Violations)
	}
	// Scrubbing back before the stale write hides it again.
	if err := r.Seek(8); err != nil {
		t.Fatal(err)
	}
	if v := r.State().Violations; len(v) != 0 {
		t.Errorf("violations at step 8: %v", v)
	}
	if rep := r.Report(); len(rep.Violations) != 1 || len(rep.Steps) != 10 {
		t.Errorf("report: %d violations, %d steps", len(rep.Violations), len(rep.Steps))
	}
}

// keyMoment checks gc-pause's steps 4 to 7, each recorded on its own: the
// pause leaves LOCK1's node on the lane as a zombie (its session silent),
// the expiry deletes it while LOCK1, stopped, still believes it holds and
// LOCK2 has not yet acted, the hand-over gives LOCK2 the lock, and the
// resume brings LOCK1 back stale.
func keyMoment(t *testing.T, r *simulator.Run) {
	t.Helper()
	want := []struct {
		step         int
		action       string
		lock1, lock2 string
		nodes        int
		zombie       bool
		says         string
	}{
		{4, simulator.ActPause, simulator.StatePaused, simulator.StateWaiting, 2, true, "stops in a long GC pause"},
		{5, simulator.ActExpire, simulator.StatePaused, simulator.StateWaiting, 1, false, "believes it holds the lock"},
		{6, simulator.ActWake, simulator.StatePaused, simulator.StateHolding, 1, false, "LOCK2 locks"},
		{7, simulator.ActResume, simulator.StateStale, simulator.StateHolding, 1, false, "still believes it holds"},
	}
	for _, w := range want {
		if err := r.Seek(w.step); err != nil {
			t.Fatal(err)
		}
		s := r.State()
		// The zombie: its node still there with its session silent (the
		// pause), then, once the node is gone, the alert naming it while
		// LOCK1 still believes it holds.
		lost := clientNamed(s, "LOCK1").Node
		zombie := slices.ContainsFunc(s.Snapshot.Nodes, func(n lockqueue.Node) bool {
			return n.Zombie && n.Name == lost
		})
		alerted := slices.ContainsFunc(s.Snapshot.Alerts, func(a lockqueue.Alert) bool {
			return a.Kind == lockqueue.AlertHolderExpired && slices.Equal(a.Nodes, []string{lost}) && strings.Contains(a.Message, "still believes it holds")
		})
		if alerted != (w.step > 4) {
			t.Errorf("step %d: a zombie-holder alert on %s: %v, want %v (alerts %+v)", w.step, lost, alerted, w.step > 4, s.Snapshot.Alerts)
		}
		if s.Action.Action != w.action || clientNamed(s, "LOCK1").State != w.lock1 || clientNamed(s, "LOCK2").State != w.lock2 ||
			len(s.Snapshot.Nodes) != w.nodes || zombie != w.zombie || !strings.Contains(s.Narration, w.says) {
			t.Errorf("step %d: %s, LOCK1 %s, LOCK2 %s, %d nodes, LOCK1's a zombie %v, %q; want %s, %s, %s, %d, %v, saying %q",
				w.step, s.Action.Action, clientNamed(s, "LOCK1").State, clientNamed(s, "LOCK2").State, len(s.Snapshot.Nodes), zombie, s.Narration,
				w.action, w.lock1, w.lock2, w.nodes, w.zombie, w.says)
		}
	}
}

// TestHAStandbySnapshot: the lease queue reads as lease nodes under the
// limit, standbys waiting on the children.
func TestHAStandbySnapshot(t *testing.T) {
	m := newManager(t, simulator.ManagerConfig{})
	r, err := m.Start(simulator.Spec{Scenario: "ha-standby", Strategy: simulator.Herd})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Seek(4); err != nil {
		t.Fatal(err)
	}
	s := r.State()
	if s.Strategy != simulator.Children || s.Snapshot.Leases != 2 || len(s.Snapshot.Holders()) != 2 {
		t.Fatalf("strategy %s, leases %d, holders %v", s.Strategy, s.Snapshot.Leases, s.Snapshot.Holders())
	}
	for _, n := range s.Snapshot.Nodes {
		if n.Mode != lockqueue.Lease {
			t.Errorf("%s: mode %s", n.Name, n.Mode)
		}
		if !n.Holding && (n.WaitsOn != "children" || n.Edge != lockqueue.EdgeChildWatch) {
			t.Errorf("standby %s: waitsOn %q, edge %q", n.Name, n.WaitsOn, n.Edge)
		}
	}
	runAll(t, r)
	s = r.State()
	for _, name := range []string{"APP3", "APP4"} {
		if c := clientNamed(s, name); c.State != simulator.StateHolding {
			t.Errorf("%s not promoted: %+v", name, c)
		}
	}
	if len(s.Violations) != 0 || len(s.Snapshot.Holders()) != 2 {
		t.Errorf("violations %v, holders %v", s.Violations, s.Snapshot.Holders())
	}
}

// TestManagerClose: closing the manager ends every run and removes all it
// created, the sandbox included.
func TestManagerClose(t *testing.T) {
	m, err := New(Config{Servers: []string{zkAddr}, SessionTimeout: testSessionTimeout}, simulator.ManagerConfig{Root: "/closetest/sim", Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	r, err := m.Start(simulator.Spec{Scenario: "session-expiry"})
	if err != nil {
		t.Fatal(err)
	}
	// Leave a crashed holder behind: its node outlives its client.
	for range 4 {
		if err := r.Step(); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	conn := zktest.Connect(t, zkAddr)
	if ok, _, err := conn.Exists("/closetest"); err != nil || ok {
		t.Errorf("/closetest still exists after Close (%v)", err)
	}
	if _, err := m.Start(simulator.Spec{Scenario: "lock1-5"}); err == nil {
		t.Error("Start after Close worked")
	}
	if _, err := New(Config{Servers: []string{zkAddr}}, simulator.ManagerConfig{Root: "/"}); err == nil {
		t.Error(`New with root "/" worked`)
	}
	if _, err := New(Config{Servers: []string{zkAddr}}, simulator.ManagerConfig{Root: "/zookeeper/x"}); err == nil {
		t.Error("New with a root under /zookeeper worked")
	}
}

// TestSubscribe: a viewer is signalled at once and after each change, sees
// the newest state however many changes it missed, and learns when the run
// ends; a run closes a grace period after its last viewer leaves.
func TestSubscribe(t *testing.T) {
	m := newManager(t, simulator.ManagerConfig{ViewerGrace: 200 * time.Millisecond})
	r, err := m.Start(simulator.Spec{Scenario: "lock1-5"})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := r.Subscribe()
	if err != nil {
		t.Fatal(err)
	}
	wait := func(c <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-c:
		case <-time.After(time.Minute):
			t.Fatalf("no %s", what)
		}
	}
	wait(sub.C(), "first signal")
	if s := sub.State(); s.ID != r.ID() || s.Step != 0 {
		t.Fatalf("first state: id %s step %d", s.ID, s.Step)
	}
	// Three steps unread: one signal pending, and the newest state.
	for range 3 {
		if err := r.Step(); err != nil {
			t.Fatal(err)
		}
	}
	wait(sub.C(), "signal after the steps")
	if s := sub.State(); s.Step != 3 {
		t.Errorf("state after 3 steps: step %d", s.Step)
	}
	if r.Viewers() != 1 {
		t.Errorf("viewers %d, want 1", r.Viewers())
	}
	// The viewers leave: the run closes once the grace period is over, and
	// Done says so even to a subscription already closed.
	other, err := r.Subscribe()
	if err != nil {
		t.Fatal(err)
	}
	sub.Close()
	sub.Close() // twice is harmless
	other.Close()
	wait(other.Done(), "end of the run after its viewers left")
	if _, ok := m.Get(r.ID()); ok {
		t.Error("the run is still open")
	}
	if _, err := r.Subscribe(); !errors.Is(err, simulator.ErrNotFound) {
		t.Errorf("subscribe to a closed run: %v, want ErrNotFound", err)
	}
}

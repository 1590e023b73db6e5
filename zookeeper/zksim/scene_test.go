package zksim

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/simulator"
)

// lockName is a scene's lock as the test names it: the run's is "first",
// the one beside it "second".
func lockName(s simulator.State, path string) string {
	switch path {
	case s.Path:
		return "first"
	case s.Path + sceneSuffix:
		return "second"
	}
	return path
}

// sceneLanes are a state's locks, their holders and waiters by client (a
// node's data is its client's name).
func sceneLanes(s simulator.State) []string {
	var out []string
	for _, l := range s.Locks {
		var holds, waits []string
		for _, n := range l.Nodes {
			if n.Holding {
				holds = append(holds, n.Data)
			} else {
				waits = append(waits, n.Data)
			}
		}
		out = append(out, fmt.Sprintf("%s: holds %v, waits %v", lockName(s, l.Path), holds, waits))
	}
	return out
}

// zk-deadlock with real sessions: C1 holds the first lock and C2 the
// second; each queues on the other's with the same session, and the waits
// close a cycle through the two locks that the state draws (both locks,
// the cycle's waits in order, one in each lock, each client's wait for
// the other's node). Nothing breaks it until C2's session expires, which
// takes both its nodes and hands C1 the second lock.
func TestDeadlockScene(t *testing.T) {
	m := newManager(t, simulator.ManagerConfig{})
	r, err := m.Start(simulator.Spec{Scenario: "zk-deadlock"})
	if err != nil {
		t.Fatal(err)
	}
	runAll(t, r)
	at := func(k int) simulator.State {
		t.Helper()
		if err := r.Seek(k); err != nil {
			t.Fatal(err)
		}
		return r.State()
	}
	last := r.State()

	s3 := at(3)
	if len(s3.Locks) != 2 || s3.Cycle != nil {
		t.Errorf("step 3: %d locks, cycle %+v; want both locks and no cycle yet", len(s3.Locks), s3.Cycle)
	}
	s4 := at(4)
	if got, want := sceneLanes(s4), []string{"first: holds [C1], waits [C2]", "second: holds [C2], waits [C1]"}; !slices.Equal(got, want) {
		t.Errorf("step 4's locks %q, want %q", got, want)
	}
	if s4.Cycle == nil || s4.Cycle.Kind != lockqueue.AlertDeadlock {
		t.Fatalf("step 4 has no cycle across the locks: %+v", s4.Cycle)
	}
	var steps []string
	for _, st := range s4.CycleSteps {
		steps = append(steps, fmt.Sprintf("%s waits in %s for %s", st.FromName, lockName(s4, st.Lock), st.ToName))
	}
	if want := []string{"C1 waits in second for C2", "C2 waits in first for C1"}; !slices.Equal(steps, want) {
		t.Errorf("the cycle's waits %q, want %q", steps, want)
	}
	byNode := map[string]string{}
	for _, c := range s4.Clients {
		byNode[c.Node] = c.Name
	}
	var chain []string
	for _, n := range s4.Cycle.Nodes {
		chain = append(chain, byNode[n])
	}
	if !slices.Equal(chain, []string{"C1", "C2"}) {
		t.Errorf("the cycle's nodes are %v's, want C1's then C2's", chain)
	}
	for _, want := range []string{"no deadlock detector", "C1 → C2 → C1"} {
		if !strings.Contains(s4.Narration, want) {
			t.Errorf("step 4's narration %q does not say %q", s4.Narration, want)
		}
	}

	s5 := at(5)
	if got, want := sceneLanes(s5), []string{"first: holds [C1], waits []", "second: holds [C1], waits []"}; !slices.Equal(got, want) {
		t.Errorf("after C2's session expired the locks are %q, want %q", got, want)
	}
	if s5.Cycle != nil || len(s5.CycleSteps) != 0 {
		t.Errorf("after C2's session expired the cycle stands: %+v", s5.Cycle)
	}
	if c := clientNamed(s5, "C2"); c.State != simulator.StateCrashed {
		t.Errorf("C2 after the crash: %+v", c)
	}
	if len(last.Violations) != 0 {
		t.Errorf("violations: %+v", last.Violations)
	}
	if got := sceneLanes(last); !slices.Equal(got, []string{"first: holds [], waits []", "second: holds [], waits []"}) {
		t.Errorf("after C1's release the locks are %q, want both free", got)
	}
}

// `zklockviz sim --scenario zk-deadlock`: the timeline of the two locks'
// cycle, one row per event, and the step that closes it saying nothing
// will wake them; C2's expiry takes both its nodes and wakes C1 alone.
func TestCLIDeadlockScene(t *testing.T) {
	rep := simJSON(t, 0, "--scenario", "zk-deadlock")
	want := []row{
		{"C1", "lock", ""},
		{"C2", "lock", ""},
		{"C1", "wait", "C2"},
		{"C2", "wait", "C1"},
		{"C2", "crash", ""},
		{"C2", "expire", ""},
		{"C1", "lock", ""},
		{"C1", "write", ""},
		{"C1", "unlock", ""},
		{"C1", "unlock", ""},
	}
	if got := rows(rep.Events); !slices.Equal(got, want) {
		t.Errorf("timeline rows:\n got %v\nwant %v", got, want)
	}
	for _, e := range rep.Events {
		// C2 joined the second lock and queued on the first.
		if e.Event == simulator.EvExpire && (!slices.Equal(e.Notified, []string{"C1"}) || !strings.Contains(e.Text, "and, on "+rep.Path+", C2-lock-")) {
			t.Errorf("C2's expiry: %+v; want it to wake C1 and to name its node on %s too", e, rep.Path)
		}
	}
	if n := rep.Steps[3].Narration; !strings.Contains(n, "no deadlock detector") || !strings.Contains(n, "C1 → C2 → C1") {
		t.Errorf("step 4's narration %q: want the cycle and that nothing breaks it", n)
	}
	if n := rep.Steps[4].Narration; !strings.Contains(n, "both went with it") {
		t.Errorf("step 5's narration %q: want both nodes gone with the session", n)
	}
	if len(rep.Violations) != 0 || rep.Verdict.Exclusion != simulator.ExclusionHeld {
		t.Errorf("violations %+v, verdict %+v", rep.Violations, rep.Verdict)
	}
}

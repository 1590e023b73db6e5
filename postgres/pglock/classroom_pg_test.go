package pglock

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/postgres/pglocal"
	"github.com/zklockviz/zklockviz/simulator"
	"github.com/zklockviz/zklockviz/simulator/simtest"
)

// newClassManager is a classroom on its own PostgreSQL. When the test ends
// it checks that Close left no server process or directory.
func newClassManager(t *testing.T) *simulator.Manager {
	t.Helper()
	if err := pglocal.Installed(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	b := &Backend{}
	m, err := simulator.New(simulator.ManagerConfig{Backend: b, IdleTimeout: -1, ViewerGrace: -1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv := b.server()
		var pid int
		var dir string
		if srv != nil {
			pid, dir = srv.Pid(), srv.Dir()
		}
		if err := m.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		if srv == nil {
			return
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("postgres's directory %s is left after Close (stat: %v)", dir, err)
		}
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("postmaster pid %d is left after Close (kill 0: %v)", pid, err)
		}
	})
	return m
}

// playPg starts a built-in and steps it to its end, returning the state
// at every step.
func playPg(t *testing.T, m *simulator.Manager, name string) []simulator.State {
	t.Helper()
	r, err := m.Start(simulator.Spec{Scenario: name})
	if err != nil {
		t.Fatal(err)
	}
	states := []simulator.State{r.State()}
	for !r.Done() {
		if err := r.Step(); err != nil {
			t.Fatalf("step %d: %v", len(states), err)
		}
		states = append(states, r.State())
	}
	return states
}

// pgHolders are the clients the server's snapshot shows holding.
func pgHolders(s simulator.State) []string {
	byNode := map[string]string{}
	for _, c := range s.Clients {
		byNode[c.Node] = c.Name
	}
	var out []string
	for _, n := range s.Snapshot.Nodes {
		if n.Holding {
			out = append(out, byNode[n.Name])
		}
	}
	return out
}

// pgWaiters are the clients the server's snapshot shows waiting, in its order.
func pgWaiters(s simulator.State) []string {
	byNode := map[string]string{}
	for _, c := range s.Clients {
		byNode[c.Node] = c.Name
	}
	var out []string
	for _, n := range s.Snapshot.Nodes {
		if !n.Holding {
			out = append(out, byNode[n.Name])
		}
	}
	return out
}

func lockOrder(s simulator.State) []string {
	var out []string
	for _, e := range s.Events {
		if e.Event == simulator.EvLock && !strings.Contains(e.Text, "second") {
			out = append(out, e.Client)
		}
	}
	return out
}

func TestFIFOZeroPollingDeadConnection(t *testing.T) {
	m := newClassManager(t)
	for _, name := range []string{"pg-row-fifo", "pg-advisory-fifo"} {
		t.Run(name, func(t *testing.T) {
			states := playPg(t, m, name)
			last := states[len(states)-1]
			if last.Service != Name {
				t.Errorf("service %q, want %q", last.Service, Name)
			}
			if got, want := lockOrder(last), []string{"C1", "C2", "C3", "C4"}; !slices.Equal(got, want) {
				t.Errorf("hand-off order %v, want FIFO %v", got, want)
			}
			// Step 4: C1 holds, the rest queue in the server in arrival order.
			s4 := states[4]
			if got := pgHolders(s4); !slices.Equal(got, []string{"C1"}) {
				t.Errorf("step 4: server's holders %v, want [C1]", got)
			}
			if got := pgWaiters(s4); !slices.Equal(got, []string{"C2", "C3", "C4"}) {
				t.Errorf("step 4: server's waiters %v, want [C2 C3 C4]", got)
			}
			for _, n := range s4.Snapshot.Nodes {
				if !n.Holding && n.WaitsOn == lockqueue.OnPoll {
					t.Errorf("step 4: %s drawn as polling", n.Name)
				}
			}
			// Step 5 (wait): the server counted no statement from anyone.
			if before, after := states[4].Stats.Commands, states[5].Stats.Commands; before == 0 || after != before {
				t.Errorf("server's statement count %d before the wait, %d after: want unchanged and non-zero", before, after)
			}
			if states[5].Stats.Retries != 0 {
				t.Errorf("retries %d, want 0", states[5].Stats.Retries)
			}
			// Step 8: C2 crashed holding; C3 holds within the same step.
			s8 := states[8]
			if got := pgHolders(s8); !slices.Equal(got, []string{"C3"}) {
				t.Errorf("after C2's crash the server's holders are %v, want [C3]", got)
			}
			if i := slices.IndexFunc(s8.Events, func(e simulator.Event) bool { return e.Event == simulator.EvLock && e.Client == "C3" }); i < 0 || s8.Events[i].Step != 8 {
				t.Errorf("C3 did not get the lock in the crash's step: %+v", s8.Events)
			}
			if len(last.Violations) != 0 {
				t.Errorf("violations: %+v", last.Violations)
			}
		})
	}
}

// TestIdleInTransactionBlocksEveryone: pg-idle-in-tx tells C1's pause in
// three steps, each drawn from the server: the pause (C1 still holds,
// idle in transaction, and blocks everyone), the expiry (the server ends
// its session and hands the row to C2 at once; C1, still paused, believes
// it holds: a zombie) and the resume (C1 stale); its write then fails.
func TestIdleInTransactionBlocksEveryone(t *testing.T) {
	m := newClassManager(t)
	states := playPg(t, m, "pg-idle-in-tx")
	last := states[len(states)-1]
	alerts := func(s simulator.State) []string {
		var out []string
		for _, a := range s.Snapshot.Alerts {
			out = append(out, a.Kind)
		}
		return out
	}
	state := func(s simulator.State, name string) string {
		for _, c := range s.Clients {
			if c.Name == name {
				return c.State
			}
		}
		return ""
	}
	blocked := slices.ContainsFunc(last.Events, func(e simulator.Event) bool {
		return e.Step == 5 && e.Client == "C1" && strings.Contains(e.Text, "blocks everyone") && strings.Contains(e.Text, "C2, C3")
	})
	if !blocked {
		t.Errorf("no event says idle C1 blocks C2 and C3: %+v", last.Events)
	}
	steps := []struct {
		step    int
		holders []string
		c1      string
		alerts  []string
		// events are the step's, as "client kind"
		events []string
	}{
		{5, []string{"C1"}, simulator.StatePaused, []string{lockqueue.AlertIdleInTransaction}, []string{"C1 pause", "C1 wait"}},
		{6, []string{"C2"}, simulator.StatePaused, []string{lockqueue.AlertHolderExpired}, []string{"C1 expire", "C2 lock"}},
		{7, []string{"C2"}, simulator.StateStale, []string{lockqueue.AlertHolderExpired}, []string{"C1 resume"}},
	}
	for _, tt := range steps {
		s := states[tt.step]
		if got := pgHolders(s); !slices.Equal(got, tt.holders) {
			t.Errorf("step %d: the server's holders are %v, want %v", tt.step, got, tt.holders)
		}
		if got := state(s, "C1"); got != tt.c1 {
			t.Errorf("step %d: C1 is %s, want %s", tt.step, got, tt.c1)
		}
		if got := alerts(s); !slices.Equal(got, tt.alerts) {
			t.Errorf("step %d: alerts %v, want %v", tt.step, got, tt.alerts)
		}
		var got []string
		for _, e := range s.Events {
			if e.Step == tt.step {
				got = append(got, e.Client+" "+e.Event)
			}
		}
		if !slices.Equal(got, tt.events) {
			t.Errorf("step %d: events %v, want %v", tt.step, got, tt.events)
		}
	}
	// Before the pause C1 sits idle in its transaction too (while the
	// steps are taken), but that is not the story's: no alert.
	if got := alerts(states[4]); len(got) != 0 {
		t.Errorf("step 4: alerts %v, want none before the pause", got)
	}
	// The session ends only in the expire step (the pace test shows that
	// a slow lecturer gets this same story).
	sc, _ := Catalog.Builtin("pg-idle-in-tx")
	var told []simtest.Told
	for _, s := range states[1:] {
		told = append(told, simtest.Tell(s))
	}
	simtest.ExpiresOnlyWhen(t, told, sc.Steps, simulator.ActExpire)
	if got := pgWaiters(states[5]); !slices.Equal(got, []string{"C2", "C3"}) {
		t.Errorf("step 5: the server's waiters are %v, want C2, C3 behind the paused C1", got)
	}
	fenced := slices.ContainsFunc(last.Events, func(e simulator.Event) bool {
		return e.Step == 9 && e.Client == "C1" && e.Event == simulator.EvFenced
	})
	if !fenced {
		t.Errorf("C1's stale write was not refused: %+v", last.Events)
	}
	if len(last.Violations) != 0 {
		t.Errorf("violations: %+v", last.Violations)
	}
}

func TestDeadlockDetected(t *testing.T) {
	m := newClassManager(t)
	states := playPg(t, m, "pg-deadlock")
	last := states[len(states)-1]
	var aborted []string
	for _, e := range last.Events {
		if e.Event == EvDeadlock {
			aborted = append(aborted, e.Client)
			if !strings.Contains(e.Text, "40P01") {
				t.Errorf("deadlock event without 40P01: %s", e.Text)
			}
		}
	}
	if !slices.Equal(aborted, []string{"C2"}) {
		t.Fatalf("deadlock victims %v, want [C2] (the cycle's closer, whose check runs first)", aborted)
	}
	// Step 5 closes the cycle and shows it standing: each row a lock of
	// its own, one session holding it and the other waiting, and the
	// cycle across them naming both.
	s5 := states[5]
	byNode := map[string]string{}
	for _, c := range s5.Clients {
		byNode[c.Node] = c.Name
	}
	lanes := func(s simulator.State) []string {
		var out []string
		for _, l := range s.Locks {
			var holds, waits []string
			for _, n := range l.Nodes {
				if n.Holding {
					holds = append(holds, byNode[n.Name])
				} else {
					waits = append(waits, byNode[n.Name]+"→"+byNode[n.WaitsFor])
				}
			}
			out = append(out, fmt.Sprintf("holds %v waits %v", holds, waits))
		}
		return out
	}
	if got, want := lanes(s5), []string{"holds [C1] waits [C2→C1]", "holds [C2] waits [C1→C2]"}; !slices.Equal(got, want) {
		t.Errorf("step 5's rows: %q, want %q", got, want)
	}
	if s5.Cycle == nil || s5.Cycle.Kind != lockqueue.AlertWaitCycle {
		t.Fatalf("step 5 draws no wait cycle across the rows: %+v", s5.Cycle)
	}
	var cycle []string
	for _, n := range s5.Cycle.Nodes {
		cycle = append(cycle, byNode[n])
	}
	if !slices.Equal(cycle, []string{"C1", "C2"}) {
		t.Errorf("the cycle names %v, want [C1 C2] (C1 waits for C2, which waits for C1)", cycle)
	}
	// The cycle's waits name the run's clients, as the views draw them.
	var waits []string
	for _, st := range s5.CycleSteps {
		waits = append(waits, st.FromName+"→"+st.ToName)
	}
	if want := []string{"C1→C2", "C2→C1"}; !slices.Equal(waits, want) {
		t.Errorf("step 5's cycle waits %q, want %q", waits, want)
	}
	// Step 6: the detector broke it; the rows show what the server says
	// holds them, as C1's chip does.
	s6 := states[6]
	if got, want := lanes(s6), []string{"holds [C1] waits []", "holds [C1] waits []"}; !slices.Equal(got, want) {
		t.Errorf("after 40P01 the rows: %q, want %q", got, want)
	}
	if s6.Cycle != nil {
		t.Errorf("after 40P01 a cycle is still drawn: %+v", s6.Cycle)
	}
	i := slices.IndexFunc(s6.Snapshot.Alerts, func(a lockqueue.Alert) bool { return a.Kind == lockqueue.AlertWaitCycle })
	if i < 0 {
		t.Fatalf("step 6's snapshot keeps no broken wait-cycle alert: %+v", s6.Snapshot.Alerts)
	}
	var pids []string
	for _, c := range s6.Clients {
		pids = append(pids, c.Node)
	}
	slices.Sort(pids)
	got := slices.Sorted(slices.Values(s6.Snapshot.Alerts[i].Nodes))
	if !slices.Equal(got, pids) {
		t.Errorf("the broken cycle names %v, want both clients %v", got, pids)
	}
	if !slices.ContainsFunc(s6.Events, func(e simulator.Event) bool { return e.Step == 6 && e.Client == "C1" && e.Event == simulator.EvLock }) {
		t.Errorf("C1 was not granted row 2 when C2 was aborted: %+v", s6.Events)
	}
	if !slices.ContainsFunc(s6.Events, func(e simulator.Event) bool { return e.Step == 6 && e.Client == "C2" && e.Event == EvDeadlock }) {
		t.Errorf("C2's 40P01 is not step 6's: %+v", s6.Events)
	}
}

// TestPgScenarioRules: what a PostgreSQL scenario file may say.
func TestPgScenarioRules(t *testing.T) {
	// split is a row-lock plan with an idle timeout: C1 added, then steps.
	split := func(steps string) string {
		return `{"service":"postgres","name":"x","lock":"exclusive","params":{"lock":"row","idleInTxTimeoutMs":1000},"steps":[{"client":"C1","action":"add"},` + steps + `]}`
	}
	tests := []struct {
		name, file, err string
	}{
		{"built-in shape", `{"service":"postgres","name":"x","lock":"exclusive","params":{"lock":"row"},"steps":[{"client":"C1","action":"add"},{"client":"C1","action":"release"}]}`, ""},
		{"no lock kind", `{"service":"postgres","name":"x","lock":"exclusive","steps":[{"client":"C1","action":"add"}]}`, `params.lock ""`},
		{"pause never ends", `{"service":"postgres","name":"x","lock":"exclusive","params":{"lock":"row"},"steps":[{"client":"C1","action":"add"},{"client":"C1","action":"pause"}]}`, "never ends an idle transaction"},
		{"second lock on an advisory key", `{"service":"postgres","name":"x","lock":"exclusive","params":{"lock":"advisory"},"steps":[{"client":"C1","action":"add"},{"client":"C1","action":"lock-second"}]}`, "needs a row-lock scenario"},
		{"idle timeout on an advisory lock", `{"service":"postgres","name":"x","lock":"exclusive","params":{"lock":"advisory","idleInTxTimeoutMs":1000},"steps":[{"client":"C1","action":"add"}]}`, "needs a row lock"},
		{"split pause", split(`{"client":"C1","action":"pause"},{"client":"C1","action":"expire"},{"client":"C1","action":"resume"},{"client":"C1","action":"write"}`), ""},
		{"expire without a split plan's pause", split(`{"client":"C1","action":"expire"}`), "no session idle in its transaction to end: pause it first"},
		{"a crash has nothing to expire", split(`{"client":"C1","action":"crash"},{"client":"C1","action":"expire"}`), "a crash ends its session at once"},
		{"a paused holder waits for its expiry", split(`{"client":"C1","action":"pause"},{"client":"C1","action":"write"},{"client":"C1","action":"expire"}`), "its expire step must come first"},
		{"only resume follows the expiry", split(`{"client":"C1","action":"pause"},{"client":"C1","action":"expire"},{"client":"C1","action":"write"}`), "only resume can follow"},
		{"resume needs an expiry", split(`{"client":"C1","action":"pause"},{"client":"C1","action":"resume"},{"client":"C1","action":"expire"}`), "its expire step must come first"},
		{"expire is a split plan's", `{"service":"postgres","name":"x","lock":"exclusive","params":{"lock":"row","idleInTxTimeoutMs":1000},"steps":[{"client":"C1","action":"add"},{"client":"C1","action":"resume"}]}`, "tells a pause in steps"},
		{"no wake: the server hands over", split(`{"client":"C1","action":"pause"},{"client":"C1","action":"expire"},{"client":"C1","action":"wake"}`), `unknown action "wake"`},
		{"unknown action", `{"service":"postgres","name":"x","lock":"exclusive","params":{"lock":"row"},"steps":[{"client":"C1","action":"add-reader"}]}`, `unknown action "add-reader"`},
		{"another service", `{"service":"redis","name":"x","lock":"exclusive","params":{"lock":"row"},"steps":[{"client":"C1","action":"add"}]}`, `a PostgreSQL scenario says "service": "postgres"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Catalog.Parse([]byte(tt.file))
			switch {
			case tt.err == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Errorf("error %v, want one saying %q", err, tt.err)
			}
		})
	}
	// The teaching order first; scenario 12's pane (pg-side-by-side) after.
	if got, want := Catalog.Names(), []string{"pg-row-fifo", "pg-advisory-fifo", "pg-idle-in-tx", "pg-deadlock", "pg-side-by-side"}; !slices.Equal(got, want) {
		t.Errorf("built-ins %v, want %v", got, want)
	}
}

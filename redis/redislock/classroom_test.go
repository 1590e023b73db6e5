package redislock

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/zklockviz/zklockviz/fault"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/simulator"
)

// newManager is a classroom on its own redis-server. When the test ends it
// checks that the manager's Close left no server process or directory.
func newManager(t *testing.T) (*simulator.Manager, *Backend) {
	t.Helper()
	skipWithoutRedis(t)
	b := &Backend{QueueCost: measureQueue}
	m, err := simulator.New(simulator.ManagerConfig{Backend: b, IdleTimeout: -1, ViewerGrace: -1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv, _ := b.srv.Server()
		pid := 0
		if srv != nil {
			pid = srv.Pid()
		}
		if err := m.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		if srv == nil {
			return
		}
		if _, err := os.Stat(srv.Dir()); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("redis-server's directory %s is left after Close (stat: %v)", srv.Dir(), err)
		}
		if pid <= 0 {
			t.Errorf("redis-server had no pid while running")
		} else if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("redis-server pid %d is left after Close (kill 0: %v)", pid, err)
		}
	})
	return m, b
}

// skipWithoutRedis skips a test when redis-server is not installed, or
// fails it under CI=true.
func skipWithoutRedis(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis-server: %v", err)
		}
		t.Skipf("redis-server is not installed (apt-get install redis-server): %v", err)
	}
}

// play starts a built-in (fencing nil: the scenario's) and steps it to its
// end, returning the state at every step.
func play(t *testing.T, m *simulator.Manager, name string, fencing *bool) []simulator.State {
	t.Helper()
	r, err := m.Start(simulator.Spec{Scenario: name, Fencing: fencing})
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

func clientOf(t *testing.T, s simulator.State, name string) simulator.ClientInfo {
	t.Helper()
	for _, c := range s.Clients {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("step %d: no client %s in %+v", s.Step, name, s.Clients)
	return simulator.ClientInfo{}
}

// holder is the token the server's key holds at a step ("" when none).
func keyHolder(s simulator.State) string {
	for _, n := range s.Snapshot.Nodes {
		if n.Holding {
			return n.Client()
		}
	}
	return ""
}

func kinds(vs []simulator.Violation) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Kind+":"+v.Clients[0])
	}
	return out
}

// lockedAt is the step at which each client's lock event happened.
func lockedAt(s simulator.State) map[string]int {
	out := map[string]int{}
	for _, e := range s.Events {
		if e.Event == simulator.EvLock {
			out[e.Client] = e.Step
		}
	}
	return out
}

func TestScenarios(t *testing.T) {
	m, _ := newManager(t)
	off := false
	tests := []struct {
		name    string
		fencing *bool
		check   func(t *testing.T, st []simulator.State)
	}{
		{"redis-setnx-crash", nil, func(t *testing.T, st []simulator.State) {
			last := st[len(st)-1]
			c1 := clientOf(t, last, "C1")
			if c1.State != simulator.StateCrashed || keyHolder(last) != c1.Node {
				t.Errorf("C1 %s; the key holds %q, want C1's token %s for ever", c1.State, keyHolder(last), c1.Node)
			}
			for _, n := range last.Snapshot.Nodes {
				if n.Holding && n.LeaseLeftMs() != 0 {
					t.Errorf("the key has %d ms left, want no expiry", n.LeaseLeftMs())
				}
			}
			for _, n := range []string{"C2", "C3"} {
				if c := clientOf(t, last, n); c.State != simulator.StateWaiting || !c.Polling || c.Retries <= clientOf(t, st[5], n).Retries {
					t.Errorf("%s: %+v, want still polling, with more retries than at the crash", n, c)
				}
			}
			if got := lockedAt(last); len(got) != 1 {
				t.Errorf("locks %v: want C1's only", got)
			}
			if crash, end := st[5].Stats.Retries, last.Stats.Retries; end <= crash {
				t.Errorf("retries %d after the crash, %d at the end: want the waiters to poll on", crash, end)
			}
			polling := 0
			for _, n := range last.Snapshot.Nodes {
				if n.WaitsOn == "poll" {
					polling++
				}
			}
			if polling != 2 || len(last.Violations) != 0 {
				t.Errorf("%d polling nodes, violations %v: want 2, none", polling, last.Violations)
			}
		}},
		{"redis-px-pause", nil, func(t *testing.T, st []simulator.State) {
			last := st[len(st)-1]
			// The pause is four steps (4 to 7): after the resume the key
			// is C2's and C1 is stale.
			if c2 := clientOf(t, st[7], "C2"); keyHolder(st[7]) != c2.Node || clientOf(t, st[7], "C1").State != simulator.StateStale {
				t.Errorf("after the pause the key holds %q (C2 is %s), C1 is %s: want C2's, C1 stale", keyHolder(st[7]), c2.Node, clientOf(t, st[7], "C1").State)
			}
			redisKeyMoment(t, st)
			if got := kinds(last.Violations); !slices.Equal(got, []string{"unfenced-write:C1"}) {
				t.Fatalf("violations %v: want C1's stale write", last.Violations)
			}
			if v := last.Violations[0]; v.ForMs <= 0 || !slices.Contains(v.Clients, "C2") {
				t.Errorf("overlap %+v: want a duration > 0 with C2 holding", v)
			}
		}},
		{"redis-del-third", nil, func(t *testing.T, st []simulator.State) {
			last := st[len(st)-1]
			if got := lockedAt(last); len(got) != 3 {
				t.Errorf("clients that took the lock: %v, want C1, C2 and C3", got)
			}
			var del string
			for _, e := range last.Events {
				if e.Event == simulator.EvUnlock && e.Client == "C1" {
					del = e.Text
				}
			}
			if !strings.Contains(del, "deleted C2's lock") {
				t.Errorf("C1's release: %q, want it to delete C2's lock", del)
			}
			if got := kinds(last.Violations); !slices.Equal(got, []string{"unfenced-write:C1", "unfenced-write:C2"}) {
				t.Errorf("violations %v: want C1's and C2's stale writes", last.Violations)
			}
			if c2 := clientOf(t, last, "C2"); c2.State != simulator.StateStale {
				t.Errorf("C2 is %s, want stale (it believes it holds; the key is C3's)", c2.State)
			}
		}},
		{"redis-token-fencing", nil, func(t *testing.T, st []simulator.State) {
			last := st[len(st)-1]
			if len(last.Violations) != 0 {
				t.Errorf("violations %v: want none", last.Violations)
			}
			fenced := 0
			for _, e := range last.Events {
				if e.Event == simulator.EvFenced && e.Client == "C1" && e.Token == 1 {
					fenced++
				}
			}
			if fenced != 1 || last.Stats.Fenced != 1 {
				t.Errorf("%d fenced writes by C1 with token 1 (meter %d), want 1", fenced, last.Stats.Fenced)
			}
			if got := lockedAt(last)["C3"]; got != 12 {
				t.Errorf("C3 took the lock at step %d, want 12 (after C2's release, not C1's)", got)
			}
		}},
		{"redis-token-fencing", &off, func(t *testing.T, st []simulator.State) {
			last := st[len(st)-1]
			if got := kinds(last.Violations); !slices.Equal(got, []string{"unfenced-write:C1"}) {
				t.Errorf("violations %v: want C1's write, fencing off", last.Violations)
			}
			if got := lockedAt(last)["C3"]; got != 12 {
				t.Errorf("C3 took the lock at step %d, want 12", got)
			}
		}},
		{"redis-watchdog", nil, func(t *testing.T, st []simulator.State) {
			last := st[len(st)-1]
			c1 := clientOf(t, st[5], "C1")
			if keyHolder(st[5]) != c1.Node || st[5].Stats.Renewals == 0 {
				t.Errorf("after two waits (%d ms) the key holds %q, renewals %d: want C1's, renewed", st[5].ClockMs, keyHolder(st[5]), st[5].Stats.Renewals)
			}
			if got := lockedAt(last); got["C2"] != 6 || got["C3"] != 10 || got["C4"] != 12 {
				t.Errorf("locks at %v: want C2 at the pause (6), C3 at C2's release (10), C4 at C3's crash (12)", got)
			}
			woken := false
			for _, e := range last.Events {
				woken = woken || e.Event == simulator.EvNotify && e.Client == "C3" && e.Step == 10
			}
			if !woken || last.Stats.Notifications != 1 {
				t.Errorf("C3 woken by the unlock message: %v (notifications %d), want once", woken, last.Stats.Notifications)
			}
			if got := kinds(last.Violations); !slices.Equal(got, []string{"unfenced-write:C1"}) {
				t.Errorf("violations %v: want C1's stale write", last.Violations)
			}
			sawTooth(t, st)
		}},
		{"redis-spin-cost", nil, func(t *testing.T, st []simulator.State) {
			// The server's own count agrees with the clients' tries in the
			// wait steps (but R1's, whose default lockers' tries straddle
			// its edges), and it is what a queue would not spend.
			want := 0
			for k := 1; k < len(st); k++ {
				if st[k].Action.Action == ActWait && st[k].Action.Client != "R1" {
					want += st[k].Stats.Commands - st[k-1].Stats.Commands
				}
			}
			last := st[len(st)-1]
			if last.Stats.ServerCalls == 0 || last.Stats.ServerCalls != want {
				t.Errorf("server counted %d lock commands in the wait steps, the clients sent %d", last.Stats.ServerCalls, want)
			}
			winners := 0
			for _, e := range last.Events {
				if e.Event == simulator.EvLock && e.Client != "H" {
					winners++
					if !strings.Contains(e.Text, "polling keeps no order") {
						t.Errorf("hand-off: %q", e.Text)
					}
				}
			}
			if winners != 1 {
				t.Errorf("%d waiters took the lock after H's release, want 1", winners)
			}
			giveUps(t, st)
			queueCosts(t, st)
		}},
		{"redis-redlock-restart", nil, func(t *testing.T, st []simulator.State) {
			redlockTwoMajorities(t, st)
			redlockDelayedRestart(t, st)
		}},
		{"redis-redlock-clock", nil, redlockTwoMajorities},
	}
	for _, tt := range tests {
		name := tt.name
		if tt.fencing != nil {
			name += "/fencing-off"
		}
		t.Run(name, func(t *testing.T) {
			st := play(t, m, tt.name, tt.fencing)
			for _, s := range st {
				if s.Snapshot.Service != "redis" || s.Service != "redis" {
					t.Fatalf("step %d: service %q, snapshot's %q", s.Step, s.Service, s.Snapshot.Service)
				}
			}
			tt.check(t, st)
		})
	}
}

// TestPlanRules: a plan the key's rules cannot follow is refused before
// any client connects.
func TestPlanRules(t *testing.T) {
	b := &Backend{}
	sc, _ := Catalog.Builtin("redis-setnx-crash")
	redlock, _ := Catalog.Builtin("redis-redlock-restart")
	tests := []struct {
		name string
		plan []simulator.Action
		want string
		// redlock: the plan is for the five-master scenario.
		redlock bool
	}{
		{"added twice", []simulator.Action{{Client: "A", Action: "add"}, {Client: "A", Action: "add"}}, "step 2: add A: A is already in this run", false},
		{"never added", []simulator.Action{{Client: "A", Action: "add"}, {Client: "B", Action: "write"}}, "step 2: write B: unknown client B: add it first", false},
		{"Redlock client never added", []simulator.Action{{Client: "M1", Action: "stop"}, {Client: "A", Action: "release"}}, "step 2: release A: unknown client A", true},
		{"Redlock master stopped twice", []simulator.Action{{Client: "M1", Action: "stop"}, {Client: "M1", Action: "stop"}}, "step 2: stop M1: M1 is down", true},
		{"Redlock master out after its delayed restart", []simulator.Action{{Client: "M1", Action: "restart-delayed"}, {Client: "M1", Action: "restart"}}, "step 2: restart M1: M1 is down", true},
		{"pause without expiry", []simulator.Action{{Client: "A", Action: "add"}, {Client: "A", Action: "pause"}}, "no expiry", false},
		{"waiter writes", []simulator.Action{{Client: "A", Action: "add"}, {Client: "B", Action: "add"}, {Client: "B", Action: "write"}}, "step 3: write B: the plan gives B no lock to write under at that step", false},
		{"unknown action", []simulator.Action{{Client: "A", Action: "add-reader"}}, "unknown action", false},
		{"master action without masters", []simulator.Action{{Client: "M1", Action: "restart"}}, "only a Redlock scenario", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			on := sc
			if tt.redlock {
				on = redlock
			}
			err := b.DryRun(on, tt.plan)
			if err == nil || !errors.Is(err, fault.Invalid) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("DryRun: %v, want an invalid plan saying %q", err, tt.want)
			}
		})
	}
}

// TestSplitPlanRules: a pause told in steps (expire, wake, resume) keeps
// its order, or the plan is refused before any client connects.
func TestSplitPlanRules(t *testing.T) {
	b := &Backend{}
	px, _ := Catalog.Builtin("redis-px-pause")
	redlock, _ := Catalog.Builtin("redis-redlock-restart")
	steps := func(s string) []simulator.Action {
		var out []simulator.Action
		for _, part := range strings.Split(s, ", ") {
			f := strings.Fields(part)
			out = append(out, simulator.Action{Client: f[0], Action: f[1]})
		}
		return out
	}
	tests := []struct {
		name string
		sc   *simulator.Scenario
		plan string
		want string // "" for a plan the rules take
	}{
		{"the scenario's own", px, "C1 add, C2 add, C1 pause, C1 expire, C2 wake, C1 resume, C2 write, C1 write", ""},
		{"cut holder writes", px, "C1 add, C2 add, C1 pause, C1 write, C1 expire", "step 4: write C1: C1 is cut off: its expire step must come first"},
		{"lapsed holder writes", px, "C1 add, C2 add, C1 pause, C1 expire, C1 write", "only resume can follow"},
		{"expire without a cut", px, "C1 add, C1 expire", "no key running out"},
		{"resume after a crash", px, "C1 add, C1 crash, C1 expire, C1 resume", "C1 is not paused past its key's expiry"},
		{"wake in an unsplit plan", px, "C1 add, C2 add, C2 wake", "tells a pause in steps"},
		{"on Redlock", redlock, "C1 add, C1 expire", "not staged on Redlock"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := b.DryRun(tt.sc, steps(tt.plan))
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("DryRun: %v, want the plan taken", err)
			case tt.want != "" && (err == nil || !errors.Is(err, fault.Invalid) || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("DryRun: %v, want an invalid plan saying %q", err, tt.want)
			}
		})
	}
}

// TestNotInstalled: without redis-server only the Redis scenarios are
// unavailable, and they say which package to install.
func TestNotInstalled(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, m, err := NewClassroomWith(simulator.ManagerConfig{IdleTimeout: -1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, sc := range m.Scenarios() {
		if !strings.Contains(sc.Unavailable, "apt-get install redis-server") {
			t.Errorf("scenario %s: unavailable %q, want the package named", sc.ID, sc.Unavailable)
		}
	}
	_, err = m.Start(simulator.Spec{Scenario: "redis-px-pause"})
	if !errors.Is(err, fault.Unavailable) || !strings.Contains(err.Error(), "apt-get install redis-server") {
		t.Errorf("Start: %v, want unavailable naming the package", err)
	}
}

// redisKeyMoment checks redis-px-pause's key moment, a step each: the
// pause leaves C1's key with its time left, the expiry deletes it while
// C1, stopped, still believes it holds, C2's next try takes it, and C1
// resumes stale, stale since the expiry.
func redisKeyMoment(t *testing.T, st []simulator.State) {
	t.Helper()
	c1 := clientOf(t, st[1], "C1").Node
	c2 := clientOf(t, st[2], "C2").Node
	want := []struct {
		step    int
		action  string
		c1State string
		holder  string
		says    string
	}{
		{4, simulator.ActPause, simulator.StatePaused, c1, "stops (a long GC pause)"},
		{5, simulator.ActExpire, simulator.StatePaused, "", "believes it holds the lock"},
		{6, simulator.ActWake, simulator.StatePaused, c2, "the key was free, it holds the lock"},
		{7, simulator.ActResume, simulator.StateStale, c2, "still believes it holds"},
	}
	for _, w := range want {
		s := st[w.step]
		// Once the key is gone, C1 still believing it holds is an alert
		// naming its token: the key cannot show it.
		alerted := slices.ContainsFunc(s.Snapshot.Alerts, func(a lockqueue.Alert) bool {
			return a.Kind == lockqueue.AlertHolderExpired && slices.Equal(a.Nodes, []string{c1}) && strings.Contains(a.Message, "still believes it holds")
		})
		if alerted != (w.step > 4) {
			t.Errorf("step %d: a zombie-holder alert on C1's token: %v, want %v (alerts %+v)", w.step, alerted, w.step > 4, s.Snapshot.Alerts)
		}
		if s.Action.Action != w.action || clientOf(t, s, "C1").State != w.c1State || keyHolder(s) != w.holder || !strings.Contains(s.Narration, w.says) {
			t.Errorf("step %d: %s, C1 %s, the key %q, %q; want %s, %s, %q, saying %q",
				w.step, s.Action.Action, clientOf(t, s, "C1").State, keyHolder(s), s.Narration, w.action, w.c1State, w.holder, w.says)
		}
	}
	if c := clientOf(t, st[7], "C1"); c.Since != 5 {
		t.Errorf("C1 stale since step %d, want 5 (its key's expiry)", c.Since)
	}
}

// redlockTwoMajorities: after C2 locks (step 7), two of the five masters
// still hold C1's copy and three hold C2's: C1 believes it holds, C2 holds
// a majority, and C1's write is flagged.
func redlockTwoMajorities(t *testing.T, st []simulator.State) {
	s := st[7]
	c1, c2 := clientOf(t, s, "C1"), clientOf(t, s, "C2")
	on := map[string][]string{}
	for _, n := range s.Snapshot.Nodes {
		if n.Folder() != "" {
			on[n.Client()] = append(on[n.Client()], n.Folder())
		}
	}
	if !slices.Equal(on[c1.Node], []string{"M1", "M2"}) || !slices.Equal(on[c2.Node], []string{"M3", "M4", "M5"}) {
		t.Errorf("masters at step 7: %v; want C1's token on M1, M2 and C2's on M3, M4, M5", on)
	}
	if c1.State != simulator.StateStale || c2.State != simulator.StateHolding || keyHolder(s) != c2.Node {
		t.Errorf("C1 %s, C2 %s, holder %q: want C1 stale (it believes it holds), C2 holding", c1.State, c2.State, keyHolder(s))
	}
	last := st[len(st)-1]
	if got := kinds(last.Violations); !slices.Equal(got, []string{"unfenced-write:C1"}) {
		t.Errorf("violations %v: want C1's write", last.Violations)
	}
	// C1's copies on M1 and M2 still had time left: what it lost is its
	// majority, not its key.
	for _, v := range last.Violations {
		if !strings.Contains(v.Message, "no longer made a majority") || strings.Contains(v.Message, "no longer its own") {
			t.Errorf("violation %q: want it to say C1 lost its majority", v.Message)
		}
	}
	fiveMasters(t, st)
}

// redlockDelayedRestart: the restart scenario's second half. M3, restarted
// with Redlock's delay, stays out: C3 keeps its majority as Redlock counts
// it, C4 finds none until C3 releases.
func redlockDelayedRestart(t *testing.T, st []simulator.State) {
	t.Helper()
	if got, want := mastersAt(st[18]), []string{"M1:C3", "M2:C3", "M3:down", "M4:-", "M5:-"}; !slices.Equal(got, want) {
		t.Errorf("masters after C4's try: %v, want %v", got, want)
	}
	if c3, c4 := clientOf(t, st[19], "C3"), clientOf(t, st[19], "C4"); c3.State != simulator.StateHolding || c4.State != simulator.StateWaiting {
		t.Errorf("step 19: C3 %s, C4 %s; want C3 holding while M3 is out, C4 waiting", c3.State, c4.State)
	}
	if c4 := clientOf(t, st[20], "C4"); c4.State != simulator.StateHolding || keyHolder(st[20]) != c4.Node {
		t.Errorf("step 20: C4 %s, holder %q; want C4 holding after C3's release", c4.State, keyHolder(st[20]))
	}
	if !slices.ContainsFunc(st[18].Snapshot.Alerts, func(a lockqueue.Alert) bool {
		return strings.Contains(a.Message, "M3") && strings.Contains(a.Message, "rejoins no sooner")
	}) {
		t.Errorf("step 18 alerts %+v: want M3 said to be out until the TTL", st[18].Snapshot.Alerts)
	}
	if got := mastersAt(st[len(st)-1]); !slices.Equal(got, []string{"M1:-", "M2:-", "M3:-", "M4:-", "M5:-"}) {
		t.Errorf("masters at the end: %v, want M3 back and every copy released", got)
	}
}

// TestActAfterBack: acting from an earlier step replays the run on a fresh
// key (the engine's fork), and the old key is gone from the server.
func TestActAfterBack(t *testing.T) {
	m, b := newManager(t)
	r, err := m.Start(simulator.Spec{Scenario: "redis-px-pause"})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Seek(3); err != nil {
		t.Fatal(err)
	}
	old := r.State().Path
	if err := r.Seek(2); err != nil {
		t.Fatal(err)
	}
	if err := r.Act("C3", simulator.ActAdd); err != nil {
		t.Fatal(err)
	}
	s := r.State()
	if s.Step != 3 || s.Path != old+".1" {
		t.Fatalf("step %d on %s, want step 3 on %s.1", s.Step, s.Path, old)
	}
	if c1, c3 := clientOf(t, s, "C1"), clientOf(t, s, "C3"); c1.State != simulator.StateHolding || !c3.Polling || keyHolder(s) != c1.Node {
		t.Errorf("C1 %s, C3 %+v, holder %q: want C1 holding on the fresh key, C3 polling", c1.State, c3, keyHolder(s))
	}
	obs := redis.NewClient(&redis.Options{Addr: b.Addr()})
	defer obs.Close()
	if n, err := obs.Exists(t.Context(), old).Result(); err != nil || n != 0 {
		t.Errorf("the replaced key %s: exists %d (%v), want deleted", old, n, err)
	}
}

// The fencing box ticked where the recipe gives no token (redis-px-pause:
// SET NX PX, no counter) cannot help: the resource refuses every write,
// the rightful holder's too, and the verdict says so, not that fencing
// caught a stale write (Kleppmann's point is that fencing needs a token).
func TestFencingWithoutATokenSaysSo(t *testing.T) {
	m, _ := newManager(t)
	on := true
	st := play(t, m, "redis-px-pause", &on)
	last := st[len(st)-1]
	if last.Stats.Writes == 0 || last.Stats.Fenced != last.Stats.Writes || last.Stats.Tokenless != last.Stats.Fenced {
		t.Errorf("writes %d, refused %d, tokenless %d: want every write refused for carrying no token",
			last.Stats.Writes, last.Stats.Fenced, last.Stats.Tokenless)
	}
	if v := last.Verdict; v.StaleWrite != simulator.StaleNoToken || !strings.Contains(v.Summary, "the recipe gives no token") ||
		strings.Contains(v.Summary, "caught") {
		t.Errorf("verdict %+v: want no-token, saying fencing could not work", v)
	}
}

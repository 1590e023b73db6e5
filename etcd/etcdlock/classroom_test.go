package etcdlock_test

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/zklockviz/zklockviz/etcd/etcdlock"
	"github.com/zklockviz/zklockviz/fault"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/simulator"
)

// newClassroom is a classroom on its own etcd. When the test ends it
// checks that the manager's Close left no server process or directory.
func newClassroom(t *testing.T) *simulator.Manager {
	t.Helper()
	b := &etcdlock.Backend{}
	if err := b.Available(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	m, err := simulator.New(simulator.ManagerConfig{Backend: b, IdleTimeout: -1, ViewerGrace: -1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv := b.Server()
		if err := m.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		if srv == nil {
			return
		}
		if _, err := os.Stat(srv.Dir()); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("etcd's directory %s is left after Close (stat: %v)", srv.Dir(), err)
		}
		if pid := srv.Pid(); pid > 0 {
			if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("etcd pid %d is left after Close (kill 0: %v)", pid, err)
			}
		}
	})
	return m
}

// playEtcd starts a built-in (fencing nil: the scenario's) and steps it to
// its end, returning the state at every step and the report.
func playEtcd(t *testing.T, m *simulator.Manager, name string, fencing *bool) ([]simulator.State, simulator.Report) {
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
	return states, r.Report()
}

func client(t *testing.T, s simulator.State, name string) simulator.ClientInfo {
	t.Helper()
	for _, c := range s.Clients {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("step %d: no client %s in %+v", s.Step, name, s.Clients)
	return simulator.ClientInfo{}
}

// serverQueue is the snapshot's keys, holder first, each as its owner's
// name and what it waits for, as the server and lockqueue's rules say:
// "C1 C2>C1 C4>C2".
func serverQueue(t *testing.T, s simulator.State) string {
	t.Helper()
	owner := map[string]string{}
	for _, c := range s.Clients {
		owner[c.Node] = c.Name
	}
	var out []string
	for _, n := range s.Snapshot.Nodes {
		o := owner[n.Name]
		if o == "" {
			t.Fatalf("step %d: key %s belongs to no client", s.Step, n.Name)
		}
		switch {
		case n.Holding:
			out = append(out, o)
		case n.WaitsFor != "":
			out = append(out, o+">"+owner[n.WaitsFor])
		default:
			out = append(out, o+"?")
		}
	}
	return strings.Join(out, " ")
}

func TestMutexQueueScenario(t *testing.T) {
	m := newClassroom(t)
	st, rep := playEtcd(t, m, "etcd-mutex-queue", nil)
	// The queue at each step, read from etcd and built by lockqueue's
	// rules; the holder is the key with the smallest create revision.
	want := []string{
		1: "C1", 2: "C1 C2>C1", 3: "C1 C2>C1 C3>C2", 4: "C1 C2>C1 C3>C2 C4>C3",
		5: "C1 C2>C1 C3>C2 C4>C3",
		6: "C1 C2>C1 C4>C2", // C3 left from the middle: C4 now waits on C2
		7: "C2 C4>C2", 8: "C2 C4>C2", 9: "C4", 10: "C4", 11: "",
	}
	for k := 1; k < len(st); k++ {
		s := st[k]
		if s.Snapshot.Service != etcdlock.Name {
			t.Errorf("step %d: snapshot service %q, want %q", k, s.Snapshot.Service, etcdlock.Name)
		}
		if got := serverQueue(t, s); got != want[k] {
			t.Errorf("step %d: server queue %q, want %q", k, got, want[k])
		}
	}
	// Tokens: create revisions, increasing in the order the clients joined.
	last := st[len(st)-1]
	if c4 := client(t, last, "C4"); c4.Token <= client(t, last, "C2").Token || client(t, last, "C2").Token <= client(t, last, "C1").Token {
		t.Errorf("fencing tokens C1 %d, C2 %d, C4 %d: want increasing create revisions", client(t, last, "C1").Token, client(t, last, "C2").Token, c4.Token)
	}
	if c3 := client(t, last, "C3"); c3.State != simulator.StateReleased || c3.Token != 0 {
		t.Errorf("C3 after leaving: %s token %d, want released without a token", c3.State, c3.Token)
	}
	if len(rep.Violations) != 0 {
		t.Errorf("violations %+v, want none", rep.Violations)
	}
	// Each hand-off after an Unlock is timed, from the delete to Lock's return.
	var handOffs []string
	for _, e := range rep.Events {
		if e.Event == simulator.EvLock && strings.Contains(e.Text, "hand-off") {
			handOffs = append(handOffs, e.Client)
		}
	}
	if !slices.Equal(handOffs, []string{"C2", "C4"}) {
		t.Errorf("timed hand-offs to %v, want C2 and C4", handOffs)
	}
	// Predecessor watching: C4's watch fires when C3 leaves (step 6), C2's
	// when C1 releases (7), C4's when C2 releases (9): one event per
	// deleted key, to the one waiter behind it; no herd.
	var perStep []int
	for _, s := range rep.Steps {
		perStep = append(perStep, s.Stats.Notifications)
	}
	if want := []int{0, 0, 0, 0, 0, 1, 1, 0, 1, 0, 0}; !slices.Equal(perStep, want) || rep.Stats.Notifications != 3 {
		t.Errorf("watch events per step %v (total %d), want %v", perStep, rep.Stats.Notifications, want)
	}
	if rep.Service != etcdlock.Name || rep.Stats.Writes != 3 || rep.Stats.Fenced != 0 {
		t.Errorf("report: service %q, writes %d, fenced %d; want etcd, 3, 0", rep.Service, rep.Stats.Writes, rep.Stats.Fenced)
	}
}

func TestLeasePauseScenario(t *testing.T) {
	m := newClassroom(t)
	off := false
	for _, tc := range []struct {
		name    string
		fencing *bool
	}{{"fencing on (the scenario's)", nil}, {"fencing off", &off}} {
		t.Run(tc.name, func(t *testing.T) {
			st, rep := playEtcd(t, m, "etcd-lease-pause", tc.fencing)
			at := func(k int) simulator.State { return st[k] }
			// Steps 5 to 8, the key moment told in steps. 5: C1 paused; its
			// key stays (the classroom keeps the lease's clock still), drawn
			// as a zombie.
			if got := serverQueue(t, at(5)); got != "C1 C2>C1 C3>C2" {
				t.Errorf("after C1's pause the server says %q, want C1's key still first", got)
			}
			if c1 := client(t, at(5), "C1"); c1.State != simulator.StatePaused {
				t.Errorf("C1 after its pause: %s, want paused", c1.State)
			}
			if !slices.ContainsFunc(at(5).Snapshot.Nodes, func(n lockqueue.Node) bool { return n.Zombie && n.Name == client(t, at(5), "C1").Node }) {
				t.Errorf("step 5 nodes %+v: want C1's key drawn as a zombie", at(5).Snapshot.Nodes)
			}
			// 6: the lease ran out and etcd deleted C1's key; C2 is woken
			// but holds only in the next step, and the narration says why.
			if c2 := client(t, at(6), "C2"); c2.State != simulator.StateWaiting {
				t.Errorf("C2 after C1's expiry: %s, want still waiting (the hand-over is step 7)", c2.State)
			}
			if n := at(6).Narration; !strings.Contains(n, "C1's 2 s lease ran out") || !strings.Contains(n, "within milliseconds") {
				t.Errorf("step 6 narration %q, want C1's 2 s lease ran out, and why the hand-over is a step of its own", n)
			}
			// 7: the hand-over.
			if got := serverQueue(t, at(7)); got != "C2 C3>C2" {
				t.Errorf("after the hand-over the server says %q, want C2 holding, C3 waiting on it", got)
			}
			if c2, c1 := client(t, at(7), "C2"), client(t, at(7), "C1"); c2.State != simulator.StateHolding || c1.State != simulator.StatePaused {
				t.Errorf("step 7: C2 %s, C1 %s; want C2 holding, C1 still paused", c2.State, c1.State)
			}
			// 8: C1 resumes, believing it holds.
			if c1 := client(t, at(8), "C1"); c1.State != simulator.StateStale {
				t.Errorf("C1 after its resume: %s, want stale (believes it holds)", c1.State)
			}
			for _, k := range []int{6, 7, 8} {
				if !slices.ContainsFunc(at(k).Snapshot.Alerts, func(a lockqueue.Alert) bool { return a.Kind == "holder-expired" }) {
					t.Errorf("step %d alerts %+v, want holder-expired", k, at(k).Snapshot.Alerts)
				}
			}
			// The narration tells the lease as C1's, and every token of a
			// message in one form: the revision, in decimal.
			words := at(10).Narration
			for _, v := range rep.Violations {
				words += " " + v.Message
			}
			if strings.Contains(words, "0x") || !strings.Contains(words, "token ") {
				t.Errorf("step 10 narration and violations %q: want the tokens as revisions, none in hex", words)
			}
			c1, c2 := client(t, at(10), "C1"), client(t, at(10), "C2")
			if c1.Token >= c2.Token {
				t.Errorf("tokens C1 %d, C2 %d: want C1's create revision older", c1.Token, c2.Token)
			}
			// Step 10: the stale C1 writes without a check.
			var c1Write string
			for _, e := range at(10).Events {
				if e.Step == 10 && e.Client == "C1" {
					c1Write = e.Event
				}
			}
			var stale []string
			for _, v := range rep.Violations {
				stale = append(stale, v.Kind+":"+v.Clients[0])
			}
			if tc.fencing == nil {
				if c1Write != simulator.EvFenced || rep.Stats.Fenced != 1 || len(rep.Violations) != 0 {
					t.Errorf("fencing on: C1's stale write %q, fenced %d, violations %v; want refused by the resource, none", c1Write, rep.Stats.Fenced, stale)
				}
			} else {
				if c1Write != simulator.EvWrite || !slices.Equal(stale, []string{"unfenced-write:C1"}) {
					t.Errorf("fencing off: C1's stale write %q, violations %v; want accepted and flagged as unfenced-write:C1", c1Write, stale)
				} else if rep.Violations[0].ForMs < 2000 {
					t.Errorf("overlap lasted %d ms on the run's clock, want at least the 2 s lease", rep.Violations[0].ForMs)
				}
			}
			// Step 15: C2, paused past its lease, checks before writing and stops.
			if c2 := client(t, at(15), "C2"); c2.State != simulator.StateReleased {
				t.Errorf("C2 after its checked write: %s, want released (it stopped)", c2.State)
			}
			if slices.ContainsFunc(at(15).Events, func(e simulator.Event) bool {
				return e.Step == 15 && (e.Event == simulator.EvWrite || e.Event == simulator.EvFenced)
			}) {
				t.Errorf("C2 wrote after its check: %+v", at(15).Events)
			}
			if got := serverQueue(t, at(15)); got != "C3" {
				t.Errorf("step 15 server queue %q, want C3 holding", got)
			}
			if got := serverQueue(t, st[len(st)-1]); got != "" {
				t.Errorf("at the end the server has %q, want no key", got)
			}
			if rep.Stats.Renewals == 0 {
				t.Errorf("no keep-alive counted: the sessions' renewals should show")
			}
		})
	}
}

func TestPlanRules(t *testing.T) {
	sc, ok := etcdlock.Catalog.Builtin("etcd-mutex-queue")
	if !ok {
		t.Fatal("no etcd-mutex-queue")
	}
	b := &etcdlock.Backend{}
	add := func(n string) simulator.Action { return simulator.Action{Client: n, Action: simulator.ActAdd} }
	for _, tc := range []struct {
		name string
		plan []simulator.Action
		want string
	}{
		{"a holder cannot leave", []simulator.Action{add("C1"), {Client: "C1", Action: etcdlock.ActLeave}}, "only a waiter leaves, and the plan has given C1 the lock by that step"},
		{"a waiter cannot write", []simulator.Action{add("C1"), add("C2"), {Client: "C2", Action: simulator.ActWrite}}, "the plan gives C2 no lock to write under at that step"},
		{"a waiter is not paused", []simulator.Action{add("C1"), add("C2"), {Client: "C2", Action: simulator.ActPause}}, "the plan gives C2 no lock to pause with at that step: only a holder's pause"},
		{"unknown action", []simulator.Action{add("C1"), {Client: "C1", Action: "wait"}}, "unknown action"},
		{"a wake needs a plan told in steps", []simulator.Action{add("C1"), add("C2"), {Client: "C2", Action: simulator.ActWake}}, "is for a scenario that tells a pause in steps"},
		{"a cut holder waits for its expiry", []simulator.Action{add("C1"), {Client: "C1", Action: simulator.ActPause}, {Client: "C1", Action: simulator.ActWrite}, {Client: "C1", Action: simulator.ActExpire}}, "C1 is cut off: its expire step must come first"},
		{"a wake follows an expiry", []simulator.Action{add("C1"), add("C2"), {Client: "C1", Action: simulator.ActPause}, {Client: "C2", Action: simulator.ActWake}, {Client: "C1", Action: simulator.ActExpire}}, "no expire step has come before it"},
		{"the hand-over is the wake's", []simulator.Action{add("C1"), add("C2"), {Client: "C1", Action: simulator.ActPause}, {Client: "C1", Action: simulator.ActExpire}, {Client: "C2", Action: simulator.ActWrite}}, "the plan gives C2 no lock to write under at that step"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := b.DryRun(sc, tc.plan)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, fault.Invalid) {
				t.Errorf("DryRun: %v, want an invalid-plan error saying %q", err, tc.want)
			}
		})
	}
	if err := b.DryRun(sc, sc.Steps); err != nil {
		t.Errorf("the built-in's own plan: %v", err)
	}
}

func TestClassroomNotInstalled(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	m, err := simulator.New(simulator.ManagerConfig{Backend: &etcdlock.Backend{}, IdleTimeout: -1, ViewerGrace: -1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, sc := range m.Scenarios() {
		if !strings.Contains(sc.Unavailable, "etcd-server") {
			t.Errorf("scenario %s: unavailable %q, want the package to install (etcd-server)", sc.Name, sc.Unavailable)
		}
	}
	_, err = m.Start(simulator.Spec{Scenario: "etcd-mutex-queue"})
	if !errors.Is(err, fault.Unavailable) || !strings.Contains(err.Error(), "etcd-server") {
		t.Errorf("start: %v, want unavailable naming etcd-server", err)
	}
}

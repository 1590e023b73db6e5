package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/simulator"
)

// factsReport decodes a sim run's JSON report; run is one of the simX
// helpers, which build, run and clean up after the binary.
func factsReport(t *testing.T, code int, out []byte, stderr string) simulator.Report {
	t.Helper()
	var rep simulator.Report
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("exit %d, report: %v\nstderr: %s\n%s", code, err, stderr, out)
	}
	if rep.Error != "" {
		t.Fatalf("run failed: %s", rep.Error)
	}
	return rep
}

// eventText is the text of the first event of kind by client, "" if none.
func eventText(rep simulator.Report, client, kind string) string {
	for _, e := range rep.Events {
		if e.Client == client && e.Event == kind {
			return e.Text
		}
	}
	return ""
}

// hasLine reports whether some pseudocode line contains every one of parts.
func hasLine(lines []string, parts ...string) bool {
	return slices.ContainsFunc(lines, func(l string) bool {
		for _, p := range parts {
			if !strings.Contains(l, p) {
				return false
			}
		}
		return true
	})
}

// TestSimFactsRedis: the facts a lecturer states from Redis's classroom,
// read from the CLI's report: the fencing token taken in the key's own
// script (a separate INCR after the SET lets a pause give the stale holder
// the higher token) with the failover caveat, and Redlock's validity check.
func TestSimFactsRedis(t *testing.T) {
	needRedis(t)
	t.Run("token", func(t *testing.T) {
		code, out, stderr := simRedis(t, nil, "--scenario", "redis-token-fencing", "--format", "json")
		rep := factsReport(t, code, out, stderr)
		if !hasLine(rep.Pseudocode, "EVAL", "SET K token NX PX", "INCR K:fence") || hasLine(rep.Pseudocode, "fence = INCR") {
			t.Errorf("pseudocode %q: want SET NX PX and INCR in one EVAL, no INCR of its own", rep.Pseudocode)
		}
		if got := eventText(rep, "C2", simulator.EvLock); !strings.Contains(got, "same script") || !strings.Contains(got, "fencing token 2") {
			t.Errorf("C2's lock: %q, want its token 2 from the same script", got)
		}
		if got := eventText(rep, "C1", simulator.EvFenced); !strings.Contains(got, "failover") || !strings.Contains(got, "asynchronous replication") {
			t.Errorf("C1's refused write: %q, want the failover caveat", got)
		}
		// One command per acquisition: the script, not a SET and an INCR.
		for _, s := range rep.Steps {
			if s.Step == 1 && s.Stats.Commands != 1 {
				t.Errorf("step 1 (C1 takes the free key) cost %d commands, want 1", s.Stats.Commands)
			}
		}
	})
	t.Run("spin", func(t *testing.T) {
		// A queued waiter sends no lock command, but it is not silent: the
		// figures the scenario prints count its heartbeats.
		code, out, stderr := simRedis(t, nil, "--scenario", "redis-spin-cost", "--format", "json")
		rep := factsReport(t, code, out, stderr)
		var costs []string
		for _, e := range rep.Events {
			if e.Event == "queue-cost" {
				costs = append(costs, e.Text)
			}
		}
		if len(costs) != 2 || !strings.Contains(costs[0], "heartbeats") || !strings.Contains(costs[1], "keep-alives") {
			t.Errorf("queue costs %q: want ZooKeeper's heartbeats and etcd's keep-alives named", costs)
		}
		for _, text := range append(costs, rep.Title) {
			if strings.Contains(text, "sends nothing") {
				t.Errorf("%q: a queued waiter is said to send nothing", text)
			}
		}
	})
	t.Run("redlock", func(t *testing.T) {
		code, out, stderr := simRedis(t, nil, "--scenario", "redis-redlock-restart", "--format", "json")
		rep := factsReport(t, code, out, stderr)
		if !hasLine(rep.Pseudocode, "validity", "now − start", "drift") || !hasLine(rep.Pseudocode, "validity ≤ 0", "goto 1") ||
			!hasLine(rep.Pseudocode, "only while validity lasts") {
			t.Errorf("pseudocode %q: want the validity check (elapsed and drift under the expiry) before the work", rep.Pseudocode)
		}
		for _, v := range rep.Violations {
			if strings.Contains(v.Message, "no longer its own") || !strings.Contains(v.Message, "majority") {
				t.Errorf("violation %q: want C1's lost majority, not a lost key", v.Message)
			}
			if v.Steps[len(v.Steps)-1] > 9 {
				t.Errorf("violation %q at steps %v: the delayed restart (steps 10-23) must leave no second holder", v.Message, v.Steps)
			}
		}
		// The fix after the hazard: M3 restarts with Redlock's delay, C4
		// finds no majority while it is out, and holds only after C3's
		// release; M3 rejoins after the TTL.
		for k, want := range map[int][]string{
			17: {"M3 restart-delayed"}, 18: {"C4 wait"}, 19: {"C3 write"}, 20: {"C3 unlock", "C4 lock"}, 23: {"M3 start"},
		} {
			if got := stepEvents(rep, k); !slices.Equal(got, want) {
				t.Errorf("step %d: %q, want %q", k, got, want)
			}
		}
		if got := eventText(rep, "M3", "restart-delayed"); !strings.Contains(got, "stays out for at least the longest TTL (10000 ms)") || !strings.Contains(got, "C3 still holds a majority") {
			t.Errorf("M3's delayed restart: %q, want the delay and why C3 still holds", got)
		}
		if got := eventText(rep, "C4", simulator.EvWait); !strings.Contains(got, "no majority") || !strings.Contains(got, "M3 is out") {
			t.Errorf("C4's failed try: %q, want no majority while M3 is out", got)
		}
		if got := eventText(rep, "C1", simulator.EvUnlock); strings.Contains(got, "plain DEL") {
			t.Errorf("C1's release: %q, redsync's compare-and-delete deletes no other client's copies", got)
		}
	})
}

// TestSimFactsPostgres: a crash frees the lock because the socket closed
// (a partition would wait for TCP keepalive), the side-by-side pane
// shows no line that never runs and names what refused the stale write,
// and pg-idle-in-tx's key moment is three steps whose narration says what
// changed, that the timeout was applied only in the expire step, and why
// the hand-over is no step of its own.
func TestSimFactsPostgres(t *testing.T) {
	t.Run("crash", func(t *testing.T) {
		code, out, stderr := simPostgresCLI(t, "--scenario", "pg-row-fifo", "--format", "json")
		rep := factsReport(t, code, out, stderr)
		got := eventText(rep, "C2", simulator.EvCrash)
		for _, want := range []string{"closes its socket", "partition", "TCP keepalive", "two hours", "ZooKeeper session"} {
			if !strings.Contains(got, want) {
				t.Errorf("C2's crash: %q, want %q", got, want)
			}
		}
	})
	t.Run("side", func(t *testing.T) {
		code, out, stderr := simPostgresCLI(t, "--scenario", "pg-side-by-side", "--format", "json")
		rep := factsReport(t, code, out, stderr)
		if hasLine(rep.Pseudocode, "id = 2") {
			t.Errorf("pseudocode %q: a second FOR UPDATE the scenario never runs", rep.Pseudocode)
		}
		if v := rep.Verdict; v.StaleWrite != simulator.StaleRefusedByServer || strings.Contains(v.Summary, "fencing caught") ||
			!strings.Contains(v.Summary, "the server refused the stale write") {
			t.Errorf("verdict %+v: want the server's refusal named, not fencing (fencing is off)", v)
		}
	})
	t.Run("split", func(t *testing.T) {
		code, out, stderr := simPostgresCLI(t, "--scenario", "pg-idle-in-tx", "--format", "json")
		rep := factsReport(t, code, out, stderr)
		if len(rep.Steps) != 11 {
			t.Fatalf("%d steps, want 11 (pause, expire and resume apart)", len(rep.Steps))
		}
		tests := []struct {
			step   int
			events []string
			// said are in the step's narration
			said []string
		}{
			{5, []string{"C1 pause", "C1 wait"}, []string{"C1 stops", "idle in transaction, still holding the lock", "blocks everyone: pg_blocking_pids names it for C2, C3"}},
			{6, []string{"C1 expire", "C2 lock"}, []string{"C1's session was ended by the server after 5000 ms", "25P03",
				"set that timeout on C1's silent session only in this step", "holds time still",
				"in the same instant", "the hand-over is this step, not one of its own", "C1, still paused, knows nothing", "C2 holds the lock"}},
			{7, []string{"C1 resume"}, []string{"C1 resumes, still believing it holds the lock"}},
			{9, []string{"C1 fenced"}, []string{"C1's INSERT in the locked transaction fails", "25P03"}},
		}
		for _, tt := range tests {
			if got := stepEvents(rep, tt.step); !slices.Equal(got, tt.events) {
				t.Errorf("step %d: %q, want %q", tt.step, got, tt.events)
			}
			said := rep.Steps[tt.step-1].Narration
			for _, want := range tt.said {
				if !strings.Contains(said, want) {
					t.Errorf("step %d's narration %q: want %q", tt.step, said, want)
				}
			}
		}
		// The run's clock lets the timeout pass in the expire step only.
		clock := func(k int) int64 { return rep.Steps[k-1].ClockMs }
		if d := clock(5) - clock(4); d >= 5000 {
			t.Errorf("the pause step moved the clock by %d ms: the timeout is the expire step's", d)
		}
		if d := clock(6) - clock(5); d < 5000 {
			t.Errorf("the expire step moved the clock by %d ms, want the 5 s timeout at least", d)
		}
		if v := rep.Verdict; v.Exclusion != simulator.ExclusionHeld || v.StaleWrite != simulator.StaleRefusedByServer || len(rep.Violations) != 0 {
			t.Errorf("verdict %+v, violations %+v: want held, the stale write refused by the server", v, rep.Violations)
		}
	})
}

// stepEvents is step k's events, each as "client kind".
func stepEvents(rep simulator.Report, k int) []string {
	var out []string
	for _, e := range rep.Events {
		if e.Step == k {
			out = append(out, e.Client+" "+e.Event)
		}
	}
	return out
}

// TestSimFactsEtcd: the checked write is said to narrow the race, not to
// close it; the lease pause's key moment is four steps (pause, expiry,
// hand-over, resume), and the expiry says why the hand-over is a step of
// its own though the Mutex takes the lock at once.
func TestSimFactsEtcd(t *testing.T) {
	needEtcd(t)
	code, out, stderr := simEtcdCmd(t, nil, "--scenario", "etcd-lease-pause", "--format", "json")
	rep := factsReport(t, code, out, stderr)
	for k, want := range map[int][]string{
		5: {"C1 pause"}, 6: {"C1 expire"}, 7: {"C2 wake", "C2 lock"}, 8: {"C1 resume"},
		11: {"C2 pause"}, 12: {"C2 expire"}, 13: {"C3 wake", "C3 lock"}, 14: {"C2 resume"},
	} {
		if got := stepEvents(rep, k); !slices.Equal(got, want) {
			t.Errorf("step %d: %q, want %q", k, got, want)
		}
	}
	if got := eventText(rep, "C1", simulator.EvExpire); !strings.Contains(got, "within milliseconds") || !strings.Contains(got, "next step") {
		t.Errorf("C1's expiry: %q, want it to say the Mutex hands over at once and why the hand-over is the next step", got)
	}
	if got := eventText(rep, "C1", simulator.EvPause); !strings.Contains(got, "stays until its 2 s lease runs out") {
		t.Errorf("C1's pause: %q, want its key said to stay while its lease lives", got)
	}
	if !hasLine(rep.Pseudocode, "checked:", "still a race") {
		t.Errorf("pseudocode %q: want the checked write's line to say the gap is a race", rep.Pseudocode)
	}
	var stop string
	for _, e := range rep.Events {
		if e.Client == "C2" && e.Event == simulator.EvUnlock && strings.Contains(e.Text, "checks") {
			stop = e.Text
		}
	}
	if !strings.Contains(stop, "still a race") {
		t.Errorf("C2's checked write: %q, want it to say the check leaves a race", stop)
	}
}

package zksim

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/zklockviz/zklockviz/simulator"
	"github.com/zklockviz/zklockviz/zookeeper/zklocal/zktest"
)

// The CLI tests run the real binary, built once per test process.
var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

func zklockviz(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "zklockviz-sim-test")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "zklockviz")
		out, err := exec.Command("go", "build", "-o", binPath, "../../cmd/zklockviz").CombinedOutput()
		if err != nil {
			buildErr = errors.New("go build ../../cmd/zklockviz: " + err.Error() + "\n" + string(out))
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// sim runs `zklockviz sim` against the shared ZooKeeper, under a root of
// the test's own.
func sim(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	base := []string{"sim", "--zk", zkAddr, "--session-timeout", testSessionTimeout.String(), "--sim-root", "/cli/" + zktest.NodeName(t)}
	cmd := exec.Command(zklockviz(t), append(base, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("run zklockviz: %v", err)
	}
	return out.String(), errb.String(), code
}

// simJSON runs the CLI with --format json and decodes its report.
func simJSON(t *testing.T, wantCode int, args ...string) simulator.Report {
	t.Helper()
	out, errOut, code := sim(t, append(args, "--format", "json")...)
	if code != wantCode {
		t.Fatalf("exit %d, want %d\nstderr: %s\nstdout: %s", code, wantCode, errOut, out)
	}
	var rep simulator.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("decode the JSON timeline: %v\n%s", err, out)
	}
	return rep
}

// row is one line of seed 000's table: who, what, and on whom it waits.
type row struct{ client, event, on string }

// seed000 is the 14-row table of seed 000 (LOCK1–LOCK5).
var seed000 = []row{
	{"LOCK1", "lock", ""},
	{"LOCK2", "wait", "LOCK1"},
	{"LOCK3", "wait", "LOCK2"},
	{"LOCK4", "wait", "LOCK3"},
	{"LOCK5", "wait", "LOCK3"},
	{"LOCK1", "unlock", ""},
	{"LOCK2", "lock", ""},
	{"LOCK2", "unlock", ""},
	{"LOCK3", "lock", ""},
	{"LOCK3", "unlock", ""},
	{"LOCK4", "lock", ""},
	{"LOCK5", "lock", ""},
	{"LOCK4", "unlock", ""},
	{"LOCK5", "unlock", ""},
}

func rows(events []simulator.Event) []row {
	var out []row
	for _, e := range events {
		if e.Event != simulator.EvNotify {
			out = append(out, row{e.Client, e.Event, e.On})
		}
	}
	return out
}

// notifiedBy lists, for each unlock, whom it woke.
func notifiedBy(events []simulator.Event) map[string][]string {
	out := map[string][]string{}
	for _, e := range events {
		if e.Event == simulator.EvUnlock {
			out[e.Client] = e.Notified
		}
	}
	return out
}

func TestCLILock15(t *testing.T) {
	tests := []struct {
		strategy string
		// notified is whom each release woke.
		notified      map[string][]string
		notifications int
		wasted        int
	}{
		{
			// Only the node(s) watching the released one hear of it.
			strategy: "predecessor",
			notified: map[string][]string{
				"LOCK1": {"LOCK2"}, "LOCK2": {"LOCK3"}, "LOCK3": {"LOCK4", "LOCK5"}, "LOCK4": nil, "LOCK5": nil,
			},
			notifications: 4,
		},
		{
			// Every release wakes every waiter (and a holder whose children
			// watch is still armed).
			strategy: "herd",
			notified: map[string][]string{
				"LOCK1": {"LOCK2", "LOCK3", "LOCK4", "LOCK5"}, "LOCK2": {"LOCK3", "LOCK4", "LOCK5"},
				"LOCK3": {"LOCK4", "LOCK5"}, "LOCK4": {"LOCK5"}, "LOCK5": nil,
			},
			notifications: 20,
			wasted:        16,
		},
	}
	for _, tt := range tests {
		t.Run(tt.strategy, func(t *testing.T) {
			rep := simJSON(t, 0, "--scenario", "lock1-5", "--strategy", tt.strategy)
			if got := rows(rep.Events); !slices.Equal(got, seed000) {
				t.Errorf("timeline rows:\n got %v\nwant %v", got, seed000)
			}
			got := notifiedBy(rep.Events)
			for c, want := range tt.notified {
				if !slices.Equal(got[c], want) {
					t.Errorf("%s's unlock notified %v, want %v", c, got[c], want)
				}
			}
			if rep.Stats.Notifications != tt.notifications || rep.Stats.WastedWakeups != tt.wasted {
				t.Errorf("notifications %d, wasted %d; want %d, %d", rep.Stats.Notifications, rep.Stats.WastedWakeups, tt.notifications, tt.wasted)
			}
			if rep.Strategy != simulator.Strategy(tt.strategy) || len(rep.Violations) != 0 {
				t.Errorf("strategy %q, violations %v", rep.Strategy, rep.Violations)
			}
			for _, e := range rep.Events {
				if e.Event == simulator.EvNotify && e.Watch != map[string]string{"herd": "children", "predecessor": "exists"}[tt.strategy] {
					t.Errorf("a %s notify through a %q watch: %+v", tt.strategy, e.Watch, e)
				}
			}
		})
	}
}

// TestCLIText: the text timeline is seed 000's table, one row per event.
func TestCLIText(t *testing.T) {
	out, errOut, code := sim(t, "--scenario", "lock1-5")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// #, step, client, event, detail: the step column is the number
	// violations name ("step 6"), the # column counts rows.
	re := regexp.MustCompile(`(?m)^(\d+)\s+(\d+)\s+(LOCK\d)\s+(\w+)\s+(.*)$`)
	var got []row
	var steps []int
	for i, m := range re.FindAllStringSubmatch(out, -1) {
		if m[1] != strconv.Itoa(i+1) {
			t.Errorf("row %d numbered %s", i+1, m[1])
		}
		st, _ := strconv.Atoi(m[2])
		steps = append(steps, st)
		r := row{m[3], m[4], ""}
		if r.event == "wait" {
			if w := regexp.MustCompile(`waits for (LOCK\d)`).FindStringSubmatch(m[5]); w != nil {
				r.on = w[1]
			}
		}
		got = append(got, r)
	}
	if !slices.Equal(got, seed000) {
		t.Errorf("text rows:\n got %v\nwant %v\n%s", got, seed000, out)
	}
	// Steps 1–5 join; 6–10 release LOCK1..LOCK5, and a release's row is
	// followed by the lock(s) it caused, in the same step.
	if want := []int{1, 2, 3, 4, 5, 6, 6, 7, 7, 8, 8, 8, 9, 10}; !slices.Equal(steps, want) {
		t.Errorf("step column %v, want %v\n%s", steps, want, out)
	}
	for _, want := range []string{"#", "step", "client", "event", "detail", "notified LOCK4, LOCK5", "safety: no violations"} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
}

func TestCLIHAStandby(t *testing.T) {
	rep := simJSON(t, 0, "--scenario", "ha-standby")
	// Two hold, two stand by; each crashed holder's expiry promotes one.
	want := []row{
		{"APP1", "lock", ""}, {"APP2", "lock", ""}, {"APP3", "wait", ""}, {"APP4", "wait", ""},
		{"APP1", "crash", ""}, {"APP1", "expire", ""}, {"APP3", "lock", ""},
		{"APP2", "crash", ""}, {"APP2", "expire", ""}, {"APP4", "lock", ""},
	}
	if got := rows(rep.Events); !slices.Equal(got, want) {
		t.Errorf("rows:\n got %v\nwant %v", got, want)
	}
	if len(rep.Violations) != 0 || rep.Lock != simulator.LeaseLock || rep.Leases != 2 {
		t.Errorf("violations %v, lock %s, leases %d", rep.Violations, rep.Lock, rep.Leases)
	}
}

func TestCLISessionExpiry(t *testing.T) {
	rep := simJSON(t, 0, "--scenario", "session-expiry")
	var moment []row
	for _, e := range rep.Events {
		if e.Step >= 4 && e.Step <= 6 {
			moment = append(moment, row{e.Client, e.Event + "@" + strconv.Itoa(e.Step), e.On})
		}
	}
	// The crash itself wakes nobody: LOCK2 is notified only once the
	// server expires LOCK1's session, and locks when it handles that.
	// Crash, expiry and hand-over are steps of their own (4, 5, 6).
	want := []row{{"LOCK1", "crash@4", ""}, {"LOCK1", "expire@5", ""}, {"LOCK2", "wake@6", ""}, {"LOCK2", "notify@6", "LOCK1"}, {"LOCK2", "lock@6", ""}}
	if !slices.Equal(moment, want) {
		t.Errorf("crash, expiry and hand-over:\n got %v\nwant %v", moment, want)
	}
	// The expiry came a session timeout after the crash, by
	// the run's own clock (atMs, afterMs), not by a sleep here. (Measured on
	// zklocal, tick 200ms, timeout 1s: 1018–1160ms over 11 runs; the server
	// rounds a session's deadline up to the next tick, so expiry is up to a
	// tick late.)
	var crash, expire, lock simulator.Event
	for _, e := range rep.Events {
		switch {
		case e.Step == 4 && e.Event == simulator.EvCrash:
			crash = e
		case e.Step == 5 && e.Event == simulator.EvExpire:
			expire = e
		case e.Step == 6 && e.Event == simulator.EvLock:
			lock = e
		}
	}
	timeout := rep.SessionTimeoutMs
	if timeout != testSessionTimeout.Milliseconds() {
		t.Errorf("sessionTimeoutMs %d, want %d", timeout, testSessionTimeout.Milliseconds())
	}
	// The server counts the timeout from the last packet it heard, and an
	// idle go-zookeeper client pings every third of the timeout, so the
	// deadline can fall up to a third of the timeout before crash+timeout.
	floor := timeout * 2 / 3
	if expire.AfterMs < floor || expire.AtMs-crash.AtMs < floor {
		t.Errorf("expired %dms after the crash (afterMs %d; crash at %dms, expire at %dms); want at least two thirds of the session timeout, %dms",
			expire.AtMs-crash.AtMs, expire.AfterMs, crash.AtMs, expire.AtMs, floor)
	}
	if lock.AtMs < expire.AtMs {
		t.Errorf("LOCK2 locked at %dms, before the expiry at %dms", lock.AtMs, expire.AtMs)
	}
	t.Logf("session timeout %dms: expired %dms after the crash (afterMs %d)", timeout, expire.AtMs-crash.AtMs, expire.AfterMs)
	if len(rep.Violations) != 0 {
		t.Errorf("violations: %v", rep.Violations)
	}
}

func TestCLIGCPause(t *testing.T) {
	t.Run("fencing on", func(t *testing.T) {
		rep := simJSON(t, 0, "--scenario", "gc-pause", "--fencing", "on")
		var fenced, resumed bool
		for _, e := range rep.Events {
			fenced = fenced || e.Event == simulator.EvFenced && e.Client == "LOCK1" && e.Step == 9
			resumed = resumed || e.Event == simulator.EvResume && e.Client == "LOCK1"
		}
		if !fenced || !resumed || len(rep.Violations) != 0 || rep.Stats.Fenced != 1 {
			t.Errorf("fenced %v, resumed %v, violations %v, stats %+v", fenced, resumed, rep.Violations, rep.Stats)
		}
	})
	t.Run("fencing off", func(t *testing.T) {
		rep := simJSON(t, 1, "--scenario", "gc-pause", "--fencing", "off")
		if len(rep.Violations) != 1 {
			t.Fatalf("violations %v, want one", rep.Violations)
		}
		v := rep.Violations[0]
		// The expiry of the paused holder's session (step 5) and the
		// stale write (step 9).
		if v.Kind != "unfenced-write" || !slices.Equal(v.Steps, []int{5, 9}) || !slices.Contains(v.Clients, "LOCK2") {
			t.Errorf("violation %+v", v)
		}
		if rep.Stats.Fenced != 0 {
			t.Errorf("fenced %d with fencing off", rep.Stats.Fenced)
		}
		if !strings.Contains(v.Message, "fencing is off") {
			t.Errorf("message %q does not say fencing is off", v.Message)
		}
		// The recipe's only exists() is LOCK2's watch on LOCK1; the token
		// reads as each acquires are counted apart.
		if rep.Stats.Exists != 1 || rep.Stats.TokenReads != 2 {
			t.Errorf("stats %+v: want exists 1, tokenReads 2", rep.Stats)
		}
	})
}

func TestCLIUsageErrors(t *testing.T) {
	dir := t.TempDir()
	file := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown action", []string{"--scenario", file("a.json", `{"lock":"rw","steps":[{"client":"A","action":"acquire"}]}`)}, `unknown action "acquire"`},
		{"unknown client", []string{"--scenario", file("b.json", `{"lock":"rw","steps":[{"client":"A","action":"add-reader"},{"client":"B","action":"release"}]}`)}, "unknown client B"},
		{"bad mode", []string{"--scenario", file("c.json", `{"lock":"exclusive","steps":[{"client":"A","action":"add-reader"}]}`)}, "has no readers"},
		{"missing field", []string{"--scenario", file("d.json", `{"lock":"rw","steps":[{"action":"add-reader"}]}`)}, "missing client"},
		{"release by a waiter", []string{"--scenario", file("e.json", `{"lock":"exclusive","steps":[{"client":"A","action":"add"},{"client":"B","action":"add"},{"client":"B","action":"release"}]}`)}, "step 3: release B: the plan gives B no lock to release at that step"},
		{"no such file", []string{"--scenario", filepath.Join(dir, "missing.json")}, "no such file"},
		{"unknown built-in", []string{"--scenario", "lock6"}, `unknown scenario "lock6"`},
		{"bad strategy", []string{"--scenario", "lock1-5", "--strategy", "fast"}, `bad strategy "fast"`},
		{"bad fencing", []string{"--scenario", "gc-pause", "--fencing", "maybe"}, `--fencing "maybe"`},
		{"bad root", []string{"--scenario", "lock1-5", "--sim-root", "relative"}, "--sim-root"},
		{"missing scenario", nil, "missing --scenario"},
		{"--clients without * steps", []string{"--scenario", "lock1-5", "--clients", "3"}, `--clients 3: scenario lock1-5 has no steps with client "*"`},
		{"--clients 0", []string{"--scenario", "herd", "--clients", "0"}, "--clients 0: want 1 to 1000"},
		{"--clients negative", []string{"--scenario", "herd", "--clients", "-2"}, "--clients -2: want 1 to 1000"},
		{"--clients too many", []string{"--scenario", "herd", "--clients", "1001"}, "--clients 1001: want 1 to 1000"},
		{"empty file", []string{"--scenario", file("empty.json", "")}, "the file is empty: want a JSON object"},
		{"YAML file", []string{"--scenario", file("f.yaml", "lock: rw\n")}, "scenario files are JSON (.json), not YAML"},
		{"root under /zookeeper", []string{"--scenario", "lock1-5", "--sim-root", "/zookeeper/sim"}, `--sim-root "/zookeeper/sim": /zookeeper is ZooKeeper's own`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := sim(t, tt.args...)
			if code != 2 || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, errOut, tt.want)
			}
		})
	}
}

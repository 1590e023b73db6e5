package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lab"
	"github.com/zklockviz/zklockviz/simulator"
)

func TestLabSearchBadFlags(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`[{"at": "1s", "kind": "meteor"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--search", "liveness"}, `--search: unknown invariant "liveness": want mutual-exclusion or no-lost-update`},
		{[]string{"--search", "mutual-exclusion", "--runs", "0"}, "--runs 0: want 1 or more"},
		{[]string{"--search", "mutual-exclusion", "--out", filepath.Join(dir, "none")}, "want a directory"},
		{[]string{"--search", "mutual-exclusion", "--schedule", bad}, "not with --schedule"},
		{[]string{"--runs", "3"}, "--runs is for --search"},
		{[]string{"--schedule", filepath.Join(dir, "none.json")}, "--schedule: open"},
		{[]string{"--schedule", bad}, `fault 1: unknown kind "meteor": want one of ` + strings.Join(lab.Nemeses, ", ")},
	} {
		code, _, stderr := runBinary(t, nil, append([]string{"lab"}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("lab %v: exit %d, stderr %q; want 2 and an error saying %q", tc.args, code, stderr, tc.want)
		}
	}
}

// labSearchOut is what lab --search --json prints.
type labSearchOut struct {
	Seed         uint64      `json:"seed"`
	Original     []lab.Fault `json:"original"`
	Schedule     []lab.Fault `json:"schedule"`
	Report       lab.Report  `json:"report"`
	Runs         int         `json:"runs"`
	ScheduleFile string      `json:"scheduleFile"`
	Replay       string      `json:"replay"`
	ScenarioFile string      `json:"scenarioFile"`
	Sim          string      `json:"sim"`
}

// The search on an unfenced Redis lock under pauses: a seed breaks mutual
// exclusion at once; the shrink leaves a schedule no longer than the
// seed's whose last run broke it; the schedule file holds it, its replay
// command runs it again (the same faults, reported), and the classroom
// scenario written beside it runs in Redis's classroom.
func TestLabSearch(t *testing.T) {
	dir := t.TempDir()
	code, stdout, stderr := runBinary(t, nil, "lab", "--json", "--service", "redis", "--fencing", "off", "--clients", "2",
		"--nemesis", "pause", "--search", "mutual-exclusion", "--runs", "3", "--duration", "5s", "--out", dir)
	if code != 0 && strings.Contains(stderr, "is not installed") && os.Getenv("CI") != "true" {
		t.Skip(stderr)
	}
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var out labSearchOut
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	if !strings.Contains(stderr, "search: seed 1 of at most 3") || !strings.Contains(stderr, "shrink: ") {
		t.Errorf("no progress lines for the search and the shrink:\n%s", stderr)
	}
	if out.Seed == 0 || len(out.Schedule) == 0 || len(out.Schedule) > len(out.Original) || len(out.Report.Overlaps) == 0 {
		t.Fatalf("seed %d: %d faults shrunk to %d, last run %d overlaps; want a break, shrunk", out.Seed, len(out.Original), len(out.Schedule), len(out.Report.Overlaps))
	}
	b, err := os.ReadFile(out.ScheduleFile)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := lab.ParseSchedule(b); err != nil || !slices.Equal(s, out.Schedule) {
		t.Errorf("schedule file %s: %v, %v; want %v", out.ScheduleFile, s, err, out.Schedule)
	}
	for _, want := range []string{"zklockviz lab --service redis --clients 2", "--fencing off", "--schedule " + out.ScheduleFile} {
		if !strings.Contains(out.Replay, want) {
			t.Errorf("replay %q does not say %q", out.Replay, want)
		}
	}
	code, stdout, stderr = runBinary(t, nil, append(strings.Fields(out.Replay)[1:], "--json")...)
	var replayed struct {
		Report   lab.Report  `json:"report"`
		Schedule []lab.Fault `json:"schedule"`
		Replay   string      `json:"replay"`
	}
	if err := json.Unmarshal([]byte(stdout), &replayed); code != 0 || err != nil {
		t.Fatalf("the replay: exit %d, %v\n%s", code, err, stderr)
	}
	if replayed.Replay != out.Replay {
		t.Errorf("the replay's replay command %q, want its own %q", replayed.Replay, out.Replay)
	}
	if !slices.Equal(replayed.Schedule, out.Schedule) || replayed.Report.Faults[string(lab.Paused)] != len(out.Schedule) {
		t.Errorf("the replay ran %v with faults %v; want %v", replayed.Schedule, replayed.Report.Faults, out.Schedule)
	}
	if !strings.HasPrefix(out.Sim, "zklockviz sim --service redis --scenario "+out.ScenarioFile) {
		t.Errorf("sim command %q", out.Sim)
	}
	code, simOut, stderr := simRedis(t, nil, "--scenario", out.ScenarioFile, "--format", "json")
	checkSimRan(t, out.ScenarioFile, code, simOut, stderr)
}

// checkSimRan: sim ran every step of the scenario file (exit 0, or 1 for
// the violations the scenario shows), and says which violations.
func checkSimRan(t *testing.T, file string, code int, stdout []byte, stderr string) []simulator.Violation {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := simulator.ParseScenario(b)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var rep simulator.Report
	if err := json.Unmarshal(stdout, &rep); err != nil || code > 1 || rep.Error != "" {
		t.Fatalf("sim --scenario %s: exit %d, error %q (%v)\n%s\n%s", file, code, rep.Error, err, stderr, b)
	}
	if len(rep.Steps) != len(sc.Steps) {
		t.Errorf("sim ran %d steps of %d", len(rep.Steps), len(sc.Steps))
	}
	return rep.Violations
}

// A run's faults as each service's classroom tells them, and the
// classroom runs them: a pause of a holder (the next in line takes the
// lock and the paused one writes stale, a violation with fencing off;
// PostgreSQL's paused holder keeps its advisory lock), a pause of a
// waiter (no classroom step: said so), a kill of a holder (a crash).
func TestLabScenarioRunsInTheClassroom(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	events := []lab.Event{
		{At: at(0), Client: "c1", Kind: lab.Started}, {At: at(1), Client: "c2", Kind: lab.Started}, {At: at(2), Client: "c3", Kind: lab.Started},
		{At: at(10), Client: "c1", Kind: lab.Acquired, Token: 1},
		{At: at(2000), Client: "c1", Kind: lab.Paused},
		{At: at(3100), Client: "c2", Kind: lab.Acquired, Token: 2},
		{At: at(4000), Client: "c3", Kind: lab.Paused}, // a waiter
		{At: at(4500), Client: "c1", Kind: lab.Resumed}, {At: at(4510), Client: "c1", Kind: lab.Wrote, Token: 1},
		{At: at(4600), Client: "c1", Kind: lab.Lost}, {At: at(5000), Client: "c3", Kind: lab.Resumed},
		{At: at(6000), Client: "c2", Kind: lab.Killed},
		{At: at(7000), Client: lab.Server, Kind: lab.ServerDown}, {At: at(7500), Client: lab.Server, Kind: lab.ServerUp},
	}
	found := lab.Found{Seed: 4, Original: make([]lab.Fault, 5), Schedule: []lab.Fault{
		{At: 2 * time.Second, Kind: lab.Pause, For: 2500 * time.Millisecond},
		{At: 4 * time.Second, Kind: lab.Pause, For: time.Second, Pick: 1},
		{At: 6 * time.Second, Kind: lab.Kill},
	}, Events: events}
	for _, service := range []string{"zookeeper", "redis", "etcd", "postgres"} {
		t.Run(service, func(t *testing.T) {
			t.Parallel()
			f := labFlags{service: service, search: "mutual-exclusion", fencing: "off", clients: 3, session: time.Second}
			sc, missing := labScenario(f, found, "zklockviz lab --schedule x.json")
			if len(missing) != 2 || !strings.Contains(missing[0], "at 4s the pause of c3, a waiter") || !strings.Contains(missing[1], "at 7s server server-down: no classroom step") ||
				!strings.Contains(sc.Description, missing[0]) || !strings.Contains(sc.Description, missing[1]) {
				t.Errorf("not in the classroom: %q; want the waiter's pause and the server's outage, in the description too", missing)
			}
			b, err := json.Marshal(sc)
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), "lab.json")
			if err := os.WriteFile(file, b, 0o644); err != nil {
				t.Fatal(err)
			}
			var (
				code   int
				stdout []byte
				stderr string
			)
			switch service {
			case "zookeeper":
				zks := sharedZK(t)
				c, out, e := runBinary(t, nil, "sim", "--zk", zks.Addr(), "--scenario", file, "--format", "json", "--session-timeout", "1s")
				code, stdout, stderr = c, []byte(out), e
			case "redis":
				needRedis(t)
				code, stdout, stderr = simRedis(t, nil, "--scenario", file, "--format", "json")
			default:
				c, out, e := runBinary(t, nil, "sim", "--service", service, "--scenario", file, "--format", "json")
				if c != 0 && strings.Contains(e, "not installed") && os.Getenv("CI") != "true" {
					t.Skip(e)
				}
				code, stdout, stderr = c, []byte(out), e
			}
			violations := checkSimRan(t, file, code, stdout, stderr)
			if stale := slices.ContainsFunc(violations, func(v simulator.Violation) bool { return v.Kind == "unfenced-write" }); stale != (service != "postgres") {
				t.Errorf("violations %+v: want the stale write of the paused holder flagged, except on PostgreSQL", violations)
			}
		})
	}
}

// A run's report names the schedule the seed planned and the command that
// runs it again.
func TestLabReportsItsSchedule(t *testing.T) {
	code, stdout, stderr := runBinary(t, nil, "lab", "--service", "redis", "--clients", "2", "--duration", "2500ms",
		"--nemesis", "pause", "--every", "1s", "--seed", "5", "--session", "200ms")
	if code != 0 && strings.Contains(stderr, "is not installed") && os.Getenv("CI") != "true" {
		t.Skip(stderr)
	}
	want := "schedule:\n  at 1s: pause (pick "
	replay := "replay: zklockviz lab --service redis --clients 2 --duration 2.5s --session 200ms --hold 20ms --fencing on --nemesis pause --every 1s --pause 500ms --seed 5\n"
	if code != 0 || !strings.Contains(stdout, want) || !strings.Contains(stdout, ") for 500ms\n  at 2s: pause") || !strings.HasSuffix(stdout, replay) {
		t.Errorf("exit %d, stdout:\n%s\nwant the schedule (%q…) and %q", code, stdout, want, replay)
	}
}

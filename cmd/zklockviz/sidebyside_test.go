package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/postgres/pglocal"
	"github.com/zklockviz/zklockviz/simulator"
)

// simSide runs the built binary's sim --scenario side-by-side with its own
// TMPDIR (which PostgreSQL, run as its own user, must be able to enter),
// and checks that nothing is left in it once the binary has exited.
func simSide(t *testing.T, env []string, args ...string) (int, []byte, string) {
	t.Helper()
	tmp := t.TempDir()
	for _, d := range []string{tmp, filepath.Dir(tmp)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(binary, append([]string{"sim", "--scenario", "side-by-side"}, args...)...)
	cmd.Env = append(append(os.Environ(), "TMPDIR="+tmp), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	checkNothingLeft(t, tmp)
	return cmd.ProcessState.ExitCode(), stdout.Bytes(), stderr.String()
}

// TestSimSideBySideCLI plays scenario 12 on every real server and checks
// the verdict each run teaches.
func TestSimSideBySideCLI(t *testing.T) {
	needRedis(t)
	needEtcd(t)
	if err := pglocal.Installed(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	zks := sharedZK(t)
	results := sideResults(t, nil, "--zk", zks.Addr())
	want := []struct {
		scenario, exclusion, stale string
		// requestsBy is a word of Meters.RequestsFrom: who counted.
		requestsBy string
	}{
		{"zk-side-by-side", simulator.ExclusionHeld, simulator.StaleFenced, "classroom"},
		{"redis-side-by-side", simulator.ExclusionBroken, simulator.StaleAccepted, "commandstats"},
		{"redis-token-side-by-side", simulator.ExclusionHeld, simulator.StaleFenced, "commandstats"},
		{"etcd-side-by-side", simulator.ExclusionHeld, simulator.StaleFenced, "classroom"},
		// Fencing is off there: the database refused the write, in the
		// transaction its idle-in-transaction timeout had ended.
		{"pg-side-by-side", simulator.ExclusionHeld, simulator.StaleRefusedByServer, "classroom"},
	}
	if len(results) != len(want) {
		t.Fatalf("%d runs, want %d: %+v", len(results), len(want), results)
	}
	for i, w := range want {
		r := results[i]
		t.Run(w.scenario, func(t *testing.T) {
			if r.Scenario != w.scenario {
				t.Fatalf("run %d is %s, want %s", i, r.Scenario, w.scenario)
			}
			if r.Unavailable != "" || r.Error != "" || r.Verdict == nil || r.Meters == nil {
				t.Fatalf("no verdict: unavailable %q, error %q", r.Unavailable, r.Error)
			}
			v := r.Verdict
			if v.Exclusion != w.exclusion || v.StaleWrite != w.stale {
				t.Errorf("verdict %+v, want exclusion %s, stale write %s; violations %+v", v, w.exclusion, w.stale, r.Violations)
			}
			if (v.Exclusion == simulator.ExclusionBroken) != (v.BrokenMs > 0) {
				t.Errorf("exclusion %s, broken for %d ms: a broken exclusion says for how long, a held one nothing", v.Exclusion, v.BrokenMs)
			}
			if r.Steps != 13 {
				t.Errorf("%d steps, want the story's 13", r.Steps)
			}
			m := r.Meters
			if m.Requests == 0 || !strings.Contains(m.RequestsFrom, w.requestsBy) {
				t.Errorf("requests %d counted by %q, want some, counted by %s", m.Requests, m.RequestsFrom, w.requestsBy)
			}
			if m.HandoffMs < 0 {
				t.Errorf("no hand-off measured, though C2, C3 and C4 each took the lock over")
			}
		})
	}
}

// sideResults runs scenario 12 with --format json and decodes its results.
func sideResults(t *testing.T, env []string, args ...string) []SideResult {
	t.Helper()
	code, out, stderr := simSide(t, env, append(args, "--format", "json")...)
	if code != 0 {
		t.Fatalf("exit %d, want 0; stderr:\n%s\nstdout:\n%s", code, stderr, out)
	}
	var results []SideResult
	if err := json.Unmarshal(out, &results); err != nil {
		t.Fatalf("decode %s: %v", out, err)
	}
	return results
}

// A server that is not installed makes its panes unavailable, saying
// which package provides it; the other services still run.
func TestSimSideBySideMissingServer(t *testing.T) {
	needRedis(t)
	needEtcd(t)
	if err := pglocal.Installed(); err != nil {
		t.Skip(err)
	}
	// A PATH with everything but redis-server and etcd.
	bin := t.TempDir()
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if e.Name() == "redis-server" || e.Name() == "etcd" {
				continue
			}
			// The first directory on PATH wins, as for the shell.
			os.Symlink(filepath.Join(dir, e.Name()), filepath.Join(bin, e.Name()))
		}
	}
	results := sideResults(t, []string{"PATH=" + bin}, "--zk", sharedZK(t).Addr())
	want := map[string]string{
		"zk-side-by-side":          "",
		"redis-side-by-side":       "apt-get install redis-server",
		"redis-token-side-by-side": "apt-get install redis-server",
		"etcd-side-by-side":        "apt-get install etcd-server",
		"pg-side-by-side":          "",
	}
	for _, r := range results {
		w, ok := want[r.Scenario]
		switch {
		case !ok:
			t.Errorf("unexpected run %s", r.Scenario)
		case w == "" && (r.Unavailable != "" || r.Verdict == nil):
			t.Errorf("%s: unavailable %q, want it run while the others are missing", r.Scenario, r.Unavailable)
		case w != "" && (!strings.Contains(r.Unavailable, w) || r.Verdict != nil):
			t.Errorf("%s: unavailable %q, verdict %v: want no verdict and a reason saying %q", r.Scenario, r.Unavailable, r.Verdict, w)
		}
	}
}

func TestSimSideBySideUsage(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--fencing", "off"}, "drop --fencing"},
		{[]string{"--service", "redis"}, "drop --service"},
		{[]string{"--format", "yaml"}, "--format"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			cmd := exec.Command(binary, append([]string{"sim", "--scenario", "side-by-side"}, tt.args...)...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 2 || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("exit %v (%v), stderr %q: want exit 2 saying %q", cmd.ProcessState, err, stderr.String(), tt.want)
			}
		})
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/postgres/pglocal"
	"github.com/zklockviz/zklockviz/simulator"
	"github.com/zklockviz/zklockviz/simulator/timespacetest"
	"github.com/zklockviz/zklockviz/web"
)

// simPostgresCLI runs the built binary's sim --service postgres with its
// own TMPDIR, which must be empty again when it has exited: no server
// directory left.
func simPostgresCLI(t *testing.T, args ...string) (int, []byte, string) {
	t.Helper()
	if err := pglocal.Installed(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	tmp := t.TempDir()
	// PostgreSQL runs as the postgres user when we are root: it must be
	// able to enter the test's directory and its parent.
	for _, d := range []string{tmp, filepath.Dir(tmp)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(binary, append([]string{"sim", "--service", "postgres"}, args...)...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
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

// checkNothingLeft waits (bounded) for the reapers of pglocal's template
// and spare copy, which remove them once zklockviz has exited, then checks
// that no process runs from tmp (bounded too: a reaper exits a moment
// after it emptied the directory).
func checkNothingLeft(t *testing.T, tmp string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		left, _ := os.ReadDir(tmp)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("left in TMPDIR 30s after sim exited: %v", left)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The reaper that emptied the directory exits a moment after.
	for {
		var running []string
		procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, p := range procs {
			b, err := os.ReadFile(p)
			if err == nil && bytes.Contains(b, []byte(tmp)) {
				running = append(running, fmt.Sprintf("%s: %q", p, b))
			}
		}
		if len(running) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("processes still run from %s: %s", tmp, strings.Join(running, "; "))
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestSimPostgresKill9: zklockviz killed with SIGKILL mid-run leaves no
// postgres process and no directory behind.
func TestSimPostgresKill9(t *testing.T) {
	if err := pglocal.Installed(); err != nil {
		t.Skip(err)
	}
	tmp := t.TempDir()
	for _, d := range []string{tmp, filepath.Dir(tmp)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(binary, "sim", "--service", "postgres", "--scenario", "pg-idle-in-tx")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill once a postmaster runs from tmp: the run is under way.
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		if time.Since(start) > 60*time.Second {
			t.Fatal("no postmaster 60s after sim started")
		}
		if m, _ := filepath.Glob(filepath.Join(tmp, "pglocal-*", "data", "postmaster.pid")); len(m) > 0 {
			break
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	checkNothingLeft(t, tmp)
}

func TestSimPostgresCLI(t *testing.T) {
	tests := []struct {
		scenario string
		// events that must appear, as client:event
		want []string
	}{
		{"pg-advisory-fifo", []string{"C1:lock", "C2:lock", "C2:crash", "C3:lock", "C4:lock"}},
		{"pg-deadlock", []string{"C2:deadlock", "C1:lock"}},
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			code, out, stderr := simPostgresCLI(t, "--scenario", tt.scenario, "--format", "json")
			if code != 0 {
				t.Fatalf("exit %d, want 0; stderr: %s", code, stderr)
			}
			var rep simulator.Report
			if err := json.Unmarshal(out, &rep); err != nil {
				t.Fatalf("report: %v\n%s", err, out)
			}
			if rep.Service != "postgres" || rep.Error != "" || len(rep.Violations) != 0 {
				t.Errorf("service %q, error %q, violations %+v; want postgres, none, none", rep.Service, rep.Error, rep.Violations)
			}
			var got []string
			for _, e := range rep.Events {
				got = append(got, e.Client+":"+e.Event)
			}
			for _, w := range tt.want {
				if !slices.Contains(got, w) {
					t.Errorf("no %s event in %v", w, got)
				}
			}
		})
	}
}

func TestSimPostgresUsage(t *testing.T) {
	code, _, stderr := simPostgresCLI(t, "--scenario", "pg-row-fifo", "--strategy", "herd")
	if code != 2 || !strings.Contains(stderr, "--strategy is ZooKeeper's") {
		t.Errorf("exit %d, stderr %q; want 2 and a word on --strategy", code, stderr)
	}
}

// serve --sim offers PostgreSQL's classroom on the postgres service, with
// or without --postgres: its scenarios listed, a run started and stepped
// through the binary's HTTP API.
func TestServePostgresClassroom(t *testing.T) {
	if err := pglocal.Installed(); err != nil {
		t.Skip(err)
	}
	zks := sharedZK(t)
	s := startServe(t, "--zk", zks.Addr(), "--addr", "127.0.0.1:0", "--sim")
	var list []simulator.ScenarioInfo
	if code := getJSON(t, s.url+"/api/v1/sim/scenarios?service=postgres", &list); code != 200 {
		t.Fatalf("GET scenarios?service=postgres = %d", code)
	}
	var ids []string
	for _, sc := range list {
		ids = append(ids, sc.ID)
		if sc.Service != "postgres" || sc.Unavailable != "" {
			t.Errorf("scenario %+v", sc)
		}
	}
	if want := []string{"pg-row-fifo", "pg-advisory-fifo", "pg-idle-in-tx", "pg-deadlock", "pg-side-by-side"}; !slices.Equal(ids, want) {
		t.Errorf("scenarios %v, want %v", ids, want)
	}
	owner := ""
	post := func(path, body string, want int) simulator.State {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, s.url+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		// Only a run's starter moves it: send back its owner secret.
		req.Header.Set(web.RunOwnerHeader, owner)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if secret := resp.Header.Get(web.RunOwnerHeader); secret != "" {
			owner = secret
		}
		var st simulator.State
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want {
			t.Fatalf("POST %s = %d %s, want %d", path, resp.StatusCode, b, want)
		}
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatalf("POST %s: %v: %s", path, err, b)
		}
		return st
	}
	st := post("/api/v1/sim/runs?service=postgres", `{"scenario":"pg-row-fifo"}`, 201)
	st = post("/api/v1/sim/runs/"+st.ID+"/seek?service=postgres", `{"step":2}`, 200)
	if st.Service != "postgres" || len(st.Snapshot.Nodes) != 2 || !st.Snapshot.Nodes[0].Holding {
		t.Errorf("step 2: service %q, server's nodes %+v; want C1 holding, C2 waiting", st.Service, st.Snapshot.Nodes)
	}
}

// childrenNamed lists the processes whose parent is pid and whose command
// is one of names.
func childrenNamed(pid int, names ...string) []string {
	var out []string
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		stat, err := os.ReadFile(filepath.Join("/proc", p.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		open, end := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
		if open < 0 || end < open {
			continue
		}
		comm, rest := string(stat[open+1:end]), strings.Fields(string(stat[end+1:]))
		if len(rest) > 1 && rest[1] == strconv.Itoa(pid) && slices.Contains(names, comm) {
			out = append(out, p.Name()+" "+comm)
		}
	}
	return out
}

// serve --sim starts no PostgreSQL of its own until someone opens the
// classroom page, which warms it in the background so that the first run
// does not wait for initdb.
func TestClassroomPageWarmsPostgres(t *testing.T) {
	if err := pglocal.Installed(); err != nil {
		t.Skip(err)
	}
	zks := sharedZK(t)
	s := startServe(t, "--zk", zks.Addr(), "--addr", "127.0.0.1:0", "--sim")
	pid := s.cmd.Process.Pid
	if code := getJSON(t, s.url+"/api/v1/sim/scenarios?service=postgres", &[]simulator.ScenarioInfo{}); code != 200 {
		t.Fatalf("GET scenarios = %d", code)
	}
	if kids := childrenNamed(pid, "initdb", "postgres"); len(kids) > 0 {
		t.Fatalf("serve --sim started PostgreSQL before anyone opened the classroom: %v", kids)
	}
	resp, err := http.Get(s.url + "/sim")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	deadline := time.Now().Add(30 * time.Second)
	for len(childrenNamed(pid, "postgres")) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no postgres child of serve (pid %d) 30 s after the classroom page was opened", pid)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestSimSVGPostgresIdleInTx: the time–space diagram of pg-idle-in-tx,
// whose pause, expiry and resume are steps of their own, still draws the
// pause span, the one expiry where the server ended C1's session, C1's
// belief going on past it, and its stale write refused by the server.
func TestSimSVGPostgresIdleInTx(t *testing.T) {
	code, out, stderr := simPostgresCLI(t, "--scenario", "pg-idle-in-tx", "--format", "svg")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	d, err := timespacetest.Parse(out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got := d.LanesOf("client"); !slices.Equal(got, []string{"C1", "C2", "C3"}) {
		t.Errorf("client lanes %v, want C1, C2, C3", got)
	}
	if d.Marks["pause"] == 0 || d.Marks["expiry"] != 1 || d.Marks["belief-ends"] != 1 {
		t.Errorf("%d pause spans, %d expiries, %d ends of the lock under a belief; want some, 1, 1", d.Marks["pause"], d.Marks["expiry"], d.Marks["belief-ends"])
	}
	for _, want := range []string{"C1's session ended by the server", "lock lost; it does not know", "resume"} {
		if !slices.Contains(d.Texts, want) {
			t.Errorf("labels %q: want %q", d.Texts, want)
		}
	}
	if d.Marks["refused"] != 1 || d.Marks["violation"] != 0 {
		t.Errorf("%d refused writes, %d violation intervals; want 1, 0", d.Marks["refused"], d.Marks["violation"])
	}
}

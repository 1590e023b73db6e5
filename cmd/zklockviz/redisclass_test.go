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
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/simulator"
	"github.com/zklockviz/zklockviz/web"
)

func needRedis(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis-server: %v", err)
		}
		t.Skipf("redis-server is not installed (apt-get install redis-server): %v", err)
	}
}

// simRedis runs the built binary's sim with its own TMPDIR, which must be
// empty again when it has exited: no redis-server directory left.
func simRedis(t *testing.T, env []string, args ...string) (int, []byte, string) {
	t.Helper()
	tmp := t.TempDir()
	cmd := exec.Command(binary, append([]string{"sim", "--service", "redis"}, args...)...)
	cmd.Env = append(append(os.Environ(), "TMPDIR="+tmp), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("left in TMPDIR after sim exited: %v", left)
	}
	return cmd.ProcessState.ExitCode(), stdout.Bytes(), stderr.String()
}

func TestSimRedisCLI(t *testing.T) {
	needRedis(t)
	tests := []struct {
		args     []string
		code     int
		failures []string // violations, kind:client
	}{
		{[]string{"--scenario", "redis-px-pause"}, 1, []string{"unfenced-write:C1"}},
		{[]string{"--scenario", "redis-del-third"}, 1, []string{"unfenced-write:C1", "unfenced-write:C2"}},
		{[]string{"--scenario", "redis-token-fencing"}, 0, nil},
		{[]string{"--scenario", "redis-token-fencing", "--fencing", "off"}, 1, []string{"unfenced-write:C1"}},
		{[]string{"--scenario", "redis-redlock-restart"}, 1, []string{"unfenced-write:C1"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args[1:], " "), func(t *testing.T) {
			code, out, stderr := simRedis(t, nil, append(tt.args, "--format", "json")...)
			if code != tt.code {
				// The report says which violation and at which step.
				t.Fatalf("exit %d, want %d; stderr: %s\nreport: %s", code, tt.code, stderr, out)
			}
			var rep simulator.Report
			if err := json.Unmarshal(out, &rep); err != nil {
				t.Fatalf("report: %v\n%s", err, out)
			}
			var got []string
			for _, v := range rep.Violations {
				got = append(got, v.Kind+":"+v.Clients[0])
				if v.ForMs <= 0 {
					t.Errorf("violation %q: lasted %d ms, want > 0", v.Message, v.ForMs)
				}
			}
			if rep.Service != "redis" || rep.Error != "" || !slices.Equal(got, tt.failures) {
				t.Errorf("service %q, error %q, violations %v; want redis, none, %v", rep.Service, rep.Error, got, tt.failures)
			}
		})
	}
}

func TestSimRedisNotInstalled(t *testing.T) {
	code, _, stderr := simRedis(t, []string{"PATH=" + t.TempDir()}, "--scenario", "redis-px-pause")
	if code != 1 || !strings.Contains(stderr, "apt-get install redis-server") || strings.Contains(stderr, "goroutine") {
		t.Errorf("exit %d, stderr %q: want 1 and the package to install", code, stderr)
	}
}

func TestSimRedisUsage(t *testing.T) {
	code, _, stderr := simRedis(t, nil, "--scenario", "redis-px-pause", "--strategy", "herd")
	if code != 2 || !strings.Contains(stderr, "--strategy") {
		t.Errorf("exit %d, stderr %q: want 2 and --strategy", code, stderr)
	}
}

// TestSimRedisKill9: zklockviz killed with SIGKILL mid-run leaves no
// redis-server and no directory behind.
func TestSimRedisKill9(t *testing.T) {
	needRedis(t)
	tmp := t.TempDir()
	cmd := exec.Command(binary, "sim", "--service", "redis", "--scenario", "redis-watchdog")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var dir string
	for start := time.Now(); dir == ""; time.Sleep(20 * time.Millisecond) {
		if time.Since(start) > 30*time.Second {
			t.Fatal("no redislocal directory 30s after sim started")
		}
		if m, _ := filepath.Glob(filepath.Join(tmp, "redislocal-*")); len(m) > 0 {
			dir = m[0]
		}
	}
	pids := redisPids(t, dir)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	// The reaper removes the directory once it sees its parent gone; wait
	// for that (bounded), then check the server is gone too.
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := os.Stat(dir)
		if errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still there 30s after kill -9", dir)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, pid := range pids {
		for time.Now().Before(deadline) && syscall.Kill(pid, 0) == nil {
			time.Sleep(50 * time.Millisecond)
		}
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("redis-server %d still running after kill -9 of zklockviz (kill 0: %v)", pid, err)
		}
	}
}

// redisPids finds the redis-server processes running in dir (redis-server
// rewrites its command line, so it is found by its working directory).
func redisPids(t *testing.T, dir string) []int {
	t.Helper()
	var pids []int
	deadline := time.Now().Add(30 * time.Second)
	for len(pids) == 0 && time.Now().Before(deadline) {
		procs, _ := filepath.Glob("/proc/[0-9]*")
		for _, p := range procs {
			comm, err := os.ReadFile(p + "/comm")
			if err != nil || strings.TrimSpace(string(comm)) != "redis-server" {
				continue
			}
			if cwd, err := os.Readlink(p + "/cwd"); err != nil || cwd != dir {
				continue
			}
			var pid int
			if _, err := fmt.Sscan(filepath.Base(p), &pid); err == nil {
				pids = append(pids, pid)
			}
		}
		if len(pids) == 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if len(pids) == 0 {
		t.Fatalf("no redis-server runs in %s", dir)
	}
	return pids
}

// TestServeRedisClassroom: serve --sim offers Redis's classroom beside
// ZooKeeper's: a Redis run through POST /api/v1/sim/runs?service=redis.
func TestServeRedisClassroom(t *testing.T) {
	needRedis(t)
	zks := sharedZK(t)
	s := startServe(t, "--zk", zks.Addr(), "--addr", "127.0.0.1:0", "--sim")
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
			t.Fatalf("POST %s: %d %s, want %d", path, resp.StatusCode, b, want)
		}
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatalf("POST %s: %v", path, err)
		}
		return st
	}
	st := post("/api/v1/sim/runs?service=redis", `{"scenario":"redis-del-third"}`, 201)
	st = post("/api/v1/sim/runs/"+st.ID+"/seek?service=redis", `{"step":9}`, 200)
	if st.Service != "redis" || len(st.Violations) != 2 || st.Snapshot.Service != "redis" {
		t.Errorf("service %q, violations %+v, snapshot's service %q: want redis, two stale writes", st.Service, st.Violations, st.Snapshot.Service)
	}
	zk := post("/api/v1/sim/runs", `{"scenario":"lock1-5"}`, 201)
	if zk.Service != "" || zk.Scenario != "lock1-5" {
		t.Errorf("ZooKeeper's run: service %q, scenario %q", zk.Service, zk.Scenario)
	}
}

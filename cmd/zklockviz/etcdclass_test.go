package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/etcd/etcdlock"
	"github.com/zklockviz/zklockviz/simulator"
	"github.com/zklockviz/zklockviz/web"
)

func needEtcd(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("etcd"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("etcd: %v", err)
		}
		t.Skipf("etcd is not installed (apt-get install etcd-server): %v", err)
	}
}

// simEtcdCmd runs the built binary's sim --service etcd with its own
// TMPDIR, which must be empty again when it has exited: no etcd directory
// left.
func simEtcdCmd(t *testing.T, env []string, args ...string) (int, []byte, string) {
	t.Helper()
	tmp := t.TempDir()
	cmd := exec.Command(binary, append([]string{"sim", "--service", "etcd"}, args...)...)
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

func TestSimEtcdCLI(t *testing.T) {
	needEtcd(t)
	tests := []struct {
		args     []string
		code     int
		fenced   int
		failures []string // violations, kind:client
	}{
		{[]string{"--scenario", "etcd-mutex-queue"}, 0, 0, nil},
		// Fencing by create revision refuses the stale holder's write.
		{[]string{"--scenario", "etcd-lease-pause"}, 0, 1, nil},
		{[]string{"--scenario", "etcd-lease-pause", "--fencing", "off"}, 1, 0, []string{"unfenced-write:C1"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args[1:], " "), func(t *testing.T) {
			code, out, stderr := simEtcdCmd(t, nil, append(tt.args, "--format", "json")...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tt.code, stderr)
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
			if rep.Service != "etcd" || rep.Error != "" || !slices.Equal(got, tt.failures) || rep.Stats.Fenced != tt.fenced {
				t.Errorf("service %q, error %q, violations %v, fenced %d; want etcd, none, %v, %d",
					rep.Service, rep.Error, got, rep.Stats.Fenced, tt.failures, tt.fenced)
			}
		})
	}
}

func TestSimEtcdNotInstalled(t *testing.T) {
	code, _, stderr := simEtcdCmd(t, []string{"PATH=" + t.TempDir()}, "--scenario", "etcd-mutex-queue")
	if code != 1 || !strings.Contains(stderr, "apt-get install etcd-server") || strings.Contains(stderr, "goroutine") {
		t.Errorf("exit %d, stderr %q: want 1 and the package to install", code, stderr)
	}
}

func TestSimEtcdUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--scenario", "etcd-mutex-queue", "--strategy", "herd"}, "--strategy"},
		{[]string{"--scenario", "no-such-scenario"}, "etcd-mutex-queue, etcd-lease-pause"},
		{[]string{"--scenario", "etcd-mutex-queue", "--clients", "3"}, "--clients"},
	} {
		code, _, stderr := simEtcdCmd(t, nil, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q: want 2 saying %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestSimEtcdKill9: zklockviz killed with SIGKILL mid-run leaves no etcd
// process and no directory behind.
func TestSimEtcdKill9(t *testing.T) {
	needEtcd(t)
	tmp := t.TempDir()
	cmd := exec.Command(binary, "sim", "--service", "etcd", "--scenario", "etcd-lease-pause")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var dir string
	for start := time.Now(); dir == ""; time.Sleep(20 * time.Millisecond) {
		if time.Since(start) > 30*time.Second {
			t.Fatal("no etcdlocal directory 30s after sim started")
		}
		if m, _ := filepath.Glob(filepath.Join(tmp, "etcdlocal-*")); len(m) > 0 {
			dir = m[0]
		}
	}
	pids := pidsIn(t, "etcd", dir)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
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
			t.Errorf("etcd %d still running after kill -9 of zklockviz (kill 0: %v)", pid, err)
		}
	}
}

// pidsIn finds the processes named comm whose working directory is dir.
func pidsIn(t *testing.T, comm, dir string) []int {
	t.Helper()
	var pids []int
	deadline := time.Now().Add(30 * time.Second)
	for len(pids) == 0 && time.Now().Before(deadline) {
		procs, _ := filepath.Glob("/proc/[0-9]*")
		for _, p := range procs {
			c, err := os.ReadFile(p + "/comm")
			if err != nil || strings.TrimSpace(string(c)) != comm {
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
		t.Fatalf("no %s runs in %s", comm, dir)
	}
	return pids
}

// TestServeEtcdClassroom: serve --sim (without --etcd) registers etcd's
// classroom: its scenarios under ?service=etcd, and a run on its own etcd.
func TestServeEtcdClassroom(t *testing.T) {
	needEtcd(t)
	zks := sharedZK(t)
	s := startServe(t, "--zk", zks.Addr(), "--addr", "127.0.0.1:0", "--sim")
	var list []simulator.ScenarioInfo
	if code := getJSON(t, s.url+"/api/v1/sim/scenarios?service=etcd", &list); code != 200 || len(list) != len(etcdlock.Catalog.Names()) || list[0].Service != "etcd" {
		t.Fatalf("etcd scenarios: %d %+v", code, list)
	}
	resp, err := http.Post(s.url+"/api/v1/sim/runs?service=etcd", "application/json", strings.NewReader(`{"scenario":"etcd-mutex-queue"}`))
	if err != nil {
		t.Fatal(err)
	}
	var st simulator.State
	err = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || err != nil {
		t.Fatalf("start: %d %v %+v", resp.StatusCode, err, st)
	}
	// Only a run's starter steps it: its owner secret goes back.
	req, _ := http.NewRequest(http.MethodPost, s.url+"/api/v1/sim/runs/"+st.ID+"/step?service=etcd", nil)
	req.Header.Set(web.RunOwnerHeader, resp.Header.Get(web.RunOwnerHeader))
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	err = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || err != nil || st.Snapshot.Service != "etcd" || len(st.Snapshot.Holders()) != 1 {
		t.Fatalf("step: %d %v: snapshot %+v, want etcd's, C1 holding", resp.StatusCode, err, st.Snapshot)
	}
}

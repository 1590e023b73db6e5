package localproc_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/etcd/etcdlocal"
	"github.com/zklockviz/zklockviz/localproc/proctest"
	"github.com/zklockviz/zklockviz/postgres/pglocal"
	"github.com/zklockviz/zklockviz/redis/redislocal"
	"github.com/zklockviz/zklockviz/zookeeper/zklocal"
)

const childEnv = "LOCALPROC_LEFTOVERS_CHILD"

// started is what the child reports: the process groups of its servers.
type started struct {
	Skip   string
	Pgids  []int
	Detail []string
	// Shmid is the PostgreSQL interlock segment, which outlives a killed
	// postmaster unless the reaper removes it.
	Shmid string
}

// TestChildStartsServers is not a test on its own: it is the process
// TestNothingLeftWhenParentDies kills. It starts five Redis masters, etcd,
// PostgreSQL (with a live backend) and ZooKeeper, reports them on stdout and
// waits.
func TestChildStartsServers(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("run by TestNothingLeftWhenParentDies")
	}
	report := func(s started) {
		b, _ := json.Marshal(s)
		fmt.Printf("STARTED %s\n", b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var st started
	add := func(name string, pid int) {
		st.Pgids = append(st.Pgids, pid)
		st.Detail = append(st.Detail, fmt.Sprintf("%s pid %d", name, pid))
	}
	redis, err := redislocal.StartN(ctx, 5, redislocal.Options{})
	skipOr := func(err error, notInstalled error) {
		if errors.Is(err, notInstalled) {
			report(started{Skip: err.Error()})
			select {}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	skipOr(err, redislocal.ErrNotInstalled)
	for _, s := range redis {
		add(s.Name(), s.Pid())
	}
	etcd, err := etcdlocal.Start(ctx, etcdlocal.Options{})
	skipOr(err, etcdlocal.ErrNotInstalled)
	add(etcd.Name(), etcd.Pid())
	pg, err := pglocal.Start(ctx, pglocal.Options{})
	skipOr(err, pglocal.ErrNotInstalled)
	add(pg.Name(), pg.Pid())
	pidfile, err := os.ReadFile(filepath.Join(pg.Dir(), "data", "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(string(pidfile), "\n"); len(lines) > 6 {
		if f := strings.Fields(lines[6]); len(f) == 2 {
			st.Shmid = f[1]
		}
	}
	if st.Shmid == "" {
		t.Fatalf("no shared memory id in postmaster.pid:\n%s", pidfile)
	}
	// A backend, so the check covers more than the postmaster.
	conn, err := pglocal.Connect(ctx, pg.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	zk, err := zklocal.Start(ctx, zklocal.Options{})
	skipOr(err, zklocal.ErrNotInstalled)
	add(zk.Name(), zk.Pid())
	report(st)
	// Long enough for any parent; a timer so the runtime does not call it
	// a deadlock.
	time.Sleep(10 * time.Minute)
}

// TestNothingLeftWhenParentDies kills a process that runs all four kinds of
// servers, with SIGKILL and with the SIGINT of a Ctrl-C it does not handle,
// and checks that no server process, no reaper and no directory remain.
func TestNothingLeftWhenParentDies(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("in the child")
	}
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			// The child's TMPDIR: every directory it makes lands here,
			// the PostgreSQL template included, so "empty" is the proof.
			// Traversable, because PostgreSQL runs as another user.
			tmp, err := os.MkdirTemp("", "localproc-leftovers-*")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(tmp) })
			if err := os.Chmod(tmp, 0o755); err != nil {
				t.Fatal(err)
			}

			cmd := exec.Command(os.Args[0], "-test.run=^TestChildStartsServers$", "-test.count=1")
			cmd.Env = append(os.Environ(), childEnv+"=1", "TMPDIR="+tmp)
			cmd.Stderr = os.Stderr
			// Should this test die, the child must not wait out its sleep.
			cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

			st, err := readStarted(bufio.NewScanner(out))
			if err != nil {
				t.Fatalf("child: %v", err)
			}
			if st.Skip != "" {
				proctest.SkipIfNotInstalled(t, errors.New(st.Skip), errors.New(st.Skip))
			}
			if noLeftovers(tmp, st.Pgids, st.Shmid) == nil {
				t.Fatal("before the kill the check finds nothing, so it would prove nothing")
			}
			t.Logf("child %d runs %s", cmd.Process.Pid, strings.Join(st.Detail, ", "))

			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			// Not a speed assertion: a bound on "eventually", generous
			// for a loaded machine; the reaper gives up after ~10 s.
			deadline := time.Now().Add(30 * time.Second)
			for {
				err := noLeftovers(tmp, st.Pgids, st.Shmid)
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("30 s after %v to the parent: %v", sig, err)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

func readStarted(sc *bufio.Scanner) (started, error) {
	var st started
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "STARTED ")
		if !ok {
			continue
		}
		return st, json.Unmarshal([]byte(line), &st)
	}
	return st, fmt.Errorf("exited before reporting its servers (%v)", sc.Err())
}

// noLeftovers returns nil when tmp is empty, no process is in any of pgids,
// no live process mentions tmp in its command line (the reapers do), and
// the System V segment shmid is gone. It returns an error saying what is
// still there otherwise.
func noLeftovers(tmp string, pgids []int, shmid string) error {
	var left []string
	ipcs, err := exec.Command("ipcs", "-m").Output()
	if err != nil {
		return fmt.Errorf("ipcs: %w", err)
	}
	for _, line := range strings.Split(string(ipcs), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[1] == shmid {
			left = append(left, "shared memory segment "+shmid)
		}
	}
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return err
	}
	for _, e := range entries {
		left = append(left, "directory "+filepath.Join(tmp, e.Name()))
	}
	for _, g := range pgids {
		alive, err := proctest.GroupAlive(g)
		if err != nil {
			return err
		}
		if alive {
			left = append(left, "process group "+strconv.Itoa(g))
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), tmp) {
			left = append(left, fmt.Sprintf("process %s: %s", filepath.Base(filepath.Dir(p)), strings.ReplaceAll(string(b), "\x00", " ")))
		}
	}
	if len(left) > 0 {
		return errors.New(strings.Join(left, "; "))
	}
	return nil
}

package zkwatch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/third_party/zk"
	"github.com/zklockviz/zklockviz/zookeeper/zklocal"
)

// The offset to ZooKeeper's clock is the smallest bound the live creates
// give, and ctimes are corrected only once it is larger than the estimate's
// own error. (A real ZooKeeper on this machine shares its clock; a skewed
// one cannot be started here, so the estimator is tested alone.)
func TestServerClock(t *testing.T) {
	local := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		skew    time.Duration // how far the server's clock is behind
		seen    []time.Duration
		want    time.Duration
		correct bool
	}{
		{"no sample", 0, nil, 0, false},
		{"same clock", 0, []time.Duration{40 * time.Millisecond, 12 * time.Millisecond}, 0, false},
		{"server 30s behind", 30 * time.Second, []time.Duration{300 * time.Millisecond, 15 * time.Millisecond, 80 * time.Millisecond}, 30*time.Second + 15*time.Millisecond, true},
		{"server 5s ahead", -5 * time.Second, []time.Duration{20 * time.Millisecond}, -5*time.Second + 20*time.Millisecond, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c serverClock
			for i, lat := range tt.seen {
				created := local.Add(time.Duration(i) * time.Minute) // on the watcher's clock
				c.observe(created.Add(-tt.skew), created.Add(lat))
			}
			by, ok := c.correction()
			if ok != tt.correct || (ok && by != tt.want) {
				t.Fatalf("correction %v, %v; want %v, %v", by, ok, tt.want, tt.correct)
			}
			if !ok {
				return
			}
			nodes := []lockqueue.Node{{Ctime: local.Add(-tt.skew)}, {}}
			correctCtimes(nodes, by)
			if d := nodes[0].Ctime.Sub(local); d < 0 || d > 20*time.Millisecond {
				t.Errorf("corrected ctime is %v off the watcher's clock", d)
			}
			if !nodes[1].Ctime.IsZero() {
				t.Errorf("a node without a ctime got one: %v", nodes[1].Ctime)
			}
		})
	}
}

// libfaketime shifts the clock of the ZooKeeper it is preloaded into: a
// real server whose clock is behind the watcher's.
const libfaketime = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"

// A real ZooKeeper whose clock runs 30 s behind the watcher's: the watcher
// measures the offset from the nodes it sees created and publishes ctimes
// on its own clock, so a node created now does not read as 30 s old.
func TestSkewedServerClock(t *testing.T) {
	if _, err := os.Stat(libfaketime); err != nil {
		missing(t, "libfaketime (Debian package faketime)", err)
	}
	const skew = 30 * time.Second
	cleanFaketimeShm(t)
	// The JVM inherits this process's environment; nothing else is started
	// while it is set.
	t.Setenv("LD_PRELOAD", libfaketime)
	t.Setenv("FAKETIME", "-30s")
	t.Setenv("FAKETIME_DONT_FAKE_MONOTONIC", "1")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	began := time.Now()
	// Without the AdminServer: under libfaketime its Jetty takes about 7 s
	// more to start here (20 s in all against 5 s without it), the slowest
	// part of a test that failed once on a busy CI machine. The watcher
	// reads the watch table by 4lw.
	srv, err := zklocal.Start(ctx, zklocal.Options{ExtraConfig: map[string]string{"admin.enableServer": "false"}})
	cancel()
	t.Logf("a ZooKeeper under libfaketime started in %v", time.Since(began).Round(time.Millisecond))
	os.Unsetenv("LD_PRELOAD")
	os.Unsetenv("FAKETIME")
	if errors.Is(err, zklocal.ErrNotInstalled) {
		missing(t, "ZooKeeper", err)
	}
	if err != nil {
		t.Fatalf("start a ZooKeeper 30 s behind: %v", err)
	}
	t.Cleanup(func() { srv.Close() })

	// Long session timeouts: a JVM under libfaketime is slow to answer on a
	// busy machine, and nothing here is about expiry.
	c := connect(t, []string{srv.Addr()}, 15*time.Second)
	const path = "/skewed"
	if _, err := c.Create(path, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	_, rec := startWatcher(t, Config{Servers: []string{srv.Addr()}, Paths: []string{path}, SessionTimeout: 15 * time.Second})
	rec.wait(t, path, 0, "first read", func(s lockqueue.Snapshot) bool { return s.Live() && s.Exists })
	t.Logf("first read at %v", time.Since(began).Round(time.Millisecond))

	// Each create is seen live; after the first the offset is known.
	for i := 1; i <= 2; i++ {
		mark := rec.mark(path)
		before := time.Now()
		p, err := c.Create(path+"/_c_0123456789abcdef0123456789abcdef-lock-", nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
		if err != nil {
			t.Fatal(err)
		}
		after := time.Now()
		_, st, err := c.Get(p)
		if err != nil {
			t.Fatal(err)
		}
		if raw := time.UnixMilli(st.Ctime); before.Sub(raw) < skew-5*time.Second {
			t.Fatalf("the server's ctime %v is not behind the local clock (%v): libfaketime did not take", raw, before)
		}
		snap := rec.wait(t, path, mark, fmt.Sprintf("%d nodes", i), func(s lockqueue.Snapshot) bool { return len(s.Nodes) == i })
		if i < 2 {
			continue
		}
		for _, n := range snap.Nodes {
			if n.Name != p[len(path)+1:] {
				continue
			}
			// On the watcher's clock the node was made between before and
			// after; the estimate is high by at most a read's delay.
			if n.Ctime.Before(before.Add(-time.Second)) || n.Ctime.After(after.Add(5*time.Second)) {
				t.Errorf("published ctime %v: want it on the watcher's clock, between %v and %v (the server's says %v)",
					n.Ctime.Format(time.StampMilli), before.Format(time.StampMilli), after.Format(time.StampMilli), time.UnixMilli(st.Ctime).Format(time.StampMilli))
			}
		}
	}
}

// cleanFaketimeShm removes, after the test, the shared memory files
// libfaketime made for the processes it was preloaded into: each makes
// /dev/shm/faketime_shm_PID and sem.faketime_sem_PID and unlinks them only
// on a clean exit, which a server stopped with SIGKILL never has. Files of
// a process still running are left alone.
func cleanFaketimeShm(t *testing.T) {
	before := faketimeShm(t)
	t.Cleanup(func() {
		for name, pid := range faketimeShm(t) {
			if before[name] != 0 {
				continue
			}
			if err := syscall.Kill(pid, 0); err == nil {
				continue // not ours to remove while it runs
			}
			if err := os.Remove(filepath.Join("/dev/shm", name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("remove libfaketime's %s: %v", name, err)
			}
		}
	})
}

// faketimeShm lists libfaketime's files in /dev/shm by the pid they name.
func faketimeShm(t *testing.T) map[string]int {
	entries, err := os.ReadDir("/dev/shm")
	if err != nil {
		t.Logf("read /dev/shm: %v", err)
		return nil
	}
	out := map[string]int{}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), "faketime_shm_")
		if !ok {
			rest, ok = strings.CutPrefix(e.Name(), "sem.faketime_sem_")
		}
		if pid, err := strconv.Atoi(rest); ok && err == nil {
			out[e.Name()] = pid
		}
	}
	return out
}

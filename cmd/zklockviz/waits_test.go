package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// Two kazoo clients, each with its own session: c0 holds /a and queues on
// /b, c1 holds /b and queues on /a. Each lock alone is a healthy queue (a
// holder, a waiter watching it); the cycle runs through the sessions.
// zklockviz raises deadlock on both locks, each naming the other lock and
// both sessions, through the API; once a client goes, both alerts clear.
func TestDeadlockAcrossLocks(t *testing.T) {
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import kazoo").Run(); err != nil {
		missingClient(t, "kazoo (apt-get install python3-kazoo)", err)
	}
	zks := sharedZK(t)
	root := fmt.Sprintf("/xlock-%d", time.Now().UnixNano())
	a, b := root+"/a", root+"/b"
	s := startServe(t, "--zk", zks.Addr(), "--watch-under", root, "--addr", "127.0.0.1:0", "--poll", "200ms")
	c := startLockClient(t, python, filepath.Join("..", "..", "testdata", "clients", "kazoo_deadlock.py"),
		zks.Addr(), "10", a, b)
	c.expect(t, "waiting 1")

	deadlock := func(path string) (lockqueue.Alert, bool) {
		var snap lockqueue.Snapshot
		getJSON(t, s.url+"/api/v1/lock?path="+path, &snap)
		for _, al := range snap.Alerts {
			if al.Kind == lockqueue.AlertDeadlock {
				return al, true
			}
		}
		return lockqueue.Alert{}, false
	}
	var alerts [2]lockqueue.Alert
	waitFor(t, "deadlock on both locks", func() bool {
		var ok [2]bool
		alerts[0], ok[0] = deadlock(a)
		alerts[1], ok[1] = deadlock(b)
		return ok[0] && ok[1]
	})
	for i, al := range alerts {
		for _, want := range []string{a, b, "across 2 locks", "c0 [0x", "c1 [0x"} {
			if !strings.Contains(al.Message, want) {
				t.Errorf("lock %d's alert does not name %q: %s", i, want, al.Message)
			}
		}
		if other := []string{b, a}[i]; len(al.Locks) != 1 || al.Locks[0].Name != other {
			t.Errorf("lock %d's alert links %v, want %s", i, al.Locks, other)
		}
		if len(al.Nodes) != 2 {
			t.Errorf("lock %d's alert names nodes %v, want its holder and its waiter", i, al.Nodes)
		}
	}
	t.Logf("the alert: %s", alerts[0].Message)
	if alerts[0].Message != alerts[1].Message {
		t.Errorf("one cycle told two ways:\n%s\n%s", alerts[0].Message, alerts[1].Message)
	}

	// The list of locks tells the cycle once, with both locks.
	var list struct {
		Across []struct {
			Kind  string             `json:"kind"`
			Locks []lockqueue.LockID `json:"locks"`
		} `json:"across"`
	}
	getJSON(t, s.url+"/api/v1/locks", &list)
	if len(list.Across) != 1 || list.Across[0].Kind != lockqueue.AlertDeadlock || len(list.Across[0].Locks) != 2 ||
		list.Across[0].Locks[0].Name != a || list.Across[0].Locks[1].Name != b {
		t.Errorf("/api/v1/locks across %+v, want the one deadlock through %s and %s", list.Across, a, b)
	}

	c.Stdin.Close() // both sessions end
	waitFor(t, "both alerts cleared", func() bool {
		_, okA := deadlock(a)
		_, okB := deadlock(b)
		return !okA && !okB
	})
}

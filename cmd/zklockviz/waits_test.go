package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/postgres/pglocal/pgtest"
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
	list := acrossOf(t, s.url)
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

// Two PostgreSQL sessions in a cycle through two advisory locks (each holds
// one and waits for the other; deadlock_timeout raised so the server does
// not break it first): each lock keeps the server's own wait-cycle alert,
// now naming and linking the other lock, and the list of locks tells the
// cycle once, with both locks.
func TestDeadlockAcrossPostgresLocks(t *testing.T) {
	pg := pgtest.ForTest(t)
	ctx := context.Background()
	s := startServe(t, "--postgres", pg.DSN(), "--watch", "postgres:advisory/1", "--watch", "postgres:advisory/2",
		"--addr", "127.0.0.1:0", "--history=off", "--poll", "200ms")
	var conns [2]*pgx.Conn
	for i := range conns {
		c, err := pgx.Connect(ctx, pg.DSN())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(context.Background()) })
		if _, err := c.Exec(ctx, `SET deadlock_timeout = '10min'`); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Exec(ctx, `SELECT pg_advisory_lock($1)`, i+1); err != nil {
			t.Fatal(err)
		}
		conns[i] = c
	}
	for i, c := range conns {
		go c.Exec(ctx, `SELECT pg_advisory_lock($1)`, 2-i) // blocks: the other holds it
	}

	cycle := func(name string) (lockqueue.Alert, bool) {
		var snap lockqueue.Snapshot
		getJSON(t, s.url+"/api/v1/lock?service=postgres&path="+name, &snap)
		for _, a := range snap.Alerts {
			if a.Kind == lockqueue.AlertWaitCycle {
				return a, len(a.Locks) > 0
			}
		}
		return lockqueue.Alert{}, false
	}
	names := [2]string{"advisory/1", "advisory/2"}
	waitFor(t, "both locks' wait-cycle naming the other", func() bool {
		_, ok1 := cycle(names[0])
		_, ok2 := cycle(names[1])
		return ok1 && ok2
	})
	for i, name := range names {
		a, _ := cycle(name)
		if len(a.Locks) != 1 || a.Locks[0].Name != names[1-i] || a.Locks[0].Service != "postgres" {
			t.Errorf("%s's wait-cycle links %+v, want postgres %s", name, a.Locks, names[1-i])
		}
		var snap lockqueue.Snapshot
		getJSON(t, s.url+"/api/v1/lock?service=postgres&path="+name, &snap)
		for _, a := range snap.Alerts {
			if a.Kind == lockqueue.AlertDeadlock {
				t.Errorf("%s has a second alert for the same cycle: %s", name, a.Message)
			}
		}
	}
	list := acrossOf(t, s.url)
	if len(list.Across) != 1 || len(list.Across[0].Locks) != 2 {
		t.Errorf("/api/v1/locks across %+v, want the one cycle through both locks", list.Across)
	}
}

// across is GET /api/v1/locks's alerts that span several locks.
type across struct {
	Across []struct {
		Kind  string             `json:"kind"`
		Locks []lockqueue.LockID `json:"locks"`
	} `json:"across"`
}

func acrossOf(t *testing.T, base string) across {
	t.Helper()
	var list across
	getJSON(t, base+"/api/v1/locks", &list)
	return list
}

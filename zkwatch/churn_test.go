package zkwatch

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/third_party/zk"
)

// churnTotal is how many acquires each healthy queue goes through.
const churnTotal = 50

// longHold is how long every tenth acquire holds: longer than the stall
// grace (two polls of 300ms), so a holder wrongly taken for stalled is
// reported. The clients in testdata/clients hold as long.
const longHold = 1200 * time.Millisecond

// Healthy queues of every supported library, handed off churnTotal times
// by a few sessions that acquire again and again: the watcher must never
// call a holder stalled nor find a cycle. The traps are normal hand-offs
// (a new holder's table entry on its deleted predecessor, a watch table a
// poll older or newer than the listing, a session re-queuing at once, a
// leaked exists watch on a node that is gone).
func TestNoFalseAlarmsUnderChurn(t *testing.T) {
	s := sharedServer(t)
	rw := []string{"read", "write", "read", "write", "read"}
	tests := []struct {
		name  string
		churn func(t *testing.T, addr, dir string)
	}{
		{"Curator InterProcessMutex", javaChurn("mutex", "mutex", "mutex", "mutex")},
		{"Curator InterProcessReadWriteLock", javaChurn(rw...)},
		{"ZooKeeper recipe WriteLock", javaChurn("recipe", "recipe", "recipe", "recipe")},
		{"kazoo Lock", kazooChurn("lock", "lock", "lock", "lock")},
		{"kazoo ReadLock and WriteLock", kazooChurn(rw...)},
		{"go-zookeeper Lock", goChurn(func(c *zk.Conn, dir string, _ int) churnLock { return zk.NewLock(c, dir, acl) })},
		{"seed R_ and W_ nodes", goChurn(func(c *zk.Conn, dir string, i int) churnLock {
			return &seedLock{conn: c, dir: dir, kind: []string{"R_", "W_"}[i%2]}
		})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := fresh("/churn/lock")
			_, rec := startWatcher(t, Config{Servers: []string{s.Addr()}, Paths: []string{dir}})
			rec.wait(t, dir, 0, "a first snapshot", func(s lockqueue.Snapshot) bool { return s.Live() })
			tc.churn(t, s.Addr(), dir)
			rec.wait(t, dir, 0, "the queue empty again", func(s lockqueue.Snapshot) bool {
				return s.Live() && len(s.Nodes) == 0
			})
			holders := map[string]bool{}
			confirmed := 0
			for _, snap := range rec.all(dir) {
				for _, a := range snap.Alerts {
					if a.Kind == lockqueue.AlertStalled || a.Kind == lockqueue.AlertDeadlock {
						t.Errorf("false alarm on a healthy queue: %s %v: %s\n%s", a.Kind, a.Nodes, a.Message, describe(snap))
					}
				}
				for _, n := range snap.Nodes {
					if n.Holding {
						holders[n.Name] = true
					}
					if n.StalledOn() != "" {
						t.Errorf("%s marked stalled on %s on a healthy queue", n.Name, n.StalledOn())
					}
					if n.Edge == lockqueue.EdgeConfirmed {
						confirmed++
					}
				}
			}
			// The check means something only if the watcher saw the churn:
			// many holders, and waiters whose watches the table confirmed.
			if len(holders) < churnTotal/5 || confirmed == 0 {
				t.Errorf("the watcher saw %d holders and %d confirmed waits in %d snapshots: too little of the churn to judge",
					len(holders), confirmed, len(rec.all(dir)))
			}
			t.Logf("%d snapshots, %d holders seen, %d confirmed waits", len(rec.all(dir)), len(holders), confirmed)
		})
	}
}

func javaChurn(kinds ...string) func(t *testing.T, addr, dir string) {
	return func(t *testing.T, addr, dir string) {
		c := startJava(t, "ChurnLocks", append([]string{addr, dir, "10000", fmt.Sprint(churnTotal)}, kinds...)...)
		c.expect(t, "done")
	}
}

func kazooChurn(kinds ...string) func(t *testing.T, addr, dir string) {
	return func(t *testing.T, addr, dir string) {
		needKazoo(t)
		args := append([]string{filepath.Join(clientsDir(t), "kazoo_churn.py"), addr, dir, "10", fmt.Sprint(churnTotal)}, kinds...)
		c := startClient(t, python, args...)
		c.expect(t, "done")
	}
}

// churnLock is a lock a Go participant churns.
type churnLock interface {
	Lock() error
	Unlock() error
}

// goChurn churns four participants, each its own session, in this process.
func goChurn(newLock func(c *zk.Conn, dir string, i int) churnLock) func(t *testing.T, addr, dir string) {
	return func(t *testing.T, addr, dir string) {
		mkdirs(t, connect(t, []string{addr}, 10*time.Second), dir)
		var count atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for i := range 4 {
			l := newLock(connect(t, []string{addr}, 10*time.Second), dir, i)
			wg.Go(func() {
				for count.Load() < churnTotal {
					if err := l.Lock(); err != nil {
						errs <- fmt.Errorf("participant %d: lock: %w", i, err)
						return
					}
					hold := time.Duration(rand.IntN(81)) * time.Millisecond
					if count.Add(1)%10 == 0 {
						hold = longHold
					}
					time.Sleep(hold)
					if err := l.Unlock(); err != nil {
						errs <- fmt.Errorf("participant %d: unlock: %w", i, err)
						return
					}
					time.Sleep(time.Duration(rand.IntN(41)) * time.Millisecond)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
}

// seedLock is the seeds' read/write lock (seed 000) as its write-up codes
// it: an R_ or W_ ephemeral sequential node, then whom to wait for by the
// rule (lockqueue's, the one place that knows it), an exists() watch on
// it, and a fresh look after each wake-up. exists() on a node already gone
// leaves a watch that never fires: a leaked watch, not a stall.
type seedLock struct {
	conn *zk.Conn
	dir  string
	kind string
	node string
}

func (l *seedLock) Lock() error {
	p, err := l.conn.Create(l.dir+"/"+l.kind, nil, zk.FlagEphemeral|zk.FlagSequence, acl)
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	l.node = path.Base(p)
	for {
		names, _, err := l.conn.Children(l.dir)
		if err != nil {
			return fmt.Errorf("children: %w", err)
		}
		children := make([]lockqueue.Child, len(names))
		for i, n := range names {
			children[i] = lockqueue.Child{Name: n, EphemeralOwner: 1}
		}
		q := lockqueue.Build(l.dir, children, lockqueue.Options{})
		var me lockqueue.Node
		for _, n := range q.Nodes {
			if n.Name == l.node {
				me = n
			}
		}
		if me.Name == "" {
			return fmt.Errorf("%s is gone", l.node)
		}
		if me.Holding {
			return nil
		}
		ok, _, ch, err := l.conn.ExistsW(l.dir + "/" + me.WaitsFor)
		if err != nil {
			return fmt.Errorf("exists %s: %w", me.WaitsFor, err)
		}
		if ok {
			<-ch
		}
	}
}

func (l *seedLock) Unlock() error {
	if err := l.conn.Delete(l.dir+"/"+l.node, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("delete %s: %w", l.node, err)
	}
	return nil
}

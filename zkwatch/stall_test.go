package zkwatch

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/third_party/zk"
)

// lastOtherLock acquires like go-zookeeper's Lock (an ephemeral sequential
// _c_<32 hex>-lock- node, getChildren, a GetW watch on the node to wait
// for) but picks that node the way kazoo 2.8's ReadLock does: the loop
// that should stop at its own node never does, so it waits for the last
// other node of the queue, even one queued after it. Until a node joins
// behind it, that is its predecessor and all looks well.
type lastOtherLock struct {
	conn *zk.Conn
	dir  string
	node string // full path
	// watching receives each node it sets a watch on.
	watching chan string
}

func (l *lastOtherLock) lock() error {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return err
	}
	p, err := l.conn.Create(l.dir+"/_c_"+hex.EncodeToString(b[:])+"-lock-", nil, zk.FlagEphemeral|zk.FlagSequence, acl)
	if err != nil {
		return fmt.Errorf("create under %s: %w", l.dir, err)
	}
	l.node = p
	for {
		children, _, err := l.conn.Children(l.dir)
		if err != nil {
			return fmt.Errorf("children of %s: %w", l.dir, err)
		}
		slices.SortFunc(children, func(a, b string) int { return strings.Compare(seqOf(a), seqOf(b)) })
		wait := ""
		for _, c := range children {
			if c != path.Base(p) {
				wait = c // the bug: no break at its own node
			}
		}
		if wait == "" {
			return nil
		}
		_, _, ch, err := l.conn.GetW(l.dir + "/" + wait)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return fmt.Errorf("get %s: %w", wait, err)
		}
		l.watching <- wait
		<-ch
	}
}

func seqOf(name string) string { return name[len(name)-10:] }

// stallOf returns the stalled-holder alert on holder, if any.
func stallOf(s lockqueue.Snapshot, holder string) (lockqueue.Alert, bool) {
	for _, a := range s.Alerts {
		if a.Kind == lockqueue.AlertStalled && len(a.Nodes) > 0 && a.Nodes[0] == holder {
			return a, true
		}
	}
	return lockqueue.Alert{}, false
}

func alertOf(s lockqueue.Snapshot, kind string) (lockqueue.Alert, bool) {
	for _, a := range s.Alerts {
		if a.Kind == kind {
			return a, true
		}
	}
	return lockqueue.Alert{}, false
}

// checkStall checks a snapshot with holder stalled on waitedFor and the
// deadlock cycle [holder, waitedFor].
func checkStall(t *testing.T, s lockqueue.Snapshot, holder, waitedFor string) {
	t.Helper()
	a, ok := stallOf(s, holder)
	if !ok || !slices.Equal(a.Nodes, []string{holder, waitedFor}) {
		t.Errorf("stalled-holder alert %+v, want nodes [%s %s]: %s", a, holder, waitedFor, describe(s))
	}
	for _, n := range s.Nodes {
		if n.Name == holder && (!n.Holding || n.StalledOn() != waitedFor || n.StalledSince().IsZero()) {
			t.Errorf("holder %s: holding=%t stalledOn=%q since=%v, want holding, stalled on %s", n.Name, n.Holding, n.StalledOn(), n.StalledSince(), waitedFor)
		}
	}
	d, ok := alertOf(s, lockqueue.AlertDeadlock)
	if want := []string{holder, waitedFor}; !ok || !slices.Equal(d.Nodes, want) {
		t.Errorf("deadlock alert %+v, want the cycle %v in order", d, want)
	}
}

// (a) A client that acquires like go-zookeeper's Lock but, once woken,
// watches the node queued after it: it holds by rule while it waits for
// that node, whose real go-zookeeper Lock waits for it.
func TestStalledHolderWrongWatch(t *testing.T) {
	s := sharedServer(t)
	dir := fresh("/stall/gozk")
	mkdirs(t, connect(t, []string{s.Addr()}, 10*time.Second), dir)
	_, rec := startWatcher(t, Config{Servers: []string{s.Addr()}, Paths: []string{dir}})

	first := zk.NewLock(connect(t, []string{s.Addr()}, 10*time.Second), dir, acl)
	if err := first.Lock(); err != nil {
		t.Fatal(err)
	}
	buggy := &lastOtherLock{conn: connect(t, []string{s.Addr()}, 10*time.Second), dir: dir, watching: make(chan string, 4)}
	acquired := make(chan error, 1)
	go func() { acquired <- buggy.lock() }()
	<-buggy.watching // its predecessor, by luck: nothing is queued behind it yet

	last := zk.NewLock(connect(t, []string{s.Addr()}, 10*time.Second), dir, acl)
	go last.Lock()
	healthy := rec.wait(t, dir, 0, "three nodes, both waiters confirmed", queueIs(lockqueue.GoZookeeper, exclusive(3), lockqueue.EdgeConfirmed))
	for _, a := range healthy.Alerts {
		t.Errorf("alert on a queue that still looks healthy: %+v", a)
	}
	x, b := healthy.Nodes[1].Name, healthy.Nodes[2].Name
	if x != path.Base(buggy.node) {
		t.Fatalf("queue %s: want the wrong-watch client's node second", describe(healthy))
	}

	mark := rec.mark(dir)
	if err := first.Unlock(); err != nil {
		t.Fatal(err)
	}
	if got := <-buggy.watching; got != b {
		t.Fatalf("the client watches %s, want the node after it, %s", got, b)
	}
	snap := rec.wait(t, dir, mark, "a stalled holder", func(s lockqueue.Snapshot) bool {
		_, ok := stallOf(s, x)
		return s.Live() && ok
	})
	checkStall(t, snap, x, b)
	select {
	case err := <-acquired:
		t.Fatalf("the wrong-watch client returned from lock (%v): it should be stuck", err)
	default:
	}
	// The finding stays until the client lets go.
	mark = rec.mark(dir)
	if err := buggy.conn.Delete(buggy.node, -1); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, dir, mark, "the queue moving again, no alert", func(s lockqueue.Snapshot) bool {
		return s.Live() && len(s.Nodes) == 1 && s.Nodes[0].Name == b && s.Nodes[0].Holding && len(s.Alerts) == 0
	})
}

// (b) The seeds' read/write lock with real sessions: a reader that holds
// by rule but watches the writer queued after it, while that writer
// watches the reader. The deadlock names the cycle in order, reader first.
func TestStalledReaderDeadlock(t *testing.T) {
	s := sharedServer(t)
	dir := fresh("/stall/SHARE_LOCK")
	setup := connect(t, []string{s.Addr()}, 10*time.Second)
	mkdirs(t, setup, dir)
	_, rec := startWatcher(t, Config{Servers: []string{s.Addr()}, Paths: []string{dir}, StallGrace: time.Second})

	var conns []*zk.Conn
	var names []string
	for _, k := range []string{"W_", "R_", "W_"} {
		c := connect(t, []string{s.Addr()}, 10*time.Second)
		p, err := c.Create(dir+"/"+k, nil, zk.FlagEphemeral|zk.FlagSequence, acl)
		if err != nil {
			t.Fatal(err)
		}
		conns, names = append(conns, c), append(names, path.Base(p))
	}
	exists := func(c *zk.Conn, name string) {
		t.Helper()
		if _, _, _, err := c.ExistsW(dir + "/" + name); err != nil {
			t.Fatal(err)
		}
	}
	exists(conns[1], names[0]) // the reader waits for the writer before it
	exists(conns[2], names[1]) // the second writer for its predecessor
	rec.wait(t, dir, 0, "W R W, edges confirmed", queueIs(lockqueue.SeedRW, []wantNode{{true, -1}, {false, 0}, {false, 1}}, lockqueue.EdgeConfirmed))

	mark := rec.mark(dir)
	if err := conns[0].Delete(dir+"/"+names[0], -1); err != nil {
		t.Fatal(err)
	}
	// Woken, the reader looks for a writer and picks the one after it.
	exists(conns[1], names[2])
	snap := rec.wait(t, dir, mark, "a deadlock through the stalled reader", func(s lockqueue.Snapshot) bool {
		return s.Live() && hasAlert(s, lockqueue.AlertDeadlock) && hasAlert(s, lockqueue.AlertStalled)
	})
	checkStall(t, snap, names[1], names[2])
	if n := snap.Nodes[0]; n.Name != names[1] || n.Mode != lockqueue.Read {
		t.Errorf("first node %s (%s), want the reader", n.Name, n.Mode)
	}
}

// (c) kazoo 2.8.0, as Debian ships it: its ReadLock's predecessor search
// never stops at its own node (kazoo issue #649, fixed in 2.9.0), so a
// reader woken by the writer before it watches the writer queued after it,
// which watches the reader: both wait forever, and the reader holds by rule.
func TestKazooReadLockStalls(t *testing.T) {
	s := sharedServer(t)
	needKazoo(t)
	if v := kazooVersion(t); v != "2.8.0" {
		t.Skipf("kazoo %s: the ReadLock bug this reproduces is in 2.8.0 (fixed in 2.9.0)", v)
	}
	dir := fresh("/stall/kazoo")
	_, rec := startWatcher(t, Config{Servers: []string{s.Addr()}, Paths: []string{dir}})
	c := startKazoo(t, s.Addr(), dir, 10*time.Second, "write", "read", "write")
	for i := range 3 {
		c.expect(t, fmt.Sprintf("queued %d ", i))
	}
	c.expect(t, "acquired 0 ")
	before := rec.wait(t, dir, 0, "kazoo W R W", func(s lockqueue.Snapshot) bool {
		return s.Live() && s.Recipe == lockqueue.Kazoo && len(s.Nodes) == 3 && s.Nodes[0].Holding
	})
	reader, writer := before.Nodes[1].Name, before.Nodes[2].Name

	mark := rec.mark(dir)
	c.send(t, "release 0")
	c.expect(t, "released 0")
	snap := rec.wait(t, dir, mark, "kazoo's reader stalled in a deadlock", func(s lockqueue.Snapshot) bool {
		return s.Live() && len(s.Nodes) == 2 && hasAlert(s, lockqueue.AlertDeadlock) && hasAlert(s, lockqueue.AlertStalled)
	})
	checkStall(t, snap, reader, writer)
	if n := snap.Nodes[1]; n.Edge != lockqueue.EdgeConfirmed {
		t.Errorf("the writer's edge %q, want confirmed: it waits for the reader by rule", n.Edge)
	}
	c.mu.Lock()
	seen := slices.Clone(c.seen)
	c.mu.Unlock()
	if slices.ContainsFunc(seen, func(l string) bool { return strings.HasPrefix(l, "acquired 1") }) {
		t.Errorf("kazoo's reader acquired: %v; the stall this test shows did not happen", seen)
	}
}

// kazooVersion is the installed kazoo's version.
func kazooVersion(t *testing.T) string {
	t.Helper()
	out, err := exec.Command(python, "-c", "import kazoo.version; print(kazoo.version.__version__)").Output()
	if err != nil {
		t.Fatalf("kazoo version: %v", err)
	}
	return strings.TrimSpace(string(out))
}

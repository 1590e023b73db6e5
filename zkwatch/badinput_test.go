package zkwatch

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/third_party/zk"
)

// Folders that are not (clean) lock queues: an alert and the nodes, never a crash.
func TestNotALock(t *testing.T) {
	s := sharedServer(t)
	c := connect(t, []string{s.Addr()}, 10*time.Second)
	tests := []struct {
		name     string
		children []string
		recipe   lockqueue.Recipe
		alert    string
	}{
		{"only foreign children", []string{"config", "data", "README"}, lockqueue.NoRecipe, lockqueue.AlertNotALock},
		{"a foreign child among lock nodes", []string{"W_0000000001", "W_0000000002", "notes"}, lockqueue.SeedRW, lockqueue.AlertForeign},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := fresh(fmt.Sprintf("/notalock/%d", i))
			mkdirs(t, c, path)
			for _, n := range tc.children {
				if _, err := c.Create(path+"/"+n, []byte("x"), 0, acl); err != nil {
					t.Fatal(err)
				}
			}
			_, rec := startWatcher(t, Config{Servers: []string{s.Addr()}, Paths: []string{path}})
			snap := rec.wait(t, path, 0, tc.alert+" alert", func(s lockqueue.Snapshot) bool {
				return s.Live() && hasAlert(s, tc.alert) && len(s.Nodes) == len(tc.children)
			})
			if snap.Recipe != tc.recipe {
				t.Errorf("recipe %q, want %q", snap.Recipe, tc.recipe)
			}
			if !hasAlert(snap, lockqueue.AlertPersistent) {
				t.Errorf("persistent children but no %s alert: %s", lockqueue.AlertPersistent, describe(snap))
			}
		})
	}
}

// Binary node data is carried as base64 and flagged.
func TestBinaryData(t *testing.T) {
	s := sharedServer(t)
	path := fresh("/binary/lock")
	c := connect(t, []string{s.Addr()}, 10*time.Second)
	mkdirs(t, c, path)
	data := []byte{0xff, 0x00, 0x12, 0x34, 0x80}
	if _, err := c.Create(path+"/W_", data, zk.FlagEphemeral|zk.FlagSequence, acl); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(path+"/W_", []byte("plain text"), zk.FlagEphemeral|zk.FlagSequence, acl); err != nil {
		t.Fatal(err)
	}
	_, rec := startWatcher(t, Config{Servers: []string{s.Addr()}, Paths: []string{path}})
	snap := rec.wait(t, path, 0, "2 nodes", func(s lockqueue.Snapshot) bool { return s.Live() && len(s.Nodes) == 2 })
	if n := snap.Nodes[0]; !n.DataBinary || n.Data != base64.StdEncoding.EncodeToString(data) {
		t.Errorf("binary node: data %q binary=%t, want base64 %q", n.Data, n.DataBinary, base64.StdEncoding.EncodeToString(data))
	}
	if n := snap.Nodes[1]; n.DataBinary || n.Data != "plain text" {
		t.Errorf("text node: data %q binary=%t", n.Data, n.DataBinary)
	}
}

// 10,000 children arriving in ten atomic multi-ops: every published
// snapshot is whole (a multiple of 1,000 nodes), the last has all 10,000,
// and each child is read once however many reads the burst caused.
func TestTenThousandChildren(t *testing.T) {
	s := sharedServer(t)
	path := fresh("/many/lock")
	const batches, perBatch = 10, 1000
	c := connect(t, []string{s.Addr()}, 30*time.Second)
	mkdirs(t, c, path)
	w, rec := startWatcher(t, Config{Servers: []string{s.Addr()}, Paths: []string{path}})
	rec.wait(t, path, 0, "empty and live", func(s lockqueue.Snapshot) bool { return s.Live() && s.Exists })
	readsBefore := w.Reads()

	for b := range batches {
		ops := make([]any, perBatch)
		for i := range ops {
			ops[i] = &zk.CreateRequest{Path: path + "/W_", Data: []byte("x"), Acl: acl, Flags: zk.FlagEphemeral | zk.FlagSequence}
		}
		if _, err := c.Multi(ops...); err != nil {
			t.Fatalf("multi %d: %v", b, err)
		}
	}
	last := rec.wait(t, path, 0, "10,000 nodes", func(s lockqueue.Snapshot) bool { return s.Live() && len(s.Nodes) == batches*perBatch })
	if last.Recipe != lockqueue.SeedRW || !last.Nodes[0].Holding || last.Nodes[1].WaitsFor != last.Nodes[0].Name {
		t.Errorf("queue not worked out: %s", describe(last))
	}
	for _, snap := range rec.all(path) {
		if len(snap.Nodes)%perBatch != 0 {
			t.Errorf("a partial snapshot with %d nodes (rev %d): snapshots must be whole", len(snap.Nodes), snap.Revision)
		}
	}
	// One getData per child, plus a getChildren (and at most a parent
	// getData) per read, and there is at most one read per batch, plus one.
	reads := w.Reads() - readsBefore
	if max := int64(batches*perBatch + 2*(batches+1)); reads > max {
		t.Errorf("%d ZooKeeper reads for %d children in %d batches, want at most %d", reads, batches*perBatch, batches, max)
	}
	t.Logf("%d reads, %d snapshots published for %d children", reads, len(rec.all(path)), batches*perBatch)
}

// Two waiters whose sessions each watch the other's node: a cycle only the
// server's watch table shows.
func TestDeadlockCycle(t *testing.T) {
	s := sharedServer(t)
	path := fresh("/deadlock/lock")
	setup := connect(t, []string{s.Addr()}, 10*time.Second)
	mkdirs(t, setup, path)
	_, rec := startWatcher(t, Config{Servers: []string{s.Addr()}, Paths: []string{path}})

	var conns []*zk.Conn
	var nodes []string
	for range 3 {
		c := connect(t, []string{s.Addr()}, 10*time.Second)
		p, err := c.Create(path+"/W_", nil, zk.FlagEphemeral|zk.FlagSequence, acl)
		if err != nil {
			t.Fatal(err)
		}
		conns, nodes = append(conns, c), append(nodes, p)
	}
	// Node 1 should watch node 0 and node 2 node 1; instead 1 and 2 watch each other.
	if _, _, _, err := conns[1].ExistsW(nodes[2]); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := conns[2].ExistsW(nodes[1]); err != nil {
		t.Fatal(err)
	}
	snap := rec.wait(t, path, 0, "deadlock alert", func(s lockqueue.Snapshot) bool { return s.Live() && hasAlert(s, lockqueue.AlertDeadlock) })
	for _, a := range snap.Alerts {
		if a.Kind != lockqueue.AlertDeadlock {
			continue
		}
		got := slices.Sorted(slices.Values(a.Nodes))
		want := []string{strings.TrimPrefix(nodes[1], path+"/"), strings.TrimPrefix(nodes[2], path+"/")}
		if !slices.Equal(got, want) {
			t.Errorf("deadlock nodes %v, want %v", got, want)
		}
	}
	if e := snap.Nodes[1].Edge; e != lockqueue.EdgeUnexpected {
		t.Errorf("node 1 watches node 2, not its predecessor: edge %q, want %q", e, lockqueue.EdgeUnexpected)
	}
}

// A path added at runtime that does not exist yet, appears, and goes away
// again (Curator's container parents do that).
func TestParentComesAndGoes(t *testing.T) {
	s := sharedServer(t)
	path := fresh("/later/lock")
	w, rec := startWatcher(t, Config{Servers: []string{s.Addr()}})
	if err := w.AddPath(path); err != nil {
		t.Fatal(err)
	}
	if err := w.AddPath(path); err != nil {
		t.Fatalf("adding a watched path again: %v", err)
	}
	if got := w.Paths(); !slices.Equal(got, []string{path}) {
		t.Fatalf("Paths() = %v", got)
	}
	absent := rec.wait(t, path, 0, "exists=false", func(s lockqueue.Snapshot) bool { return s.Live() && !s.Exists })
	if !hasAlert(absent, lockqueue.AlertNoParent) {
		t.Errorf("no %s alert: %s", lockqueue.AlertNoParent, describe(absent))
	}

	c := connect(t, []string{s.Addr()}, 10*time.Second)
	mark := rec.mark(path)
	mkdirs(t, c, path)
	node, err := c.Create(path+"/W_", nil, zk.FlagEphemeral|zk.FlagSequence, acl)
	if err != nil {
		t.Fatal(err)
	}
	rec.wait(t, path, mark, "the parent and its node", func(s lockqueue.Snapshot) bool { return s.Live() && s.Exists && len(s.Nodes) == 1 })
	if got, ok := w.Snapshot(path); !ok || len(got.Nodes) != 1 {
		t.Errorf("Snapshot(%s) = %s, %t", path, describe(got), ok)
	}

	mark = rec.mark(path)
	if err := c.Delete(node, -1); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(path, -1); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, path, mark, "exists=false again", func(s lockqueue.Snapshot) bool { return s.Live() && !s.Exists && len(s.Nodes) == 0 })

	if _, ok := w.Snapshot("/never/added"); ok {
		t.Errorf("Snapshot of a path never added reports ok")
	}
}

// --watch-under discovers lock parents up to MaxDiscoverDepth levels down,
// keeps discovering, and forgets discovered parents that go away.
func TestDiscoverUnderPrefix(t *testing.T) {
	s := sharedServer(t)
	c := connect(t, []string{s.Addr()}, 10*time.Second)
	apps := fresh("/apps")
	mkLock := func(path string, names ...string) {
		t.Helper()
		mkdirs(t, c, path)
		for _, n := range names {
			if _, err := c.Create(path+"/"+n, nil, zk.FlagEphemeral|zk.FlagSequence, acl); err != nil {
				t.Fatal(err)
			}
		}
	}
	mkLock(apps+"/svc1/locks/a", "W_")
	mkLock(apps+"/x1/x2/x3/x4/deep", "W_") // 5 levels down: too deep
	mkdirs(t, c, apps+"/svc1/data/blob")   // not a lock
	// kazoo's Semaphore at /apps/sem: a Lock queue beside it, leases
	// (no sequence) in it.
	mkLock(apps+"/sem-__lock__", "0123456789abcdef0123456789abcdef__lock__")
	mkdirs(t, c, apps+"/sem")
	if _, err := c.Create(apps+"/sem/0123456789abcdef0123456789abcdef", nil, zk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}

	w, rec := startWatcher(t, Config{Servers: []string{s.Addr()}, Prefixes: []string{apps}})
	rec.wait(t, apps+"/svc1/locks/a", 0, "discovered, 1 node", func(s lockqueue.Snapshot) bool { return s.Live() && len(s.Nodes) == 1 })
	// One semaphore: its lease and, read from the sibling, its lock queue.
	rec.wait(t, apps+"/sem", 0, "kazoo semaphore discovered, lease and lock queue", func(s lockqueue.Snapshot) bool {
		return s.Live() && len(s.Nodes) == 2 && s.Recipe == lockqueue.Kazoo && s.Nodes[1].Folder() == apps+"/sem-__lock__"
	})

	// Made after the start: discovery keeps going.
	mkLock(apps+"/x1/x2/x3/y4", "R_", "W_") // exactly 4 levels down
	rec.wait(t, apps+"/x1/x2/x3/y4", 0, "discovered, 2 nodes", func(s lockqueue.Snapshot) bool { return s.Live() && len(s.Nodes) == 2 })
	mkLock(apps+"/svc2/b", "W_", "W_")
	rec.wait(t, apps+"/svc2/b", 0, "discovered, 2 nodes", func(s lockqueue.Snapshot) bool { return s.Live() && len(s.Nodes) == 2 })

	// The semaphore's sibling lock queue is part of it, not a lock of its own.
	want := []string{apps + "/sem", apps + "/svc1/locks/a", apps + "/svc2/b", apps + "/x1/x2/x3/y4"}
	if got := w.Paths(); !slices.Equal(got, want) {
		t.Errorf("Paths() = %v, want %v", got, want)
	}
	for _, full := range w.disc.fulls() {
		if strings.Count(strings.TrimPrefix(full, apps), "/") > MaxDiscoverDepth {
			t.Errorf("a children watch on %s, deeper than %d levels below %s", full, MaxDiscoverDepth, apps)
		}
	}

	// A discovered parent that goes away is forgotten, after a last snapshot.
	mark := rec.mark(apps + "/svc2/b")
	children, _, err := c.Children(apps + "/svc2/b")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range children {
		if err := c.Delete(apps+"/svc2/b/"+n, -1); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Delete(apps+"/svc2/b", -1); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, apps+"/svc2/b", mark, "exists=false", func(s lockqueue.Snapshot) bool { return !s.Exists })
	// The hub behind Publish is told to forget it, after that last snapshot.
	if n := rec.forgotten(t, apps+"/svc2/b"); n == 0 || rec.all(apps + "/svc2/b")[n-1].Exists {
		t.Errorf("Forget called after %d snapshots, want after the last one (exists=false)", n)
	}
	deadline := time.Now().Add(waitTimeout)
	for slices.Contains(w.Paths(), apps+"/svc2/b") {
		if time.Now().After(deadline) {
			t.Fatalf(apps+"/svc2/b still watched after deletion: %v", w.Paths())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := w.AddPath(apps + "/svc2/b"); err != nil {
		t.Fatalf("re-adding a forgotten path: %v", err)
	}
	rec.wait(t, apps+"/svc2/b", mark, "watched again, exists=false with a no-parent alert", func(s lockqueue.Snapshot) bool {
		return s.Live() && !s.Exists && hasAlert(s, lockqueue.AlertNoParent)
	})
	rec.mu.Lock()
	forgot := rec.forgot
	rec.mu.Unlock()
	for p := range forgot {
		if p != apps+"/svc2/b" {
			t.Errorf("Forget(%s), which is still watched", p)
		}
	}
}

// A kazoo semaphore lease (a non-sequential name) deleted and made again
// by another session between two listings: the listing shows the same
// names, but the node is new and must be read again (its owner changed).
// Also a lease whose name ends in ten decimal digits, which kazoo's
// uuid4().hex makes about once in 500: it is no sequential node either.
func TestRecreatedLeaseReRead(t *testing.T) {
	for _, lease := range []string{"0123456789abcdef0123456789abcdef", "0123456789abcdef0123451234567890"} {
		t.Run(lease, func(t *testing.T) { testRecreatedLeaseReRead(t, lease) })
	}
}

func testRecreatedLeaseReRead(t *testing.T, lease string) {
	s := sharedServer(t)
	path := fresh("/lease/sem")
	c1 := connect(t, []string{s.Addr()}, 10*time.Second)
	c2 := connect(t, []string{s.Addr()}, 10*time.Second)
	mkdirs(t, c1, path)
	if _, err := c1.Set(path, []byte("2"), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := c1.Create(path+"/"+lease, []byte("client one"), zk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}
	w, rec := startWatcher(t, Config{Servers: []string{s.Addr()}, Paths: []string{path}})
	rec.wait(t, path, 0, "the lease, owned by client one", func(s lockqueue.Snapshot) bool {
		return s.Live() && len(s.Nodes) == 1 && s.Nodes[0].Session == lockqueue.SessionHex(c1.SessionID())
	})
	// Also a sequential node, so that the check below sees the budget:
	// the lease is read again, never a sequence node.
	if _, err := c1.Create(path+"/W_", nil, zk.FlagEphemeral|zk.FlagSequence, acl); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, path, 0, "two children", func(s lockqueue.Snapshot) bool { return s.Live() && len(s.Nodes) == 2 })
	before := w.Reads()
	if _, err := c2.Multi(
		&zk.DeleteRequest{Path: path + "/" + lease, Version: -1},
		&zk.CreateRequest{Path: path + "/" + lease, Data: []byte("client two"), Acl: acl, Flags: zk.FlagEphemeral},
	); err != nil {
		t.Fatal(err)
	}
	snap := rec.wait(t, path, 0, "the lease, now owned by client two", func(s lockqueue.Snapshot) bool {
		for _, n := range s.Nodes {
			if n.Name == lease {
				return s.Live() && n.Session == lockqueue.SessionHex(c2.SessionID())
			}
		}
		return false
	})
	for _, n := range snap.Nodes {
		if n.Name == lease && n.Data != "client two" {
			t.Errorf("lease data %q, want the new node's %q", n.Data, "client two")
		}
	}
	// A getChildren and a getData of the lease per read; a second read
	// at most, when the events of the multi came apart.
	if reads := w.Reads() - before; reads > 2*2 {
		t.Errorf("%d reads for one re-created lease", reads)
	}
}

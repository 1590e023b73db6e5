package zkwatch

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/third_party/zk"
)

// readWriteMix is the queue W R R W R. In every recipe the first writer
// holds, the next two readers wait for it and the second writer waits for
// the reader just before it; the last reader is where recipes differ.
func readWriteMix(lastReaderWaitsFor int) []wantNode {
	return []wantNode{{true, -1}, {false, 0}, {false, 0}, {false, 2}, {false, lastReaderWaitsFor}}
}

func exclusive(n int) []wantNode {
	out := []wantNode{{true, -1}}
	for i := 1; i < n; i++ {
		out = append(out, wantNode{false, i - 1})
	}
	return out
}

// kazoo's Lock, ReadLock and WriteLock, each participant its own session in
// a real kazoo process; kazoo waits with a get watch on its predecessor.
func TestKazooLocks(t *testing.T) {
	s := sharedServer(t)
	tests := []struct {
		name  string
		kinds []string
		want  []wantNode
	}{
		{"Lock", []string{"lock", "lock", "lock"}, exclusive(3)},
		// kazoo readers wait for the nearest lower writer.
		{"ReadLock and WriteLock", []string{"write", "read", "read", "write", "read"}, readWriteMix(3)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := fresh("/kazoo/" + strings.ReplaceAll(tc.name, " ", "-"))
			_, rec := startWatcher(t, Config{Servers: []string{s.Addr()}, Paths: []string{path}})
			c := startKazoo(t, s.Addr(), path, 10*time.Second, tc.kinds...)
			for i := range tc.kinds {
				c.expect(t, fmt.Sprintf("queued %d ", i))
			}
			c.expect(t, "acquired 0 ")
			snap := rec.wait(t, path, 0, "kazoo queue, edges confirmed", queueIs(lockqueue.Kazoo, tc.want, lockqueue.EdgeConfirmed))
			for i, n := range snap.Nodes {
				if want := fmt.Sprintf("p%d", i); n.Data != want {
					t.Errorf("node %s data %q, want kazoo's identifier %q", n.Name, n.Data, want)
				}
			}

			mark := rec.mark(path)
			c.send(t, "release 0")
			c.expect(t, "released 0")
			after := rec.wait(t, path, mark, "next holder after release", func(s lockqueue.Snapshot) bool {
				return s.Live() && len(s.Nodes) == len(tc.kinds)-1 && s.Nodes[0].Holding
			})
			if after.Nodes[0].Name != snap.Nodes[1].Name {
				t.Errorf("holder after release %s, want %s", after.Nodes[0].Name, snap.Nodes[1].Name)
			}
		})
	}
}

// Curator's InterProcessMutex and InterProcessReadWriteLock in a real JVM.
// Curator's readers all watch the FIRST writer (recipes.md §1).
func TestCuratorLocks(t *testing.T) {
	s := sharedServer(t)
	tests := []struct {
		name  string
		kinds []string
		want  []wantNode
	}{
		{"InterProcessMutex", []string{"mutex", "mutex", "mutex"}, exclusive(3)},
		{"InterProcessReadWriteLock", []string{"write", "read", "read", "write", "read"}, readWriteMix(0)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := fresh("/curator/" + tc.name)
			_, rec := startWatcher(t, Config{Servers: []string{s.Addr()}, Paths: []string{path}})
			c := startJava(t, "CuratorLocks", append([]string{s.Addr(), path, "10000"}, tc.kinds...)...)
			for i := range tc.kinds {
				c.expect(t, fmt.Sprintf("queued %d", i))
			}
			c.expect(t, "acquired 0")
			snap := rec.wait(t, path, 0, "Curator queue, edges confirmed", queueIs(lockqueue.Curator, tc.want, lockqueue.EdgeConfirmed))
			if tc.kinds[1] == "read" {
				last := snap.Nodes[4]
				if last.Mode != lockqueue.Read || !strings.Contains(last.Name, "__READ__") {
					t.Errorf("last node %s mode %s, want a Curator reader", last.Name, last.Mode)
				}
			}

			mark := rec.mark(path)
			c.send(t, "release 0")
			c.expect(t, "released 0")
			rec.wait(t, path, mark, "next holder after release", func(s lockqueue.Snapshot) bool {
				return s.Live() && len(s.Nodes) == len(tc.kinds)-1 && s.Nodes[0].Name == snap.Nodes[1].Name && s.Nodes[0].Holding
			})
		})
	}
}

// ZooKeeper's own Java recipe (zookeeper-recipes-lock): x-<session>-<seq>
// nodes, exists() on the predecessor, data 0x12 0x34.
func TestZookeeperRecipeWriteLock(t *testing.T) {
	s := sharedServer(t)
	path := fresh("/recipe/writelock")
	_, rec := startWatcher(t, Config{Servers: []string{s.Addr()}, Paths: []string{path}})
	c := startJava(t, "RecipeLocks", s.Addr(), path, "10000", "3")
	for i := range 3 {
		c.expect(t, fmt.Sprintf("queued %d ", i))
	}
	snap := rec.wait(t, path, 0, "recipe queue, edges confirmed", queueIs(lockqueue.ZookeeperRecipe, exclusive(3), lockqueue.EdgeConfirmed))
	for _, n := range snap.Nodes {
		if !n.DataBinary || n.Data != "EjQ=" {
			t.Errorf("node %s data %q binary=%t, want base64 of 0x12 0x34", n.Name, n.Data, n.DataBinary)
		}
		if !strings.HasPrefix(n.Name, "x-") {
			t.Errorf("node %s: want x-<session>-<seq>", n.Name)
		}
	}
	mark := rec.mark(path)
	c.send(t, "release 0")
	rec.wait(t, path, mark, "next holder after unlock", queueIs(lockqueue.ZookeeperRecipe, exclusive(2), lockqueue.EdgeConfirmed))
	c.expect(t, "acquired 1")
}

// The seeds' R_/W_ read/write lock (seed 000, LOCK1-LOCK5), made by hand
// with go-zookeeper the way the seed's code does: a writer watches its
// immediate predecessor, a reader the nearest preceding writer, with exists().
func TestSeedReadWriteLock(t *testing.T) {
	s := sharedServer(t)
	path := fresh("/SHARE_LOCK")
	_, rec := startWatcher(t, Config{Servers: []string{s.Addr()}, Paths: []string{path}})
	setup := connect(t, []string{s.Addr()}, 10*time.Second)
	mkdirs(t, setup, path)

	kinds := []string{"R_", "W_", "W_", "R_", "R_"}
	// What each LOCKn watches by the seed's rule, as a queue index.
	watches := []int{-1, 0, 1, 2, 2}
	var names []string
	for i, k := range kinds {
		c := connect(t, []string{s.Addr()}, 10*time.Second)
		p, err := c.Create(path+"/"+k, []byte(fmt.Sprintf("LOCK%d", i+1)), zk.FlagEphemeral|zk.FlagSequence, acl)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, p)
		if w := watches[i]; w >= 0 {
			if _, _, _, err := c.ExistsW(names[w]); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := []wantNode{{true, -1}, {false, 0}, {false, 1}, {false, 2}, {false, 2}}
	snap := rec.wait(t, path, 0, "seed R/W queue, edges confirmed", queueIs(lockqueue.SeedRW, want, lockqueue.EdgeConfirmed))
	if snap.Nodes[3].Data != "LOCK4" {
		t.Errorf("node 3 data %q, want LOCK4", snap.Nodes[3].Data)
	}
}

package zkwatch

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/hub"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/third_party/zk"
	"github.com/zklockviz/zklockviz/zookeeper/zklocal/zktest"
)

var wchsTotal = regexp.MustCompile(`Total watches:\s*(\d+)`)

// childWatches is, from the server's own counters, the number of children
// watches it holds: mntr's zk_watch_count counts both kinds, wchs only data
// watches (recipes.md §2).
func childWatches(t *testing.T, addr string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	reply, err := fourLetter(ctx, addr, "mntr")
	if err != nil {
		t.Fatal(err)
	}
	kv, err := parseMntr(reply)
	if err != nil {
		t.Fatal(err)
	}
	all, err := strconv.Atoi(kv["zk_watch_count"])
	if err != nil {
		t.Fatalf("mntr zk_watch_count %q: %v", kv["zk_watch_count"], err)
	}
	wchs, err := fourLetter(ctx, addr, "wchs")
	if err != nil {
		t.Fatal(err)
	}
	m := wchsTotal.FindStringSubmatch(wchs)
	if m == nil {
		t.Fatalf("wchs: no total in %q", wchs)
	}
	data, _ := strconv.Atoi(m[1])
	return all - data
}

// Exactly one children watch per lock parent, however many viewers look:
// 200 hub subscribers on two lock parents, with changes going on, and the
// server holds two children watches.
func TestOneChildrenWatchPerParent(t *testing.T) {
	s := zktest.ForTest(t) // its own server: no other test's watches
	paths := []string{"/one/a", "/one/b"}
	c := connect(t, []string{s.Addr()}, 10*time.Second)
	for _, p := range paths {
		mkdirs(t, c, p)
	}
	if n := childWatches(t, s.Addr()); n != 0 {
		t.Fatalf("%d children watches before the watcher started", n)
	}
	h := hub.New()
	rec := newRecorder()
	w, _ := startWatcher(t, Config{Servers: []string{s.Addr()}, Paths: paths, Publish: func(snap lockqueue.Snapshot) {
		h.Publish(snap)
		rec.publish(snap)
	}})
	for _, p := range paths {
		fanOut(t, h, p, 100)
	}

	for i := range 3 {
		for _, p := range paths {
			lockAsync(t, rec, connect(t, []string{s.Addr()}, 10*time.Second), p, i+1)
		}
	}
	for _, p := range paths {
		rec.wait(t, p, 0, "queue of 3, confirmed", queueIs(lockqueue.GoZookeeper, exclusive(3), lockqueue.EdgeConfirmed))
	}
	if st := h.Stats(); st.Viewers < 200 {
		t.Fatalf("%d viewers, want 200", st.Viewers)
	}
	// A watch is briefly absent between firing and the re-read that
	// re-arms it, so sample a while: never more than one per parent, and
	// one per parent once quiet.
	seen := map[int]bool{}
	for range 10 {
		seen[childWatches(t, s.Addr())] = true
		time.Sleep(100 * time.Millisecond)
	}
	for n := range seen {
		if n > len(paths) {
			t.Errorf("the server held %d children watches for %d lock parents and 200 viewers, want at most %d", n, len(paths), len(paths))
		}
	}
	if !seen[len(paths)] {
		t.Errorf("children watches seen: %v, want %d (one per lock parent)", seen, len(paths))
	}
	t.Logf("%d children watches, %d reads, 200 viewers", childWatches(t, s.Addr()), w.Reads())
}

// A burst of 10,000 children created, then deleted: the watcher converges
// to the true state after each, reads data only for new children, and never
// publishes, as live, a queue older than one it published before (a
// deletion already seen coming back).
func TestBurstCreateDelete(t *testing.T) {
	s := sharedServer(t)
	path := fresh("/burst/lock")
	const batches, perBatch = 10, 1000
	c := connect(t, []string{s.Addr()}, 30*time.Second)
	mkdirs(t, c, path)
	w, rec := startWatcher(t, Config{Servers: []string{s.Addr()}, Paths: []string{path}})
	rec.wait(t, path, 0, "empty and live", func(s lockqueue.Snapshot) bool { return s.Live() && s.Exists })
	readsBefore := w.Reads()

	var names []string
	for b := range batches {
		ops := make([]any, perBatch)
		for i := range ops {
			ops[i] = &zk.CreateRequest{Path: path + "/W_", Acl: acl, Flags: zk.FlagEphemeral | zk.FlagSequence}
		}
		res, err := c.Multi(ops...)
		if err != nil {
			t.Fatalf("multi %d: %v", b, err)
		}
		for _, r := range res {
			names = append(names, r.String)
		}
	}
	rec.wait(t, path, 0, "10,000 nodes", func(s lockqueue.Snapshot) bool { return s.Live() && len(s.Nodes) == batches*perBatch })
	created := w.Reads() - readsBefore
	if limit := int64(batches*perBatch + 2*(batches+1)); created > limit {
		t.Errorf("%d reads to create 10,000 children, want at most %d", created, limit)
	}

	mark := rec.mark(path)
	readsBefore = w.Reads()
	for b := range batches {
		ops := make([]any, perBatch)
		for i := range ops {
			ops[i] = &zk.DeleteRequest{Path: names[b*perBatch+i], Version: -1}
		}
		if _, err := c.Multi(ops...); err != nil {
			t.Fatalf("delete multi %d: %v", b, err)
		}
	}
	rec.wait(t, path, mark, "empty again", func(s lockqueue.Snapshot) bool { return s.Live() && s.Exists && len(s.Nodes) == 0 })
	// Deletions need no data: a getChildren per read (and one read per
	// batch at most, plus one).
	if deleted := w.Reads() - readsBefore; deleted > int64(2*(batches+1)) {
		t.Errorf("%d reads to delete 10,000 children in %d batches, want at most %d", deleted, batches, 2*(batches+1))
	}
	// Batches were deleted oldest first, so each live queue must be a
	// suffix of the one before: never more nodes, never a node back.
	prev := batches * perBatch
	for i, snap := range rec.all(path)[mark:] {
		if !snap.Live() {
			continue
		}
		n := len(snap.Nodes)
		if n%perBatch != 0 || n > prev {
			t.Errorf("live snapshot %d has %d nodes after one with %d: stale or partial", i, n, prev)
		}
		if n > 0 && snap.Nodes[0].Name != names[len(names)-n][len(path)+1:] {
			t.Errorf("live snapshot %d of %d nodes starts at %s, want %s", i, n, snap.Nodes[0].Name, names[len(names)-n])
		}
		prev = n
	}
	t.Logf("%d reads to create, %d to delete, %d snapshots", created, w.Reads()-readsBefore, len(rec.all(path)))
}

package zkwatch

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/hub"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/third_party/zk"
	"github.com/zklockviz/zklockviz/zookeeper/zklocal/zktest"
)

// startCuratorSemaphore runs count participants of an InterProcessSemaphoreV2
// with 2 leases at path, numbered from first, in one JVM.
func startCuratorSemaphore(t *testing.T, servers, path string, timeout time.Duration, first, count int) *clientProc {
	t.Helper()
	return startJava(t, "CuratorSemaphore", servers, path, fmt.Sprint(timeout.Milliseconds()), "2",
		fmt.Sprint(first), fmt.Sprint(count))
}

// startKazooSemaphore is the same with kazoo's Semaphore, max_leases=2.
func startKazooSemaphore(t *testing.T, servers, path string, timeout time.Duration, first, count int) *clientProc {
	t.Helper()
	needKazoo(t)
	return startClient(t, python, filepath.Join(clientsDir(t), "kazoo_semaphore.py"), servers, path,
		fmt.Sprintf("%.1f", timeout.Seconds()), "2", fmt.Sprint(first), fmt.Sprint(count))
}

// semNode is what a test expects of the node at one queue position of a
// semaphore: whose it is (a participant's index), in which folder, and
// what it waits for.
type semNode struct {
	who      int
	folder   string // "" the semaphore's path; else the folder's last element or name
	holding  bool
	waitsOn  lockqueue.WaitOn
	waitsFor int // queue index, -1 for none
}

// semaphoreIs checks the queue, the lease limit, that the waiters count
// each participant once and that there are no alerts, with a live
// connection; the edges are those the rules and the
// server's watch table give once settled: confirmed for a lock-queue waiter,
// children (invisible to the server) for the pending acquirer.
func semaphoreIs(recipe lockqueue.Recipe, sessions []string, leases int, inferred bool, want []semNode) func(lockqueue.Snapshot) bool {
	return func(s lockqueue.Snapshot) bool {
		if !s.Live() || !s.Exists || s.Recipe != recipe || len(s.Nodes) != len(want) ||
			s.Leases != leases || s.LeasesInferred != inferred || len(s.Alerts) != 0 {
			return false
		}
		for i, w := range want {
			n := s.Nodes[i]
			folder := ""
			if n.Folder() != "" {
				folder = n.Folder()[strings.LastIndex(n.Folder(), "/")+1:]
			}
			wf := ""
			if w.waitsFor >= 0 {
				wf = s.Nodes[w.waitsFor].Name
			}
			edge := lockqueue.EdgeNone
			switch {
			case w.holding:
			case w.waitsOn == lockqueue.OnChildren:
				edge = lockqueue.EdgeChildWatch
			default:
				edge = lockqueue.EdgeConfirmed
			}
			// A participant's second node (its node in the lock folder,
			// after its lease node) is part of the first's contender.
			partOf := ""
			if j := slices.IndexFunc(want[:i], func(o semNode) bool { return o.who == w.who }); j >= 0 {
				partOf = s.Nodes[j].Name
			}
			if n.Session != sessions[w.who] || folder != w.folder || n.Holding != w.holding ||
				n.WaitsOn != w.waitsOn || n.WaitsFor != wf || n.Mode != lockqueue.Lease || n.Edge != edge ||
				n.PartOf() != partOf {
				return false
			}
		}
		// The waiters are the participants that hold no lease, each once.
		waiting := map[int]bool{}
		for _, w := range want {
			waiting[w.who] = true
		}
		for _, w := range want {
			if w.holding {
				delete(waiting, w.who)
			}
		}
		return len(s.Waiters()) == len(waiting)
	}
}

// Semaphores read at their own path (issue 9 §2), with real Curator and
// kazoo contenders: 2 leases, 4 contenders, a hand-off as a holder
// releases, a holder killed mid-hold. The queue is read from the
// semaphore's path; one children watch is kept per folder the semaphore
// uses (Curator: the path, leases/ and locks/; kazoo: the path and the
// <path>-__lock__ sibling), and --watch-under finds the semaphore once, at
// its path.
func TestSemaphores(t *testing.T) {
	s := zktest.ForTest(t) // its own server: the children watches are counted
	tests := []struct {
		name   string
		recipe lockqueue.Recipe
		start  func(t *testing.T, servers, path string, timeout time.Duration, first, count int) *clientProc
		// lockFolder is the last element of the folder of the lock queue.
		lockFolder func(path string) string
		// folders: the children watches one watcher of the path holds.
		folders int
		// pendingLease: Curator's pending acquirer makes its lease node
		// first and then waits; kazoo's waits, then makes it.
		pendingLease bool
		// inferred: the lease limit is read off the layout, not stored.
		inferred bool
	}{
		{name: "Curator InterProcessSemaphoreV2", recipe: lockqueue.Curator, start: startCuratorSemaphore,
			lockFolder: func(string) string { return "locks" }, folders: 3, pendingLease: true, inferred: true},
		{name: "kazoo Semaphore", recipe: lockqueue.Kazoo, start: startKazooSemaphore,
			lockFolder: func(p string) string { return p[strings.LastIndex(p, "/")+1:] + "-__lock__" }, folders: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prefix := fresh("/semaphores")
			path := prefix + "/pool"
			lockDir := tc.lockFolder(path)
			leasesDir := ""
			if tc.recipe == lockqueue.Curator {
				leasesDir = "leases"
			}
			// The limit as the watcher of the path alone tells it: Curator
			// stores none, so it is inferred while an acquirer is pending.
			limit := func(pending bool) (int, bool) {
				if !tc.inferred {
					return 2, false
				}
				if pending {
					return 2, true
				}
				return 0, false
			}

			h := hub.New()
			rec := newRecorder()
			startWatcher(t, Config{Servers: []string{s.Addr()}, Paths: []string{path},
				Publish: func(snap lockqueue.Snapshot) { h.Publish(snap); rec.publish(snap) }})
			fanOut(t, h, path, 50)

			sessions := make([]string, 4)
			// Participant 0 in a process of its own, to be killed.
			victim := tc.start(t, s.Addr(), path, 4*time.Second, 0, 1)
			sessions[0] = strings.Fields(victim.expect(t, "queued 0 "))[2]
			victim.expect(t, "acquired 0")
			rest := tc.start(t, s.Addr(), path, 10*time.Second, 1, 3)
			for i := 1; i < 4; i++ {
				sessions[i] = strings.Fields(rest.expect(t, fmt.Sprintf("queued %d ", i)))[2]
			}
			rest.expect(t, "acquired 1")

			// Participants 0 and 1 hold; 2 holds the internal lock and
			// waits for a lease (Curator: with its lease node made); 3
			// waits for 2 in the lock queue.
			var want []semNode
			want = append(want, semNode{0, leasesDir, true, "", -1}, semNode{1, leasesDir, true, "", -1})
			if tc.pendingLease {
				want = append(want, semNode{2, leasesDir, false, lockqueue.OnChildren, -1})
			}
			want = append(want, semNode{2, lockDir, false, lockqueue.OnChildren, -1}, semNode{3, lockDir, false, "", len(want)})
			n, inf := limit(true)
			// The invisible children watches are the clients' own: the
			// pending acquirer's on the leases' folder. That count is the
			// server's total less the watcher's, so it also shows the
			// watcher counting each of its folders' watches as its own.
			snap := rec.wait(t, path, 0, "2 holders, a pending acquirer, a queued one, no alerts", func(s lockqueue.Snapshot) bool {
				return semaphoreIs(tc.recipe, sessions, n, inf, want)(s) && s.InvisibleChildWatches == 1
			})
			for _, node := range snap.Nodes {
				if node.Folder() == "" || strings.HasSuffix(node.Folder(), "/leases") {
					if want := "p" + fmt.Sprint(slices.Index(sessions, node.Session)); node.Data != want {
						t.Errorf("lease %s data %q, want the participant's %q", node.Name, node.Data, want)
					}
				}
			}
			// One children watch per folder, however many look: the
			// watcher's plus the pending acquirer's.
			if got, want := childWatches(t, s.Addr()), tc.folders+1; got != want {
				t.Errorf("the server holds %d children watches, want %d: the watcher's one per folder (%d) and the pending acquirer's", got, want, tc.folders)
			}

			// --watch-under finds the semaphore once, at its path (not its
			// folders, not kazoo's sibling), and a given limit is not
			// inferred.
			w2, rec2 := startWatcher(t, Config{Servers: []string{s.Addr()}, Prefixes: []string{prefix},
				Leases: map[string]int{path: 2}})
			rec2.wait(t, path, 0, "discovered, the limit given", semaphoreIs(tc.recipe, sessions, 2, false, want))
			if got := w2.Paths(); !slices.Equal(got, []string{path}) {
				t.Errorf("discovered %v, want only the semaphore's path %s", got, path)
			}

			// A holder releases: the pending acquirer gets its lease and
			// lets the internal lock go to 3, now pending in turn.
			mark := rec.mark(path)
			rest.send(t, "release 1")
			rest.expect(t, "released 1")
			rest.expect(t, "acquired 2")
			want = []semNode{{0, leasesDir, true, "", -1}, {2, leasesDir, true, "", -1}}
			if tc.pendingLease {
				want = append(want, semNode{3, leasesDir, false, lockqueue.OnChildren, -1})
			}
			want = append(want, semNode{3, lockDir, false, lockqueue.OnChildren, -1})
			rec.wait(t, path, mark, "after a release: 0 and 2 hold, 3 pending", semaphoreIs(tc.recipe, sessions, n, inf, want))

			// A holder killed mid-hold: its lease stays, a zombie, until its
			// session expires; then 3 gets it.
			mark = rec.mark(path)
			if err := victim.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			rec.wait(t, path, mark, "the killed holder a zombie", func(s lockqueue.Snapshot) bool {
				return len(s.Nodes) > 0 && s.Nodes[0].Session == sessions[0] && s.Nodes[0].Zombie && hasAlert(s, lockqueue.AlertZombie)
			})
			rest.expect(t, "acquired 3")
			n, inf = limit(false)
			want = []semNode{{2, leasesDir, true, "", -1}, {3, leasesDir, true, "", -1}}
			rec.wait(t, path, mark, "after the session expired: 2 and 3 hold", semaphoreIs(tc.recipe, sessions, n, inf, want))
			rec2.wait(t, path, 0, "after the session expired, the limit given", semaphoreIs(tc.recipe, sessions, 2, false, want))
		})
	}
}

// fanOut subscribes n viewers to path on h for the test's length, each
// reading every snapshot, so watch counts are taken with viewers looking.
func fanOut(t *testing.T, h *hub.Hub, path string, n int) {
	t.Helper()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range n {
		sub := h.Subscribe(path)
		wg.Go(func() {
			defer sub.Close()
			for {
				select {
				case <-stop:
					return
				case <-sub.C():
					sub.Next()
				}
			}
		})
	}
	t.Cleanup(func() { close(stop); wg.Wait() })
}

// Curator's InterProcessSemaphoreMutex is an InterProcessSemaphoreV2 with
// one lease: read at its path like any Curator semaphore, its limit of 1
// inferred while someone is pending.
func TestCuratorSemaphoreMutex(t *testing.T) {
	s := sharedServer(t)
	path := fresh("/semaphore-mutex")
	_, rec := startWatcher(t, Config{Servers: []string{s.Addr()}, Paths: []string{path}})
	c := startJava(t, "CuratorSemaphore", s.Addr(), path, "10000", "mutex", "0", "3")
	sessions := make([]string, 3)
	for i := range sessions {
		sessions[i] = strings.Fields(c.expect(t, fmt.Sprintf("queued %d ", i)))[2]
	}
	c.expect(t, "acquired 0")
	rec.wait(t, path, 0, "0 holds, 1 pending, 2 queued", semaphoreIs(lockqueue.Curator, sessions, 1, true, []semNode{
		{0, "leases", true, "", -1}, {1, "leases", false, lockqueue.OnChildren, -1},
		{1, "locks", false, lockqueue.OnChildren, -1}, {2, "locks", false, "", 2},
	}))
	mark := rec.mark(path)
	c.send(t, "release 0")
	c.expect(t, "acquired 1")
	rec.wait(t, path, mark, "1 holds, 2 pending", semaphoreIs(lockqueue.Curator, sessions, 1, true, []semNode{
		{1, "leases", true, "", -1}, {2, "leases", false, lockqueue.OnChildren, -1}, {2, "locks", false, lockqueue.OnChildren, -1},
	}))
}

// Folders that only look like a semaphore's path are not taken for one by
// --watch-under: a folder whose one child "locks" holds lock parents, and
// one whose "leases" holds a lock parent rather than Curator leases. A
// Curator semaphore's path with an empty leases/ is one.
func TestDiscoverSemaphoreLookalikes(t *testing.T) {
	s := sharedServer(t)
	c := connect(t, []string{s.Addr()}, 10*time.Second)
	apps := fresh("/lookalikes")
	mkLock := func(path, prefix string) {
		t.Helper()
		mkdirs(t, c, path)
		if _, err := c.Create(path+"/"+prefix, nil, zk.FlagEphemeral|zk.FlagSequence, acl); err != nil {
			t.Fatal(err)
		}
	}
	mkLock(apps+"/a/locks/orders", "W_")
	mkLock(apps+"/b/leases/billing", "W_")
	mkdirs(t, c, apps+"/sem/leases")
	mkLock(apps+"/sem/locks", "_c_aaaaaaaa-2fa1-11d2-883f-0016d3cca427-lock-")

	w, rec := startWatcher(t, Config{Servers: []string{s.Addr()}, Prefixes: []string{apps}})
	for _, p := range []string{apps + "/a/locks/orders", apps + "/b/leases/billing"} {
		rec.wait(t, p, 0, "discovered as a lock of its own", func(s lockqueue.Snapshot) bool {
			return s.Live() && len(s.Nodes) == 1 && s.Recipe == lockqueue.SeedRW
		})
	}
	rec.wait(t, apps+"/sem", 0, "the Curator semaphore, its lock queue's head waiting for a lease", func(s lockqueue.Snapshot) bool {
		return s.Live() && len(s.Nodes) == 1 && s.Recipe == lockqueue.Curator && s.Nodes[0].WaitsOn == lockqueue.OnChildren &&
			s.Nodes[0].Folder() == apps+"/sem/locks" && len(s.Alerts) == 0
	})
	want := []string{apps + "/a/locks/orders", apps + "/b/leases/billing", apps + "/sem"}
	if got := w.Paths(); !slices.Equal(got, want) {
		t.Errorf("Paths() = %v, want %v", got, want)
	}
}

// kazoo names a Semaphore's leases uuid4().hex, and about one in 500 ends
// in ten decimal digits that fit an int32 (the cause of a flaky
// TestSemaphores/kazoo_Semaphore). Such a lease is still a lease: the
// semaphore stays kazoo's, with the limit from its data, both leases held
// and the lock queue's head waiting for one. The layout is kazoo's, made by
// hand so the name is the troublesome one every time.
func TestKazooLeaseNamedLikeASequence(t *testing.T) {
	s := sharedServer(t)
	servers := []string{s.Addr()}
	path := fresh("/kazoo-digits") + "/pool"
	lockDir := path + lockqueue.KazooSemaphoreLock
	clients := make([]*zk.Conn, 4)
	sessions := make([]string, 4)
	for i := range clients {
		clients[i] = connect(t, servers, 10*time.Second)
		sessions[i] = lockqueue.SessionHex(clients[i].SessionID())
	}
	c := clients[0]
	mkdirs(t, c, path)
	mkdirs(t, c, lockDir)
	if _, err := c.Set(path, []byte("2"), -1); err != nil {
		t.Fatal(err)
	}
	create := func(c *zk.Conn, p string, flags int32, data string) string {
		t.Helper()
		got, err := c.Create(p, []byte(data), flags, acl)
		if err != nil {
			t.Fatalf("create %s: %v", p, err)
		}
		return got
	}
	const hexA, hexB = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	create(clients[0], path+"/"+hexA, zk.FlagEphemeral, "p0")
	create(clients[1], path+"/cccccccccccccccccccccc0123456789", zk.FlagEphemeral, "p1")
	// Participant 2 holds the internal lock and waits for a lease with a
	// children watch on the path; 3 waits for 2 with a data watch.
	head := create(clients[2], lockDir+"/"+hexA+"__lock__", zk.FlagEphemeral|zk.FlagSequence, "p2")
	create(clients[3], lockDir+"/"+hexB+"__lock__", zk.FlagEphemeral|zk.FlagSequence, "p3")
	if _, _, _, err := clients[2].ChildrenW(path); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := clients[3].GetW(head); err != nil {
		t.Fatal(err)
	}

	_, rec := startWatcher(t, Config{Servers: servers, Paths: []string{path}})
	rec.wait(t, path, 0, "kazoo's semaphore: 2 holders, a pending acquirer, a queued one, no alerts",
		semaphoreIs(lockqueue.Kazoo, sessions, 2, false, []semNode{
			{0, "", true, "", -1}, {1, "", true, "", -1},
			{2, "pool-__lock__", false, lockqueue.OnChildren, -1}, {3, "pool-__lock__", false, "", 2},
		}))
}

// A change in a semaphore's other folder right after the reader first lists
// it (setting its watch) fires that watch while the read is still under
// way: the event must reach the lock's reader, or the folder is not read
// again until the semaphore's path itself changes (the watch is spent).
// The event is delivered, as go-zookeeper's receive loop would, before the
// listing returns.
func TestFolderEventDuringFirstListing(t *testing.T) {
	s := sharedServer(t)
	servers := []string{s.Addr()}
	path := fresh("/folder-event") + "/pool"
	lockDir := path + lockqueue.KazooSemaphoreLock
	c := connect(t, servers, 10*time.Second)
	mkdirs(t, c, path)
	mkdirs(t, c, lockDir)
	if _, err := c.Set(path, []byte("2"), -1); err != nil {
		t.Fatal(err)
	}
	w, err := New(Config{Servers: servers, Paths: []string{path}, Publish: func(lockqueue.Snapshot) {}})
	if err != nil {
		t.Fatal(err)
	}
	l := w.locks.get(path)
	r := eventAfterListing{Reader: connect(t, servers, 10*time.Second), t: t, folder: lockDir, deliver: w.onEvent,
		change: func() {
			if _, err := c.Create(lockDir+"/"+strings.Repeat("a", 32)+"__lock__", nil, zk.FlagEphemeral|zk.FlagSequence, acl); err != nil {
				t.Fatal(err)
			}
		}}
	// No reader goroutine runs: a poke stays in l.kick.
	select {
	case <-l.kick:
	default:
	}
	if err := w.readLock(t.Context(), r, 0, l); err != nil {
		t.Fatal(err)
	}
	select {
	case <-l.kick:
	default:
		t.Fatalf("the change in %s during its first listing poked no read: its event was lost", lockDir)
	}
}

// eventAfterListing is a Reader that, once it has listed folder with a
// watch, calls change and then deliver with the event that watch fires.
type eventAfterListing struct {
	Reader
	t       *testing.T
	folder  string
	change  func()
	deliver func(zk.Event)
}

func (r eventAfterListing) ChildrenW(p string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	names, stat, ch, err := r.Reader.ChildrenW(p)
	if err != nil || p != r.folder {
		return names, stat, ch, err
	}
	r.change()
	select {
	case ev := <-ch:
		r.deliver(ev)
	case <-time.After(waitTimeout):
		r.t.Fatalf("no event on %s", p)
	}
	return names, stat, ch, err
}

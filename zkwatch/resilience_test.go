package zkwatch

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/proxy"
	"github.com/zklockviz/zklockviz/third_party/zk"
	"github.com/zklockviz/zklockviz/zookeeper/zklocal"
	"github.com/zklockviz/zklockviz/zookeeper/zklocal/zktest"
)

// lockAsync starts a go-zookeeper Lock on conn and returns when its node
// is in the published queue.
func lockAsync(t *testing.T, rec *recorder, conn *zk.Conn, path string, nodes int) (*zk.Lock, chan error) {
	t.Helper()
	l := zk.NewLock(conn, path, acl)
	done := make(chan error, 1)
	go func() { done <- l.Lock() }()
	rec.wait(t, path, 0, fmt.Sprintf("%d nodes", nodes), func(s lockqueue.Snapshot) bool { return len(s.Nodes) == nodes })
	return l, done
}

// A ZooKeeper restart: the published snapshot turns not-live at once, and
// the queue converges once the server is back.
func TestZooKeeperRestart(t *testing.T) {
	s := zktest.ForTest(t)
	path := fresh("/restart/lock")
	// Sessions outlive the restart, so the queue is the same afterwards.
	_, rec := startWatcher(t, Config{Servers: []string{s.Addr()}, Paths: []string{path}, SessionTimeout: 30 * time.Second})
	lockAsync(t, rec, connect(t, []string{s.Addr()}, 30*time.Second), path, 1)
	lockAsync(t, rec, connect(t, []string{s.Addr()}, 30*time.Second), path, 2)
	before := rec.wait(t, path, 0, "queue of 2, confirmed", queueIs(lockqueue.GoZookeeper, exclusive(2), lockqueue.EdgeConfirmed))

	mark := rec.mark(path)
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	down := rec.wait(t, path, mark, "connection reconnecting", func(s lockqueue.Snapshot) bool {
		return s.Connection == lockqueue.Reconnecting
	})
	if down.Live() || !hasAlert(down, lockqueue.AlertDisconnect) {
		t.Errorf("snapshot while down is shown live or without a %s alert: %s", lockqueue.AlertDisconnect, describe(down))
	}
	if len(down.Nodes) != 2 {
		t.Errorf("snapshot while down lost the last known nodes: %s", describe(down))
	}

	mark = rec.mark(path)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	after := rec.wait(t, path, mark, "the same queue, live and confirmed", queueIs(lockqueue.GoZookeeper, exclusive(2), lockqueue.EdgeConfirmed))
	for i := range after.Nodes {
		if after.Nodes[i].Name != before.Nodes[i].Name {
			t.Errorf("node %d is %s after the restart, %s before", i, after.Nodes[i].Name, before.Nodes[i].Name)
		}
	}
	// Nothing published between the outage and that live snapshot may
	// claim to be live with anything but the final queue.
	for _, snap := range rec.all(path)[mark:] {
		if snap.Live() && len(snap.Nodes) != 2 {
			t.Errorf("a live snapshot with a wrong queue during recovery: %s", describe(snap))
		}
	}
}

// A holder whose client dies or is cut off: its node stays, shown as a
// zombie, until its session expires; then the next waiter holds.
func TestHolderDies(t *testing.T) {
	s := sharedServer(t)
	const timeout = 4 * time.Second
	tests := []struct {
		name string
		// start makes a holder and a waiter on path and returns the kill.
		start func(t *testing.T, rec *recorder, path string) (kill func())
	}{
		{"kazoo process SIGKILLed", func(t *testing.T, rec *recorder, path string) func() {
			holder := startKazoo(t, s.Addr(), path, timeout, "lock")
			holder.expect(t, "acquired 0 ")
			waiter := startKazoo(t, s.Addr(), path, 30*time.Second, "lock")
			waiter.expect(t, "queued 0 ")
			t.Cleanup(func() { waiter.expect(t, "acquired 0 ") })
			return func() {
				if err := holder.cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"go-zookeeper cut off by a proxy", func(t *testing.T, rec *recorder, path string) func() {
			p, err := proxy.New(s.Addr())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Close() })
			lockAsync(t, rec, connect(t, []string{p.Addr()}, timeout), path, 1)
			_, acquired := lockAsync(t, rec, connect(t, []string{s.Addr()}, 30*time.Second), path, 2)
			t.Cleanup(func() {
				if err := <-acquired; err != nil {
					t.Errorf("waiter Lock: %v", err)
				}
			})
			return p.Cut
		}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := fresh(fmt.Sprintf("/dies/%d", i))
			_, rec := startWatcher(t, Config{Servers: []string{s.Addr()}, Paths: []string{path}})
			kill := tc.start(t, rec, path)
			before := rec.wait(t, path, 0, "queue of 2, confirmed", func(s lockqueue.Snapshot) bool {
				return len(s.Nodes) == 2 && s.Nodes[0].Holding && s.Nodes[1].Edge == lockqueue.EdgeConfirmed && s.Live()
			})
			holder, waiter := before.Nodes[0].Name, before.Nodes[1].Name

			mark := rec.mark(path)
			kill()
			z := rec.wait(t, path, mark, "the holder is a zombie", func(s lockqueue.Snapshot) bool {
				return len(s.Nodes) == 2 && s.Nodes[0].Name == holder && s.Nodes[0].Zombie && hasAlert(s, lockqueue.AlertZombie)
			})
			if !z.Nodes[0].Holding {
				t.Errorf("the zombie no longer holds, but its node is there: %s", describe(z))
			}
			if z.Nodes[0].ExpiresInMs() <= 0 || z.Nodes[0].ExpiresInMs() > (timeout+2*time.Second).Milliseconds() {
				t.Errorf("zombie expires in %dms, want within the %v session timeout", z.Nodes[0].ExpiresInMs(), timeout)
			}
			rec.wait(t, path, mark, "the waiter holds once the session expired", func(s lockqueue.Snapshot) bool {
				return s.Live() && len(s.Nodes) == 1 && s.Nodes[0].Name == waiter && s.Nodes[0].Holding &&
					!s.Nodes[0].Zombie && !hasAlert(s, lockqueue.AlertZombie)
			})
		})
	}
}

// orderedHosts is go-zookeeper's DNSHostProvider without the shuffle: it
// tries addrs in the order given, so a client lands on the member a test
// wants.
type orderedHosts struct {
	mu         sync.Mutex
	addrs      []string
	curr, last int
}

func newOrderedHosts(addrs []string) *orderedHosts {
	return &orderedHosts{addrs: addrs, curr: -1, last: -1}
}

func (h *orderedHosts) Init([]string) error { return nil }
func (h *orderedHosts) Len() int            { return len(h.addrs) }

func (h *orderedHosts) Next() (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.curr = (h.curr + 1) % len(h.addrs)
	retryStart := h.curr == h.last
	if h.last == -1 {
		h.last = 0
	}
	return h.addrs[h.curr], retryStart
}

func (h *orderedHosts) Connected() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last = h.curr
}

// A 3-member ensemble loses its leader. The waiters sit on different
// followers, so a confirmed edge needs the watch tables of both merged; the
// holder sits on the leader and must move.
func TestEnsembleLeaderLoss(t *testing.T) {
	e := zktest.EnsembleForTest(t, 3)
	leader, err := e.Leader()
	if err != nil {
		t.Fatal(err)
	}
	addrs := e.Addrs()
	preferring := func(i int) *orderedHosts {
		order := []string{addrs[i]}
		for j, a := range addrs {
			if j != i {
				order = append(order, a)
			}
		}
		return newOrderedHosts(order)
	}
	var followers []int
	for i := range addrs {
		if i != leader {
			followers = append(followers, i)
		}
	}

	path := fresh("/ensemble/lock")
	const timeout = 20 * time.Second
	_, rec := startWatcher(t, Config{Servers: addrs, Paths: []string{path}, SessionTimeout: timeout})
	lockAsync(t, rec, connectVia(t, addrs, timeout, preferring(leader)), path, 1)
	w1 := connectVia(t, addrs, timeout, preferring(followers[0]))
	lockAsync(t, rec, w1, path, 2)
	w2 := connectVia(t, addrs, timeout, preferring(followers[1]))
	lockAsync(t, rec, w2, path, 3)
	if w1.Server() == w2.Server() {
		t.Fatalf("both waiters on %s; the test needs them on different members", w1.Server())
	}
	before := rec.wait(t, path, 0, "queue of 3, confirmed across members", queueIs(lockqueue.GoZookeeper, exclusive(3), lockqueue.EdgeConfirmed))

	mark := rec.mark(path)
	if err := e.Members()[leader].Stop(); err != nil {
		t.Fatal(err)
	}
	// Every member either died or lost its quorum for a moment, so the
	// watcher's connection dropped wherever it was.
	rec.wait(t, path, mark, "not live during the election", func(s lockqueue.Snapshot) bool { return !s.Live() })
	disturbed := rec.mark(path)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if _, err := e.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	after := rec.wait(t, path, disturbed-1, "the same queue, live and confirmed", func(s lockqueue.Snapshot) bool {
		if !queueIs(lockqueue.GoZookeeper, exclusive(3), lockqueue.EdgeConfirmed)(s) {
			return false
		}
		for i := range s.Nodes {
			if s.Nodes[i].Name != before.Nodes[i].Name || s.Nodes[i].Zombie {
				return false
			}
		}
		return true
	})
	if after.WatchSource != "4lw" {
		t.Errorf("watch source %q after losing a member, want 4lw from the others", after.WatchSource)
	}
	// The queue itself never changed (sessions outlive the election), so
	// the truth is known throughout: every snapshot published from the
	// leader's loss on either is marked not live (reconnecting, or with a
	// read error) or shows exactly the true queue. A stale queue shown as
	// live would break this; a stale one marked reconnecting does not.
	for i, snap := range rec.all(path)[mark:] {
		if !snap.Live() {
			continue
		}
		same := len(snap.Nodes) == len(before.Nodes)
		for j := 0; same && j < len(snap.Nodes); j++ {
			same = snap.Nodes[j].Name == before.Nodes[j].Name && snap.Nodes[j].Holding == before.Nodes[j].Holding &&
				snap.Nodes[j].WaitsFor == before.Nodes[j].WaitsFor
		}
		if !same {
			t.Errorf("snapshot %d after the leader's loss is live but not the true queue: %s", i, describe(snap))
		}
	}
	// And the last one published is live: the watcher did not stay stale.
	if all := rec.all(path); !all[len(all)-1].Live() {
		t.Errorf("the last snapshot is not live: %s", describe(all[len(all)-1]))
	}
}

// The watcher's own session expires while it is cut off: "reconnecting",
// then "expired" when it gets back, then a new session re-reads everything.
// A waiter that joined while the watcher was blind must be in the first
// live snapshot: nothing stale is ever shown as live.
func TestWatcherSessionExpires(t *testing.T) {
	s := sharedServer(t)
	p, err := proxy.New(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	path := fresh("/expiry/lock")
	w, rec := startWatcher(t, Config{Servers: []string{p.Addr()}, Paths: []string{path}, SessionTimeout: 2 * time.Second})
	lockAsync(t, rec, connect(t, []string{s.Addr()}, 30*time.Second), path, 1)
	lockAsync(t, rec, connect(t, []string{s.Addr()}, 30*time.Second), path, 2)
	rec.wait(t, path, 0, "queue of 2, confirmed", queueIs(lockqueue.GoZookeeper, exclusive(2), lockqueue.EdgeConfirmed))
	old := w.sess.sessionID()

	mark := rec.mark(path)
	p.Cut()
	rec.wait(t, path, mark, "reconnecting", func(s lockqueue.Snapshot) bool { return s.Connection == lockqueue.Reconnecting })

	third := connect(t, []string{s.Addr()}, 30*time.Second)
	go zk.NewLock(third, path, acl).Lock()
	// Wait, from the server's side, for the node and for the watcher's
	// session to be gone.
	deadline := time.Now().Add(waitTimeout)
	for {
		kids, _, err := third.Children(path)
		if err != nil {
			t.Fatal(err)
		}
		reply, err := fourLetter(context.Background(), s.Addr(), "dump")
		if err != nil {
			t.Fatal(err)
		}
		sessions, err := parseDump(reply, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if _, alive := sessions[old]; !alive && len(kids) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("session 0x%x never expired or the third node never came (%d children)", old, len(kids))
		}
		time.Sleep(100 * time.Millisecond)
	}

	mark = rec.mark(path)
	p.Restore()
	rec.wait(t, path, mark, "expired", func(s lockqueue.Snapshot) bool { return s.Connection == lockqueue.Expired && !s.Live() })
	rec.wait(t, path, mark, "queue of 3, live and confirmed", queueIs(lockqueue.GoZookeeper, exclusive(3), lockqueue.EdgeConfirmed))
	for _, snap := range rec.all(path)[mark:] {
		if snap.Live() && len(snap.Nodes) != 3 {
			t.Errorf("a stale queue shown live after the new session: %s", describe(snap))
		}
	}
	now := w.sess.sessionID()
	if now == old {
		t.Errorf("still session 0x%x after expiry", old)
	}
}

// A server that allows no four-letter words but srvr and ruok, and no
// AdminServer URLs given: actual watches are unknown, and the snapshot says
// why instead of guessing.
func TestWhitelistOff(t *testing.T) {
	s := zktest.ForTestWith(t, zklocal.Options{ExtraConfig: map[string]string{"4lw.commands.whitelist": "srvr,ruok"}})
	path := fresh("/nowhitelist/lock")
	_, rec := startWatcher(t, Config{Servers: []string{s.Addr()}, Paths: []string{path}})
	lockAsync(t, rec, connect(t, []string{s.Addr()}, 10*time.Second), path, 1)
	lockAsync(t, rec, connect(t, []string{s.Addr()}, 10*time.Second), path, 2)
	snap := rec.wait(t, path, 0, "queue of 2, watches unknown", queueIs(lockqueue.GoZookeeper, exclusive(2), lockqueue.EdgeUnknown))
	rec.wait(t, path, 0, "watch-source alert naming the whitelist", func(s lockqueue.Snapshot) bool {
		for _, a := range s.Alerts {
			if a.Kind == lockqueue.AlertWatchSource && strings.Contains(a.Message, "whitelist") {
				return true
			}
		}
		return false
	})
	if snap.WatchSource != "none" || snap.InvisibleChildWatches != -1 {
		t.Errorf("watchSource %q, invisible %d; want none, -1", snap.WatchSource, snap.InvisibleChildWatches)
	}
	for _, n := range snap.Nodes {
		if n.Zombie || n.Watching != nil {
			t.Errorf("node %s zombie=%t watching=%v with nothing known", n.Name, n.Zombie, n.Watching)
		}
	}
}

// --zk names one follower of a 3-member ensemble: clients connected to the
// other members are invisible to its cons and watch table. They must not be
// shown as zombies or orphans; a watch-source alert tells the user to list
// every member, and the client on the member asked is still confirmed.
func TestPartialEnsemble(t *testing.T) {
	e := zktest.EnsembleForTest(t, 3)
	leader, err := e.Leader()
	if err != nil {
		t.Fatal(err)
	}
	addrs := e.Addrs()
	var followers []int
	for i := range addrs {
		if i != leader {
			followers = append(followers, i)
		}
	}
	on := func(i int) *orderedHosts { return newOrderedHosts([]string{addrs[i]}) }
	asked, other := followers[0], followers[1]

	path := fresh("/partial/lock")
	_, rec := startWatcher(t, Config{Servers: []string{addrs[asked]}, Paths: []string{path}})
	lockAsync(t, rec, connectVia(t, addrs, 20*time.Second, on(other)), path, 1)
	lockAsync(t, rec, connectVia(t, addrs, 20*time.Second, on(leader)), path, 2)
	lockAsync(t, rec, connectVia(t, addrs, 20*time.Second, on(asked)), path, 3)

	snap := rec.wait(t, path, 0, "queue of 3, the client on the member asked confirmed, a watch-source alert", func(s lockqueue.Snapshot) bool {
		return s.Live() && len(s.Nodes) == 3 && s.Nodes[2].Edge == lockqueue.EdgeConfirmed && hasAlert(s, lockqueue.AlertWatchSource)
	})
	// Past the debounce, several polls later: still no zombie, orphan or missing.
	time.Sleep(lockqueue.Debounce + time.Second)
	snap = rec.wait(t, path, rec.mark(path)-1, "live", func(s lockqueue.Snapshot) bool { return s.Live() && len(s.Nodes) == 3 })
	for _, n := range snap.Nodes {
		if n.Zombie || n.Edge == lockqueue.EdgeMissing {
			t.Errorf("node %s zombie=%t edge=%q: a client on a member not asked is not a zombie or missing its watch", n.Name, n.Zombie, n.Edge)
		}
	}
	if n := snap.Nodes[1]; n.Edge != lockqueue.EdgeUnknown || n.Watching != nil {
		t.Errorf("waiter on the leader (not asked): edge %q watching %v, want unknown, nil", n.Edge, n.Watching)
	}
	for _, kind := range []string{lockqueue.AlertZombie, lockqueue.AlertOrphan} {
		if hasAlert(snap, kind) {
			t.Errorf("%s alert with only one member asked: %s", kind, describe(snap))
		}
	}
	for _, a := range snap.Alerts {
		if a.Kind == lockqueue.AlertWatchSource && !strings.Contains(a.Message, "--zk") {
			t.Errorf("watch-source alert does not say to list every member in --zk: %q", a.Message)
		}
	}
}

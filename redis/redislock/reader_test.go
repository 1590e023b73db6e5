package redislock_test

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/lockservice"
	"github.com/zklockviz/zklockviz/redis/redislocal"
	"github.com/zklockviz/zklockviz/redis/redislocal/redistest"
	"github.com/zklockviz/zklockviz/redis/redislock"
)

// waitTimeout bounds every wait for a state: a liveness bound for a loaded
// 2-core box, not a speed assertion.
const waitTimeout = 90 * time.Second

// poll is the reader's poll in these tests: short, so states show soon.
const poll = 100 * time.Millisecond

// sink keeps every snapshot a reader publishes, per lock.
type sink struct {
	mu    sync.Mutex
	snaps map[string][]lockqueue.Snapshot
}

func (s *sink) publish(snap lockqueue.Snapshot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.snaps == nil {
		s.snaps = map[string][]lockqueue.Snapshot{}
	}
	s.snaps[snap.Path] = append(s.snaps[snap.Path], snap)
}

// since returns name's snapshots from the i-th on.
func (s *sink) since(name string, i int) []lockqueue.Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	all := s.snaps[name]
	if i > len(all) {
		return nil
	}
	return slices.Clone(all[i:])
}

func (s *sink) count(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.snaps[name])
}

// waitSnap waits for a snapshot of name that ok accepts, the latest one
// or one published from now on, and returns it.
func (s *sink) waitSnap(t *testing.T, name, what string, ok func(lockqueue.Snapshot) bool) lockqueue.Snapshot {
	t.Helper()
	from := max(s.count(name)-1, 0)
	deadline := time.Now().Add(waitTimeout)
	for time.Now().Before(deadline) {
		for _, snap := range s.since(name, from) {
			from++
			if ok(snap) {
				return snap
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	all := s.since(name, 0)
	var last any = "none"
	if len(all) > 0 {
		last = fmt.Sprintf("%+v", all[len(all)-1])
	}
	t.Fatalf("%s: timed out waiting for %s; last snapshot: %v", name, what, last)
	return lockqueue.Snapshot{}
}

// startReader runs a reader of the masters until the test ends.
func startReader(t *testing.T, cfg redislock.Config) (*redislock.Reader, *sink) {
	t.Helper()
	s := &sink{}
	cfg.Publish = s.publish
	if cfg.Poll == 0 {
		cfg.Poll = poll
	}
	r, err := redislock.NewReader(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		r.Close()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return r, s
}

func addrs(servers []*redislocal.Server) []string {
	var out []string
	for _, s := range servers {
		out = append(out, s.Addr())
	}
	return out
}

// client is a go-redis client of addr, closed when the test ends.
func client(t *testing.T, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	return c
}

// cli runs redis-cli, a third-party client, against addr.
func cli(t *testing.T, addr string, args ...string) string {
	t.Helper()
	host, port, _ := strings.Cut(addr, ":")
	out, err := exec.Command("redis-cli", append([]string{"-h", host, "-p", port}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func holder(s lockqueue.Snapshot) (lockqueue.Node, bool) {
	for _, n := range s.Nodes {
		if n.Holding {
			return n, true
		}
	}
	return lockqueue.Node{}, false
}

func alertKinds(s lockqueue.Snapshot) []string {
	var out []string
	for _, a := range s.Alerts {
		out = append(out, a.Kind)
	}
	return out
}

func held(token string) func(lockqueue.Snapshot) bool {
	return func(s lockqueue.Snapshot) bool {
		h, ok := holder(s)
		return ok && h.Client() == token && s.Live()
	}
}

func free(s lockqueue.Snapshot) bool { return s.Live() && !s.Exists && len(s.Nodes) == 0 }

// A redis-cli SET NX PX holder: its token and time left, counting down,
// no alert on a healthy lock, and the release; a lock name that does not
// exist is free, not an error.
func TestSetNXHolder(t *testing.T) {
	srv := redistest.ForTest(t)
	r, s := startReader(t, redislock.Config{Addrs: []string{srv.Addr()}, Names: []string{"orders-lock", "never-taken"}})

	snap := s.waitSnap(t, "never-taken", "a live, free lock", free)
	if snap.Error != "" || len(snap.Alerts) != 0 || snap.Service != redislock.Name {
		t.Errorf("a lock that does not exist: service %q error %q alerts %v", snap.Service, snap.Error, snap.Alerts)
	}
	if !strings.Contains(snap.Note, "leave no trace") {
		t.Errorf("note %q does not say spin-lock waiters leave no trace", snap.Note)
	}

	if got := cli(t, srv.Addr(), "SET", "orders-lock", "tok-1", "NX", "PX", "30000"); got != "OK" {
		t.Fatalf("SET NX PX = %q", got)
	}
	first := s.waitSnap(t, "orders-lock", "tok-1 holding", held("tok-1"))
	h, _ := holder(first)
	if h.LeaseLeftMs() <= 0 || h.LeaseLeftMs() > 30000 || h.LeaseTTLMs() < h.LeaseLeftMs() {
		t.Errorf("holder's time left %d of %d ms, want within (0, 30000]", h.LeaseLeftMs(), h.LeaseTTLMs())
	}
	if len(first.Nodes) != 1 || first.Recipe != redislock.RecipeString || len(first.Alerts) != 0 {
		t.Errorf("nodes %d recipe %q alerts %v, want 1 node, %s, no alert", len(first.Nodes), first.Recipe, first.Alerts, redislock.RecipeString)
	}
	s.waitSnap(t, "orders-lock", "the time left counting down", func(snap lockqueue.Snapshot) bool {
		h, ok := holder(snap)
		if len(snap.Alerts) != 0 {
			t.Errorf("alerts on a healthy lock: %v", snap.Alerts)
		}
		return ok && h.Client() == "tok-1" && h.LeaseLeftMs() < first.Nodes[0].LeaseLeftMs()
	})

	cli(t, srv.Addr(), "DEL", "orders-lock")
	s.waitSnap(t, "orders-lock", "the lock free after DEL", free)

	if err := r.Err(); err != nil {
		t.Errorf("Err = %v, want nil", err)
	}
	if got := r.Watched(); !slices.Equal(got, []string{"orders-lock", "never-taken"}) {
		t.Errorf("Watched = %v", got)
	}
}

// redsync contenders: the holder's token is the mutex's value; a holder
// that dies (never unlocks) loses the lock when its expiry runs out, and
// the spinning waiter takes it, which the reader shows without having
// seen the waiter.
func TestRedsyncHolders(t *testing.T) {
	srv := redistest.ForTest(t)
	_, s := startReader(t, redislock.Config{Addrs: []string{srv.Addr()}, Names: []string{"billing"}})
	rs := redsync.New(goredis.NewPool(client(t, srv.Addr())))

	a := rs.NewMutex("billing", redsync.WithExpiry(8*time.Second))
	if err := a.Lock(); err != nil {
		t.Fatal(err)
	}
	s.waitSnap(t, "billing", "a holding", held(a.Value()))
	if ok, err := a.Unlock(); !ok || err != nil {
		t.Fatalf("a.Unlock = %v, %v", ok, err)
	}
	s.waitSnap(t, "billing", "free after a's unlock", free)

	// b takes it and dies holding: nothing renews, nothing releases.
	b := rs.NewMutex("billing", redsync.WithExpiry(2*time.Second))
	if err := b.Lock(); err != nil {
		t.Fatal(err)
	}
	s.waitSnap(t, "billing", "b holding", held(b.Value()))
	c := rs.NewMutex("billing", redsync.WithExpiry(8*time.Second), redsync.WithTries(1000),
		redsync.WithRetryDelay(50*time.Millisecond))
	locked := make(chan error, 1)
	go func() { locked <- c.Lock() }()
	if err := <-locked; err != nil {
		t.Fatalf("c.Lock after b's expiry: %v", err)
	}
	snap := s.waitSnap(t, "billing", "c holding once b's key expired", held(c.Value()))
	if len(snap.Nodes) != 1 || len(snap.Alerts) != 0 || snap.AnonymousWaiters != 0 {
		t.Errorf("after the hand-off: %d nodes, alerts %v, %d anonymous waiters; want c alone", len(snap.Nodes), snap.Alerts, snap.AnonymousWaiters)
	}
	c.Unlock()
}

// A lock set without expiry raises no-expiry.
func TestNoExpiryAlert(t *testing.T) {
	srv := redistest.ForTest(t)
	_, s := startReader(t, redislock.Config{Addrs: []string{srv.Addr()}, Names: []string{"forever"}})
	cli(t, srv.Addr(), "SET", "forever", "tok-f", "NX")
	snap := s.waitSnap(t, "forever", "tok-f holding", held("tok-f"))
	if got := alertKinds(snap); !slices.Equal(got, []string{redislock.AlertNoExpiry}) {
		t.Errorf("alerts %v, want [%s]", snap.Alerts, redislock.AlertNoExpiry)
	}
	if h, _ := holder(snap); h.LeaseLeftMs() != 0 {
		t.Errorf("no expiry, yet %d ms left", h.LeaseLeftMs())
	}
	cli(t, srv.Addr(), "PEXPIRE", "forever", "60000")
	s.waitSnap(t, "forever", "no alert once it has an expiry", func(s lockqueue.Snapshot) bool {
		return held("tok-f")(s) && len(s.Alerts) == 0
	})
}

// Redisson's scripts (RedissonLock.tryLockInnerAsync, LockTask's renewal,
// unlockInnerAsync), run as Redisson runs them.
const (
	redissonLock = `if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then ` +
		`redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; ` +
		`return redis.call('pttl', KEYS[1]);`
	redissonRenew = `if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('pexpire', KEYS[1], ARGV[1]); return 1; end; return 0;`
	// Without the unlock latch key of newer versions: the release itself.
	redissonUnlock = `if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil; end; ` +
		`local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); ` +
		`if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); return 0; ` +
		`else redis.call('del', KEYS[1]); redis.call('publish', KEYS[2], ARGV[1]); return 1; end;`
)

// redisson is one Redisson client's lock on one thread, driven by
// Redisson's own scripts.
type redisson struct {
	c     *redis.Client
	name  string
	owner string // "<client id>:<thread id>"
	lease time.Duration
}

func (l redisson) lock(t *testing.T) {
	t.Helper()
	ttl, err := l.c.Eval(context.Background(), redissonLock, []string{l.name}, l.lease.Milliseconds(), l.owner).Result()
	if !errors.Is(err, redis.Nil) {
		t.Fatalf("Redisson lock by %s: %v %v (held by another)", l.owner, ttl, err)
	}
}

func (l redisson) unlock(t *testing.T) {
	t.Helper()
	channel := "redisson_lock__channel:{" + l.name + "}"
	if err := l.c.Eval(context.Background(), redissonUnlock, []string{l.name, channel}, 0, l.lease.Milliseconds(), l.owner).Err(); err != nil {
		t.Fatalf("Redisson unlock: %v", err)
	}
}

// watchdog renews the lease every third of it, as Redisson's does, until
// stop is called: the holder dying.
func (l redisson) watchdog(t *testing.T) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(l.lease / 3)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				l.c.Eval(ctx, redissonRenew, []string{l.name}, l.lease.Milliseconds(), l.owner)
			}
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

// waiters subscribes n Redisson-like waiters to the lock's unlock channel.
func waiters(t *testing.T, addr, name string, n int) {
	t.Helper()
	for range n {
		ps := client(t, addr).Subscribe(context.Background(), "redisson_lock__channel:{"+name+"}")
		if _, err := ps.Receive(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ps.Close() })
	}
}

// A Redisson lock: owner client id and thread, reentrancy, the waiter
// count from its channel, no alert while the watchdog renews; once the
// watchdog stops (the holder died), lease-not-renewed, then the key
// expires. And a release by Redisson's unlock script.
func TestRedissonLock(t *testing.T) {
	srv := redistest.ForTest(t)
	const name = "inventory"
	_, s := startReader(t, redislock.Config{Addrs: []string{srv.Addr()}, Names: []string{name}})
	l := redisson{c: client(t, srv.Addr()), name: name, owner: "8c1e6f4a-1b2c-4d5e-9f00-aabbccddeeff:57", lease: 3 * time.Second}
	l.lock(t)
	l.lock(t) // reentrant
	stop := l.watchdog(t)
	waiters(t, srv.Addr(), name, 2)

	snap := s.waitSnap(t, name, "the Redisson owner holding, 2 waiting clients", func(s lockqueue.Snapshot) bool {
		return held("8c1e6f4a-1b2c-4d5e-9f00-aabbccddeeff")(s) && s.AnonymousWaiters == 2
	})
	h, _ := holder(snap)
	if h.Name != l.owner || !strings.Contains(h.Data, "thread 57, reentrancy 2") || snap.Recipe != redislock.RecipeRedisson {
		t.Errorf("holder %q data %q recipe %q; want %s, thread 57, reentrancy 2, redisson", h.Name, h.Data, snap.Recipe, l.owner)
	}
	if !strings.Contains(snap.Note, "unlock channel") {
		t.Errorf("note %q does not say how waiters are counted", snap.Note)
	}
	// The waiters wait since they were first seen, and go on waiting
	// since then: their wait is the lock's oldest.
	since := snap.AnonymousSince
	if _, oldest := snap.Oldest(); since.IsZero() || since.After(snap.UpdatedAt) || !oldest.Equal(since) {
		t.Errorf("waiters since %v, oldest wait %v (read at %v): want since they were first seen", since, oldest, snap.UpdatedAt)
	}
	// Healthy: renewals seen (the time left went up), no alert all along.
	var lastLeft int64
	s.waitSnap(t, name, "a renewal seen", func(s lockqueue.Snapshot) bool {
		if len(s.Alerts) != 0 {
			t.Errorf("alerts while the watchdog renews: %v", s.Alerts)
		}
		if !s.AnonymousSince.Equal(since) {
			t.Errorf("the waiters' wait began at %v, now %v: it started over", since, s.AnonymousSince)
		}
		h, _ := holder(s)
		renewed := lastLeft > 0 && h.LeaseLeftMs() > lastLeft
		lastLeft = h.LeaseLeftMs()
		return renewed
	})
	s.waitSnap(t, name, "another full renewal cycle without alert", func(s lockqueue.Snapshot) bool {
		if len(s.Alerts) != 0 {
			t.Errorf("alerts while the watchdog renews: %v", s.Alerts)
		}
		h, _ := holder(s)
		renewed := h.LeaseLeftMs() > lastLeft
		lastLeft = h.LeaseLeftMs()
		return renewed
	})

	stop()
	snap = s.waitSnap(t, name, "lease-not-renewed", func(s lockqueue.Snapshot) bool {
		return slices.Contains(alertKinds(s), redislock.AlertNotRenewed)
	})
	if h, ok := holder(snap); !ok || h.LeaseLeftMs() >= 2000 {
		t.Errorf("lease-not-renewed with %d ms left of 3000, want below 2000 and still held", h.LeaseLeftMs())
	}
	s.waitSnap(t, name, "free once the lease ran out", free)

	l.lock(t)
	s.waitSnap(t, name, "held again", held("8c1e6f4a-1b2c-4d5e-9f00-aabbccddeeff"))
	l.unlock(t)
	s.waitSnap(t, name, "free after Redisson's unlock", free)
}

// Three masters as one Redlock: A holds all three; two masters restart
// without persistence, so A keeps one; B takes the two fresh ones, a
// majority, while A's client still believes it holds: split-redlock.
func TestRedlockSplit(t *testing.T) {
	srvs := redistest.NForTest(t, 3)
	const name = "payments"
	_, s := startReader(t, redislock.Config{Addrs: addrs(srvs), Names: []string{name}})
	setAll := func(token string, on ...*redislocal.Server) {
		for _, srv := range on {
			cli(t, srv.Addr(), "SET", name, token, "NX", "PX", "60000")
		}
	}
	setAll("tok-A", srvs...)
	snap := s.waitSnap(t, name, "A holding 3 of 3", func(s lockqueue.Snapshot) bool {
		h, _ := holder(s)
		return held("tok-A")(s) && strings.Contains(h.Data, "holds 3 of 3") // not a read between the SETs
	})
	if h, _ := holder(snap); !strings.Contains(h.Data, "holds 3 of 3 masters") || snap.Recipe != redislock.RecipeRedlock || len(snap.Alerts) != 0 {
		t.Errorf("A: data %q recipe %q alerts %v", h.Data, snap.Recipe, snap.Alerts)
	}

	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	for _, srv := range srvs[:2] {
		if err := srv.Restart(ctx); err != nil {
			t.Fatal(err)
		}
	}
	snap = s.waitSnap(t, name, "A down to 1 of 3, holding no majority", func(s lockqueue.Snapshot) bool {
		_, ok := holder(s)
		return s.Live() && len(s.Nodes) == 1 && !ok
	})
	// A's client may still believe it holds: the restarts lost its keys.
	if len(snap.Alerts) != 1 || snap.Alerts[0].Kind != redislock.AlertLostInRestart || !slices.Equal(snap.Alerts[0].Nodes, []string{"tok-A"}) ||
		!strings.Contains(snap.Alerts[0].Message, srvs[0].Addr()) || !strings.Contains(snap.Alerts[0].Message, srvs[1].Addr()) {
		t.Errorf("alerts with A on a minority and nobody else: %v, want A's keys lost in the restarts of the first two", snap.Alerts)
	}

	setAll("tok-B", srvs[:2]...)
	snap = s.waitSnap(t, name, "B holding 2 of 3 with split-redlock", func(s lockqueue.Snapshot) bool {
		return held("tok-B")(s) && slices.Contains(alertKinds(s), redislock.AlertSplitRedlock)
	})
	for _, a := range snap.Alerts {
		if a.Kind == redislock.AlertSplitRedlock && !slices.Equal(a.Nodes, []string{"tok-B", "tok-A"}) {
			t.Errorf("split-redlock names %v, want [tok-B tok-A]", a.Nodes)
		}
	}
	if len(snap.Nodes) != 2 {
		t.Errorf("%d nodes, want A and B", len(snap.Nodes))
	}
	cli(t, srvs[2].Addr(), "DEL", name) // A's last key goes
	s.waitSnap(t, name, "no alert once A holds nothing", func(s lockqueue.Snapshot) bool {
		return held("tok-B")(s) && len(s.Alerts) == 0 && len(s.Nodes) == 1
	})
}

func TestCheckName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"orders-lock", true},
		{"{tenant}:orders", true},
		{"locks/orders/2", true},
		{"orders 2", false},
		{"", false},
		{"a\nb", false},
		{"\xff", false},
		{strings.Repeat("k", 1025), false},
	} {
		err := redislock.CheckName(tc.name)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, lockservice.ErrBadName)) {
			t.Errorf("CheckName(%.20q) = %v, want ok=%v (ErrBadName otherwise)", tc.name, err, tc.ok)
		}
	}
}

// With keyspace notifications on, the reader reads a lock on its events
// and at its deadlines, not by polling: with an hour's poll, a SET, a
// DEL, an expiry and a watchdog that stops renewing all still show.
func TestKeyspaceNotifications(t *testing.T) {
	srv := redistest.ForTestWith(t, redislocal.Options{Args: []string{"--notify-keyspace-events", "KEA"}})
	r, s := startReader(t, redislock.Config{Addrs: []string{srv.Addr()}, Poll: time.Hour, Names: []string{"events"}})
	s.waitSnap(t, "events", "free, followed by keyspace events", func(s lockqueue.Snapshot) bool {
		return free(s) && s.WatchSource == "keyspace"
	})
	cli(t, srv.Addr(), "SET", "events", "tok-e", "NX", "PX", "60000")
	s.waitSnap(t, "events", "tok-e holding", held("tok-e"))
	cli(t, srv.Addr(), "DEL", "events")
	s.waitSnap(t, "events", "free after DEL", free)
	cli(t, srv.Addr(), "SET", "events", "tok-short", "NX", "PX", "500")
	s.waitSnap(t, "events", "tok-short holding", held("tok-short"))
	s.waitSnap(t, "events", "free once tok-short expired", free)

	l := redisson{c: client(t, srv.Addr()), name: "events", owner: "77aa:3", lease: 1500 * time.Millisecond}
	l.lock(t)
	stop := l.watchdog(t)
	var lastLeft int64
	s.waitSnap(t, "events", "a renewal seen", func(s lockqueue.Snapshot) bool {
		h, _ := holder(s)
		renewed := lastLeft > 0 && h.LeaseLeftMs() > lastLeft
		lastLeft = h.LeaseLeftMs()
		return renewed
	})
	stop()
	s.waitSnap(t, "events", "lease-not-renewed with no event to wake the reader", func(s lockqueue.Snapshot) bool {
		return slices.Contains(alertKinds(s), redislock.AlertNotRenewed)
	})

	if err := r.Unwatch("events"); err != nil {
		t.Fatal(err)
	}
	if got := r.Watched(); len(got) != 0 {
		t.Errorf("Watched after Unwatch = %v", got)
	}
}

// A holder process killed with SIGKILL: its lock key was kept alive by a
// renewal loop in that process; once it dies the lease is not renewed
// (lease-not-renewed), then the key expires and the lock is free.
func TestKilledHolder(t *testing.T) {
	srv := redistest.ForTest(t)
	_, s := startReader(t, redislock.Config{Addrs: []string{srv.Addr()}, Names: []string{"killed"}})
	_, port, _ := strings.Cut(srv.Addr(), ":")
	cli(t, srv.Addr(), "SET", "killed", "tok-k", "NX", "PX", "3000")
	holderProc := exec.Command("sh", "-c",
		`while :; do redis-cli -p "$0" PEXPIRE killed 3000 >/dev/null || exit 1; sleep 1; done`, port)
	if err := holderProc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holderProc.Process.Kill(); holderProc.Wait() })

	var lastLeft int64
	s.waitSnap(t, "killed", "a renewal by the holder process", func(s lockqueue.Snapshot) bool {
		if len(s.Alerts) != 0 {
			t.Errorf("alerts while the holder renews: %v", s.Alerts)
		}
		h, _ := holder(s)
		renewed := lastLeft > 0 && h.LeaseLeftMs() > lastLeft
		lastLeft = h.LeaseLeftMs()
		return renewed
	})
	if err := holderProc.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	holderProc.Wait()
	s.waitSnap(t, "killed", "lease-not-renewed after the kill", func(s lockqueue.Snapshot) bool {
		return held("tok-k")(s) && slices.Contains(alertKinds(s), redislock.AlertNotRenewed)
	})
	s.waitSnap(t, "killed", "free once the lease ran out", free)
}

// A master restarted without persistence, its key gone before its lease
// ran out: lost-in-restart names the owner. With INFO refused (renamed
// away here), the restart is only suspected, and the alert says so.
func TestLostInRestart(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"run id read", nil, "restarted (its run id changed)"},
		{"INFO refused", []string{"--rename-command", "INFO", ""}, "it seems (grant the reader +info to tell)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.ForTestWith(t, redislocal.Options{Args: tc.args})
			const name = "restarted"
			_, s := startReader(t, redislock.Config{Addrs: []string{srv.Addr()}, Names: []string{name}, Poll: 100 * time.Millisecond})
			cli(t, srv.Addr(), "SET", name, "tok-R", "NX", "PX", "60000")
			s.waitSnap(t, name, "tok-R holding", held("tok-R"))
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			defer cancel()
			if err := srv.Stop(); err != nil {
				t.Fatal(err)
			}
			s.waitSnap(t, name, "not live, tok-R still shown", func(s lockqueue.Snapshot) bool { return !s.Live() && held("tok-R")(withLive(s)) })
			if err := srv.Start(ctx); err != nil {
				t.Fatal(err)
			}
			snap := s.waitSnap(t, name, "the loss told", func(s lockqueue.Snapshot) bool {
				return s.Live() && slices.Contains(alertKinds(s), redislock.AlertLostInRestart)
			})
			if len(snap.Nodes) != 0 || len(snap.Alerts) != 1 || !slices.Equal(snap.Alerts[0].Nodes, []string{"tok-R"}) ||
				!strings.Contains(snap.Alerts[0].Message, tc.want) || !strings.Contains(snap.Alerts[0].Message, "may still believe it holds") {
				t.Errorf("after the restart: nodes %v alerts %v, want no key and tok-R lost, %q", snap.Nodes, snap.Alerts, tc.want)
			}
		})
	}
}

// A server killed: the poll's read fails at once, not after go-redis's
// dial retries, so the lock is not live within about a poll and an outage
// of a few seconds is a gap in the history.
func TestOutageSeenWithinAPoll(t *testing.T) {
	srv := redistest.ForTest(t)
	const name = "outage"
	_, s := startReader(t, redislock.Config{Addrs: []string{srv.Addr()}, Names: []string{name}})
	cli(t, srv.Addr(), "SET", name, "tok-O", "NX", "PX", "60000")
	s.waitSnap(t, name, "tok-O holding", held("tok-O"))
	stopped := time.Now()
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	s.waitSnap(t, name, "not live", func(s lockqueue.Snapshot) bool { return !s.Live() })
	// The lab's word allows a polling reader a poll and 500 ms.
	if took := time.Since(stopped); took > poll+500*time.Millisecond {
		t.Errorf("not live %v after Redis stopped; want within a poll (%v) and 500ms", took.Round(time.Millisecond), poll)
	}
}

// A master slow to answer (another client's DEBUG SLEEP blocks it, as a
// loaded machine or a busy server would): each read takes a good part of
// a poll, and still a read begins every poll, not a poll after the last
// one ended. Otherwise each slow read pushes the next back by its own
// length, and a release is recorded later than a poll and a read after
// it, past what the lab's word allows a polling reader (a poll and 500
// ms; docs/lab.md).
func TestReadsEveryPollWhenReadsAreSlow(t *testing.T) {
	srv := redistest.ForTestWith(t, redislocal.Options{Args: []string{"--enable-debug-command", "yes"}})
	const (
		name  = "slow-master"
		every = 300 * time.Millisecond
		sleep = "0.2" // seconds the master is blocked at a time
	)
	cli(t, srv.Addr(), "SET", name, "tok-S", "PX", "600000")
	_, s := startReader(t, redislock.Config{Addrs: []string{srv.Addr()}, Names: []string{name}, Poll: every})
	s.waitSnap(t, name, "tok-S holding", held("tok-S"))

	ctx, cancel := context.WithCancel(context.Background())
	blocker := client(t, srv.Addr())
	blocked := make(chan struct{})
	go func() {
		defer close(blocked)
		for ctx.Err() == nil {
			blocker.Do(ctx, "DEBUG", "SLEEP", sleep)
		}
	}()
	from := s.count(name)
	time.Sleep(20 * every)
	cancel()
	<-blocked

	// Each read shows tok-S's time left, counting down: every read is
	// published.
	var stamps []time.Time
	for _, snap := range s.since(name, from) {
		if snap.Live() {
			stamps = append(stamps, snap.UpdatedAt)
		}
	}
	if len(stamps) < 5 {
		t.Fatalf("%d reads in %v of a poll of %v", len(stamps), 20*every, every)
	}
	// On average: a read's stamp is when its answer came, which the
	// sleeps it waited behind make jump by up to 200ms either way.
	mean := stamps[len(stamps)-1].Sub(stamps[0]) / time.Duration(len(stamps)-1)
	t.Logf("reads %v apart on average (%d reads) with a poll of %v", mean.Round(time.Millisecond), len(stamps), every)
	// A read waits up to 200ms behind a sleep: a poll after the last read
	// ended would put reads 400ms apart on average.
	if mean > every+50*time.Millisecond {
		t.Errorf("reads %v apart on average (%d reads), with a poll of %v: want one every poll", mean.Round(time.Millisecond), len(stamps), every)
	}
}

// withLive is s as if live, to ask what it shows.
func withLive(s lockqueue.Snapshot) lockqueue.Snapshot {
	s.Connection, s.Error = lockqueue.Connected, ""
	return s
}

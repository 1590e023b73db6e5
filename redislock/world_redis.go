package redislock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/proxy"
	"github.com/zklockviz/zklockviz/simulator"
)

// The Redisson scripts, as RedissonLock (tryLockInnerAsync, unlockInnerAsync)
// and renewal/LockTask publish them (redisson/redisson, master of
// 2026-08-21): a hash per lock, one field per owner (its id and thread)
// holding a reentrancy count. The unlock script here leaves out Redisson's
// unlock-latch key (KEYS[3], a guard against a retried unlock), which a
// classroom client that never retries does not need.
var (
	redissonLock = redis.NewScript(`if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then ` +
		`redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; ` +
		`return redis.call('pttl', KEYS[1]);`)
	redissonRenew = redis.NewScript(`if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then ` +
		`redis.call('pexpire', KEYS[1], ARGV[1]); return 1; end; return 0;`)
	redissonUnlock = redis.NewScript(`if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil; end; ` +
		`local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); ` +
		`if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); return 0; ` +
		`else redis.call('del', KEYS[1]); redis.call('publish', KEYS[2], ARGV[1]); return 1; end;`)
	// compareAndDelete is the release every Redis lock write-up gives (and
	// redsync's): delete the key only if it still holds my token.
	compareAndDelete = redis.NewScript(`if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`)
)

// stepTick is what a step moves the run's clock by, as ZooKeeper's runs do
// (the pace of playback at 1×).
const stepTick = 1200 * time.Millisecond

// client is one Redis client: its own go-redis connection through its own
// loopback proxy, so a crash or a pause is what the server really sees.
type client struct {
	name   string
	proxy  *proxy.Proxy
	rdb    *redis.Client
	token  string // the value it writes to the key (Redisson: its hash field)
	fence  int64  // its INCR fencing token, 0 without
	state  string
	joined int
	since  int
	line   int
	stats  simulator.Stats
	// watchdog renews a Redisson lease while the client holds; stop ends it.
	stopRenew func()
	renewals  *counter
}

type counter struct {
	mu sync.Mutex
	n  int
}

func (c *counter) add() { c.mu.Lock(); c.n++; c.mu.Unlock() }
func (c *counter) get() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// world is one Redis lock key on the classroom's redis-server and the
// clients contending for it.
type world struct {
	key      string
	fenceKey string
	channel  string
	addr     string
	obs      *redis.Client // the classroom's own connection: snapshots and cleanup
	p        params
	fencing  bool
	resource *simulator.Resource
	lines    recipeLines
	publish  func(lockqueue.Snapshot)
	log      *slog.Logger

	clients []*client
	byName  map[string]*client
	step    int
	events  []simulator.Event
	start   time.Time
	clock   time.Duration
	clocks  []time.Duration
}

func newWorld(ctx context.Context, addr string, spec simulator.WorldSpec, p params) (*world, error) {
	w := &world{
		key: spec.Path, fenceKey: spec.Path + ":fence", channel: "redisson_lock__channel:{" + spec.Path + "}",
		addr: addr, p: p, fencing: spec.Fencing, resource: simulator.NewResource(spec.Fencing),
		lines: linesFor(p), publish: spec.Publish, log: spec.Logger, byName: map[string]*client{}, start: time.Now(),
		obs: redis.NewClient(&redis.Options{Addr: addr, MaxRetries: 1, PoolSize: 2}),
	}
	if err := w.obs.Ping(ctx).Err(); err != nil {
		w.obs.Close()
		return nil, fmt.Errorf("redis %s: %w", addr, err)
	}
	return w, nil
}

func (w *world) Path() string { return w.key }

func (w *world) ClockAt(k int) time.Duration {
	if k <= 0 || k >= len(w.clocks) {
		return 0
	}
	return w.clocks[k]
}

func (w *world) Ready() string {
	return fmt.Sprintf("Ready: the Redis key %s does not exist. Each step performs one action, then every polling waiter tries once more.", w.key)
}

func (w *world) Line(name string) int {
	if c := w.byName[name]; c != nil {
		return c.line
	}
	return 0
}

func (w *world) Stats() simulator.Stats {
	var s simulator.Stats
	for _, c := range w.clients {
		s.Add(c.stats)
		s.Renewals += c.renewals.get()
		s.Commands += c.renewals.get()
	}
	return s
}

func (w *world) Clients() []simulator.ClientInfo {
	out := make([]simulator.ClientInfo, 0, len(w.clients))
	for _, c := range w.clients {
		ci := simulator.ClientInfo{
			Name: c.name, Node: c.token, Path: w.key, Mode: lockqueue.Exclusive, State: c.state, Token: c.fence,
			Session: c.token, Line: c.line, Joined: c.joined, Since: c.since,
			JoinedMs: w.ClockAt(c.joined).Milliseconds(), SinceMs: w.ClockAt(c.since).Milliseconds(),
		}
		out = append(out, ci)
	}
	return out
}

// Close ends every client and deletes the run's keys.
func (w *world) Close() error {
	for _, c := range w.clients {
		c.close()
	}
	err := w.obs.Del(context.Background(), w.key, w.fenceKey).Err()
	if cerr := w.obs.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("clean up redis key %s: %w", w.key, err)
	}
	return nil
}

func (c *client) close() {
	if c.stopRenew != nil {
		c.stopRenew()
		c.stopRenew = nil
	}
	c.rdb.Close()
	c.proxy.Close()
}

func (w *world) emit(e simulator.Event) int {
	e.Step, e.Kind, e.AtMs = w.step, e.Event, time.Since(w.start).Milliseconds()
	w.events = append(w.events, e)
	return len(w.events) - 1
}

// Do performs one action, then lets every polling waiter try once: a step
// is one action and the retries it gives the waiters.
func (w *world) Do(ctx context.Context, step int, a simulator.Action) ([]simulator.Event, error) {
	w.step, w.events = step, nil
	w.clock = w.ClockAt(step-1) + stepTick
	if err := w.act(ctx, a); err != nil {
		return w.events, fmt.Errorf("step %d: %s %s: %w", step, a.Action, a.Client, err)
	}
	if err := w.reconcile(ctx); err != nil {
		return w.events, fmt.Errorf("step %d: %w", step, err)
	}
	if len(w.clocks) == 0 {
		w.clocks = []time.Duration{0}
	}
	w.clocks = append(w.clocks[:step], w.clock)
	return w.events, nil
}

func (w *world) act(ctx context.Context, a simulator.Action) error {
	if a.Action == simulator.ActAdd {
		if err := w.add(ctx, a.Client); err != nil {
			return err
		}
		return w.pollRound(ctx)
	}
	c := w.byName[a.Client]
	if c == nil {
		return fmt.Errorf("unknown client %s", a.Client)
	}
	switch a.Action {
	case simulator.ActRelease:
		if err := w.release(ctx, c); err != nil {
			return err
		}
		return w.pollRound(ctx)
	case simulator.ActCrash:
		return w.cut(ctx, c, false)
	case simulator.ActPause:
		return w.cut(ctx, c, true)
	case simulator.ActWrite:
		w.write(c)
		return w.pollRound(ctx)
	case ActWait:
		return w.wait(ctx)
	}
	return fmt.Errorf("unknown action %q", a.Action)
}

func (w *world) add(ctx context.Context, name string) error {
	px, err := proxy.New(w.addr)
	if err != nil {
		return err
	}
	tok := make([]byte, 4)
	rand.Read(tok)
	c := &client{
		name: name, proxy: px, token: name + "-" + hex.EncodeToString(tok), state: simulator.StateWaiting,
		joined: w.step, since: w.step, renewals: &counter{},
		// One connection, no retries of its own: a command that meets a cut
		// fails, as the client's would. MaxRetries 1 lets the first command
		// after a pause redial the connection the cut closed.
		rdb: redis.NewClient(&redis.Options{
			Addr: px.Addr(), PoolSize: 1, MaxRetries: 1, DialTimeout: 2 * time.Second,
			ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second, ContextTimeoutEnabled: true,
		}),
	}
	w.clients = append(w.clients, c)
	w.byName[name] = c
	ok, err := w.try(ctx, c)
	if err != nil {
		return err
	}
	if ok {
		w.emit(simulator.Event{Client: name, Event: simulator.EvLock, Node: c.token, Token: c.fence,
			Text: fmt.Sprintf("%s: the key was free, it holds the lock%s", w.lines.acquireText, w.fenceText(c))})
		return nil
	}
	w.emit(simulator.Event{Client: name, Event: simulator.EvWait, On: w.ownerOfKey(ctx), Node: c.token,
		Text: fmt.Sprintf("%s failed: the key is taken; it polls again every %d ms (the server keeps no list of waiters)", w.lines.acquireText, w.p.retryMs())})
	return nil
}

func (w *world) fenceText(c *client) string {
	if !w.p.IncrFencing {
		return ""
	}
	return fmt.Sprintf("; INCR %s gave it fencing token %d (one more command per acquisition)", w.fenceKey, c.fence)
}

// try is one acquisition attempt by c; on success it takes its fencing
// token and starts its watchdog.
func (w *world) try(ctx context.Context, c *client) (bool, error) {
	c.stats.Commands++
	var ok bool
	if w.p.Watchdog {
		err := redissonLock.Run(ctx, c.rdb, []string{w.key}, w.p.ExpiryMs, c.token).Err()
		switch {
		case errors.Is(err, redis.Nil):
			ok = true
		case err != nil:
			return false, fmt.Errorf("%s: lock script: %w", c.name, err)
		}
	} else {
		var err error
		ok, err = c.rdb.SetNX(ctx, w.key, c.token, time.Duration(w.p.ExpiryMs)*time.Millisecond).Result()
		if err != nil {
			return false, fmt.Errorf("%s: SET NX: %w", c.name, err)
		}
	}
	if !ok {
		c.stats.Retries++
		c.line = w.lines.retry
		return false, nil
	}
	c.stats.Create++
	if w.p.IncrFencing {
		c.stats.Commands++
		n, err := c.rdb.Incr(ctx, w.fenceKey).Result()
		if err != nil {
			return false, fmt.Errorf("%s: INCR %s: %w", c.name, w.fenceKey, err)
		}
		c.fence = n
	}
	c.state, c.since, c.line = simulator.StateHolding, w.step, w.lines.work
	if w.p.Watchdog {
		w.startWatchdog(c)
	}
	return true, nil
}

// startWatchdog renews c's lease every third of it, as Redisson's watchdog
// does, until c releases or its connection fails (a crash, a pause: the
// renewals stop with the client).
func (w *world) startWatchdog(c *client) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	c.stopRenew = func() { cancel(); <-done }
	every := time.Duration(w.p.ExpiryMs) * time.Millisecond / 3
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if c.proxy.Cutting() {
				continue // the process is stopped or gone: nothing renews
			}
			n, err := redissonRenew.Run(ctx, c.rdb, []string{w.key}, w.p.ExpiryMs, c.token).Int()
			if err == nil {
				c.renewals.add()
			}
			if err == nil && n == 0 {
				return // not ours any more: Redisson stops renewing too
			}
		}
	}()
}

// pollRound lets every polling waiter try once, all at once: the server,
// not the queue order, picks the winner.
func (w *world) pollRound(ctx context.Context) error {
	var waiters []*client
	for _, c := range w.clients {
		if c.state == simulator.StateWaiting {
			waiters = append(waiters, c)
		}
	}
	won := make([]bool, len(waiters))
	errs := make([]error, len(waiters))
	var wg sync.WaitGroup
	for i, c := range waiters {
		wg.Go(func() { won[i], errs[i] = w.try(ctx, c) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for i, c := range waiters {
		if won[i] {
			w.emit(simulator.Event{Client: c.name, Event: simulator.EvLock, Node: c.token, Token: c.fence,
				Text: fmt.Sprintf("its retry found the key free: it holds the lock%s", w.fenceText(c))})
		}
	}
	return nil
}

// release is the scenario's release: a plain DEL, the compare-and-delete
// script, or Redisson's unlock script.
func (w *world) release(ctx context.Context, c *client) error {
	if c.state != simulator.StateHolding && c.state != simulator.StateStale {
		return fmt.Errorf("%s holds nothing (%s)", c.name, c.state)
	}
	if c.stopRenew != nil {
		c.stopRenew()
		c.stopRenew = nil
	}
	before := w.ownerOfKey(ctx)
	c.stats.Commands++
	c.line = w.lines.release
	var deleted int64
	var err error
	switch {
	case w.p.Watchdog:
		var r any
		r, err = redissonUnlock.Run(ctx, c.rdb, []string{w.key, w.channel}, 0, w.p.ExpiryMs, c.token).Result()
		if errors.Is(err, redis.Nil) {
			err = nil
		}
		if n, ok := r.(int64); ok && n == 1 {
			deleted = 1
		}
	case w.p.Release == releaseCAD:
		deleted, err = compareAndDelete.Run(ctx, c.rdb, []string{w.key}, c.token).Int64()
	default:
		deleted, err = c.rdb.Del(ctx, w.key).Result()
	}
	if err != nil {
		return fmt.Errorf("%s: release: %w", c.name, err)
	}
	c.state, c.since = simulator.StateReleased, w.step
	var text string
	switch {
	case deleted == 1 && before == c.name:
		c.stats.Delete++
		text = fmt.Sprintf("%s: deleted its own key", w.lines.releaseText)
	case deleted == 1:
		c.stats.Delete++
		text = fmt.Sprintf("%s: its own key had expired, and the DEL deleted %s's lock (a plain DEL checks no owner)", w.lines.releaseText, before)
	case before == "":
		text = fmt.Sprintf("%s: nothing to delete, its key had expired", w.lines.releaseText)
	default:
		text = fmt.Sprintf("%s: the key is %s's now, so the script deleted nothing", w.lines.releaseText, before)
	}
	w.emit(simulator.Event{Client: c.name, Event: simulator.EvUnlock, Node: c.token, On: ownerUnless(before, c.name), Text: text})
	return nil
}

func ownerUnless(owner, self string) string {
	if owner == self {
		return ""
	}
	return owner
}

// cut takes c off the network: a crash for good, a pause until its key has
// expired (with no expiry a pause would never end, so the rules refuse it).
// While the key lives, the waiters poll every retry interval, as they would.
func (w *world) cut(ctx context.Context, c *client, pause bool) error {
	if c.state == simulator.StateCrashed || c.state == simulator.StateReleased || c.proxy.Cutting() {
		return fmt.Errorf("%s is not running (%s)", c.name, c.state)
	}
	// held: the key is its own (as of the last step). A stale client's
	// key has already gone (it expired while the classroom stood still, or
	// another client deleted it): there is nothing left to expire.
	held := c.state == simulator.StateHolding
	stale := c.state == simulator.StateStale
	c.proxy.Cut()
	cutAt := time.Now()
	if pause {
		c.state = simulator.StatePaused
		w.emit(simulator.Event{Client: c.name, Event: simulator.EvPause, Node: c.token,
			Text: "stops (a long GC pause): it sends nothing, renews nothing, and still believes what it believed"})
	} else {
		c.state = simulator.StateCrashed
		if c.stopRenew != nil {
			c.stopRenew()
			c.stopRenew = nil
		}
		w.emit(simulator.Event{Client: c.name, Event: simulator.EvCrash, Node: c.token,
			Text: "crashes: its connection is gone for good, and with it any renewal"})
	}
	c.since = w.step
	w.show()
	if !held || w.p.ExpiryMs == 0 {
		// Nothing of c's will expire: the waiters keep polling a few times.
		for range 3 {
			if err := w.pollRound(ctx); err != nil {
				return err
			}
			if err := sleep(ctx, w.p.retry()); err != nil {
				return err
			}
		}
		if pause {
			c.proxy.Restore()
			text := fmt.Sprintf("resumes after %.1fs and polls again", time.Since(cutAt).Seconds())
			c.state = simulator.StateWaiting
			if stale {
				c.state, c.line = simulator.StateStale, w.lines.work
				text = fmt.Sprintf("resumes after %.1fs, still believing it holds the lock", time.Since(cutAt).Seconds())
			}
			w.emit(simulator.Event{Client: c.name, Event: simulator.EvResume, Node: c.token, Text: text})
		}
		return nil
	}
	tries := 0
	for {
		owner, err := w.obs.Exists(ctx, w.key).Result()
		if err != nil {
			return fmt.Errorf("watch %s expire: %w", w.key, err)
		}
		if owner == 0 {
			break
		}
		tries++
		if err := w.pollRound(ctx); err != nil {
			return err
		}
		if err := sleep(ctx, w.p.retry()); err != nil {
			return fmt.Errorf("%s's key did not expire %.1fs after the cut: %w", c.name, time.Since(cutAt).Seconds(), err)
		}
	}
	after := time.Since(cutAt)
	// On the run's clock an expiry takes the lease, whatever this machine took.
	w.clock += time.Duration(w.p.ExpiryMs) * time.Millisecond
	w.emit(simulator.Event{Client: c.name, Event: simulator.EvExpire, Node: c.token, AfterMs: after.Milliseconds(),
		Text: fmt.Sprintf("its key's %d ms expiry ran out %.1fs after it went silent: Redis deleted the key; the waiters had polled %d times meanwhile", w.p.ExpiryMs, after.Seconds(), tries)})
	if err := w.pollRound(ctx); err != nil {
		return err
	}
	if !pause {
		return nil
	}
	c.proxy.Restore()
	c.state, c.since, c.line = simulator.StateStale, w.step, w.lines.work
	w.emit(simulator.Event{Client: c.name, Event: simulator.EvResume, Node: c.token, AfterMs: time.Since(cutAt).Milliseconds(),
		Text: fmt.Sprintf("resumes after %.1fs: its key expired during the pause, but nothing tells it so: it still believes it holds the lock", time.Since(cutAt).Seconds())})
	return nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// waitFor is how long a wait step lets pass in real time: longer than a
// watchdog's renewal interval in the built-ins, so its time to live is
// seen climbing back.
const waitFor = time.Second

// wait lets time pass: every waiter polls for a second (and a watchdog
// renews), so the view shows what a polling waiter costs.
func (w *world) wait(ctx context.Context) error {
	rounds := max(1, int(waitFor/w.p.retry()))
	for range rounds {
		if err := w.pollRound(ctx); err != nil {
			return err
		}
		if err := sleep(ctx, w.p.retry()); err != nil {
			return err
		}
	}
	n := 0
	for _, c := range w.clients {
		if c.state == simulator.StateWaiting {
			n++
		}
	}
	w.emit(simulator.Event{Client: "", Event: simulator.EvWait,
		Text: fmt.Sprintf("time passes: %d waiter(s) polled %d times each", n, rounds)})
	return nil
}

func (w *world) write(c *client) {
	c.stats.Writes++
	c.line = w.lines.work
	ok, why := w.resource.Write(c.name, c.fence)
	tok := "no token"
	if c.fence != 0 {
		tok = fmt.Sprintf("token %d", c.fence)
	}
	if ok {
		w.emit(simulator.Event{Client: c.name, Event: simulator.EvWrite, Token: c.fence, Node: c.token,
			Text: fmt.Sprintf("writes to the protected resource with %s: %s", tok, why)})
		return
	}
	c.stats.Fenced++
	w.emit(simulator.Event{Client: c.name, Event: simulator.EvFenced, Token: c.fence, Node: c.token,
		Text: fmt.Sprintf("writes with %s: rejected, %s", tok, why)})
}

// reconcile reads the key and marks what the server says: a client that
// believes it holds but whose token is no longer the key's is stale.
func (w *world) reconcile(ctx context.Context) error {
	owner, err := w.keyToken(ctx)
	if err != nil {
		return err
	}
	for _, c := range w.clients {
		if c.state == simulator.StateHolding && c.token != owner {
			c.state, c.since = simulator.StateStale, w.step
		}
	}
	return nil
}

// keyToken is the token the key holds now ("" when there is no key).
func (w *world) keyToken(ctx context.Context) (string, error) {
	if w.p.Watchdog {
		fields, err := w.obs.HKeys(ctx, w.key).Result()
		if err != nil {
			return "", fmt.Errorf("read %s: %w", w.key, err)
		}
		if len(fields) == 0 {
			return "", nil
		}
		return fields[0], nil
	}
	v, err := w.obs.Get(ctx, w.key).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", w.key, err)
	}
	return v, nil
}

// ownerOfKey names the client whose token the key holds, "" when free.
func (w *world) ownerOfKey(ctx context.Context) string {
	tok, err := w.keyToken(ctx)
	if err != nil || tok == "" {
		return ""
	}
	for _, c := range w.clients {
		if c.token == tok {
			return c.name
		}
	}
	return tok
}

// show publishes the lock as it is now, in the middle of a step.
func (w *world) show() {
	if w.publish == nil {
		return
	}
	if snap, _, err := w.Snapshot(); err == nil {
		w.publish(snap)
	}
}

// Snapshot reads the key from the server (GET or the hash's field, and
// PTTL): the holder is whoever's token the server holds, not whom the
// classroom believes. Polling waiters are added from the classroom's own
// clients, marked as polling: the server keeps no record of them.
func (w *world) Snapshot() (lockqueue.Snapshot, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	snap := lockqueue.Snapshot{
		Service: serviceName, Path: w.key, Recipe: lockqueue.Generic, Connection: lockqueue.Connected, WatchSource: "none",
		Nodes: []lockqueue.Node{}, Alerts: []lockqueue.Alert{}, UpdatedAt: time.Now(),
	}
	tok, err := w.keyToken(ctx)
	if err != nil {
		return snap, true, err
	}
	if tok != "" {
		pttl, err := w.obs.Do(ctx, "PTTL", w.key).Int64()
		if err != nil {
			return snap, true, fmt.Errorf("PTTL %s: %w", w.key, err)
		}
		snap.Exists = true
		n := lockqueue.Node{Name: tok, Seq: -1, Mode: lockqueue.Exclusive, Recipe: lockqueue.Generic, Holding: true,
			Client: tok, Data: tok, Session: tok, LeaseID: w.key}
		if pttl > 0 {
			n.LeaseLeftMs = pttl
			n.LeaseTTLMs = w.p.ExpiryMs
		}
		for _, c := range w.clients {
			if c.token == tok {
				n.Order = c.fence
			}
		}
		snap.Nodes = append(snap.Nodes, n)
		if pttl == -1 {
			snap.Alerts = append(snap.Alerts, lockqueue.Alert{Kind: lockqueue.AlertZombie, Nodes: []string{tok},
				Message: fmt.Sprintf("%s has no expiry: if its owner is gone, nothing will ever delete it", w.key)})
		}
	}
	for _, c := range w.clients {
		if c.state != simulator.StateWaiting {
			continue
		}
		snap.Nodes = append(snap.Nodes, lockqueue.Node{Name: c.token, Seq: -1, Mode: lockqueue.Exclusive, Recipe: lockqueue.Generic,
			WaitsFor: tok, WaitsOn: lockqueue.OnPoll, Client: c.token, Session: c.token, WaitsForSource: lockqueue.ByRule})
	}
	return snap, true, nil
}

// Narrate tells the step from its events, in the run's clock.
func (w *world) Narrate(a simulator.Action, events []simulator.Event) string {
	var parts []string
	for _, e := range events {
		switch e.Event {
		case simulator.EvLock:
			parts = append(parts, e.Client+" holds the lock")
		case simulator.EvWait:
			if e.Client == "" {
				parts = append(parts, e.Text)
			} else {
				parts = append(parts, e.Client+" finds the key taken and polls")
			}
		case simulator.EvUnlock, simulator.EvWrite, simulator.EvFenced, simulator.EvCrash, simulator.EvPause, simulator.EvExpire, simulator.EvResume:
			parts = append(parts, e.Client+" "+e.Text)
		}
	}
	polls := 0
	for _, c := range w.clients {
		if c.state == simulator.StateWaiting {
			polls++
		}
	}
	if polls > 0 && !slices.ContainsFunc(events, func(e simulator.Event) bool { return e.Event == simulator.EvWait }) {
		parts = append(parts, fmt.Sprintf("%d waiter(s) retried and found the key taken", polls))
	}
	return simulator.Sentence(a, parts)
}

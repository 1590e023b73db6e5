package redislock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
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
	// setAndFence takes the key and its fencing token in one step: a
	// script runs whole, so no pause can fall between the SET NX and the
	// INCR. Taken apart, a client paused after its SET past the key's
	// expiry would INCR after the next holder and carry the higher token.
	// It returns the token, or 0 when the key was taken. ARGV[2] is the PX
	// (0: no expiry).
	setAndFence = redis.NewScript(`local ok; ` +
		`if ARGV[2] == '0' then ok = redis.call('set', KEYS[1], ARGV[1], 'NX') ` +
		`else ok = redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) end; ` +
		`if ok then return redis.call('incr', KEYS[2]) end; return 0`)
)

// commandTimeout bounds each of the classroom's Redis commands (redsync's
// tries have their own, shorter, context deadline).
const commandTimeout = 10 * time.Second

// contender is one Redis client: its own go-redis connection through its own
// loopback proxy, so a crash or a pause is what the server really sees.
type contender struct {
	name string
	// One proxy and one connection per master (Redlock's five; one
	// otherwise): rdbs[i] reaches masters[i] through proxies[i].
	proxies []*proxy.Proxy
	rdbs    []*redis.Client
	// mutex is its redsync mutex, on Redlock's masters.
	mutex  *redsync.Mutex
	token  string // the value it writes to the key (Redisson: its hash field)
	fence  int64  // its INCR fencing token, 0 without
	state  string
	joined int
	since  int
	line   int
	stats  simulator.Stats
	// cutAt and cutHeld: in a split scenario, when it was cut off holding
	// its key, whose expiry is the expire step's; lapsed: that step ran.
	cutAt           time.Time
	cutHeld, lapsed bool
	// watchdog renews a Redisson lease while the client holds; stop ends it.
	stopRenew func()
	// sub is a Redisson waiter's subscription to the lock's unlock
	// channel; retryAt is when the ttl its lock script returned runs out,
	// its other reason to try again.
	sub      *redis.PubSub
	retryAt  time.Time
	renewals atomic.Int64
	// loop is a waiter locking with redsync's defaults, retrying on its
	// own (nil for the classroom-paced clients).
	loop *lockLoop
}

// retries is c's failed tries: the classroom's count of its paced ones,
// or what its connection saw refused.
func (c *contender) retries() int {
	if c.loop != nil {
		return int(c.loop.wire.refused.Load())
	}
	return c.stats.Retries
}

// rdb is the client's connection to the single master.
func (c *contender) rdb() *redis.Client { return c.rdbs[0] }

// failed is err with why the client's proxy closed its connection unused,
// when it did: go-redis says only EOF.
func (c *contender) failed(err error) error {
	if !errors.Is(err, io.EOF) {
		return err
	}
	for _, p := range c.proxies {
		if why := p.Refused(); why != nil {
			return fmt.Errorf("%w (%v)", err, why)
		}
	}
	return err
}

func (c *contender) cut() {
	for _, p := range c.proxies {
		p.Cut()
	}
}

func (c *contender) restore() {
	for _, p := range c.proxies {
		p.Restore()
	}
}

func (c *contender) cutting() bool { return c.proxies[0].Cutting() }

// stopWatchdog ends c's lease renewals, if it has any running.
func (c *contender) stopWatchdog() {
	if c.stopRenew != nil {
		c.stopRenew()
		c.stopRenew = nil
	}
}

// world is one Redis lock key on the classroom's redis-server (or on
// Redlock's masters, a server each) and the clients contending for it.
type world struct {
	simulator.Base

	key      string
	fenceKey string
	channel  string
	masters  []*master
	p        params
	lines    recipeLines

	clients []*contender
	byName  map[string]*contender
	// calls is what the server counted of the lock's commands during wait
	// steps, or in all (CountAll) (OwnServer only).
	calls int
	// stepTTL is the key's time to live as the last step saw it.
	stepTTL []simulator.TTLSample
	// spinRate is the lock commands/s the server counted in the last
	// metered wait.
	spinRate float64
	// queueCost measures compare-queues (Backend.QueueCost).
	queueCost QueueCost
	// held is the key's time left on each master, in ms, kept while the
	// classroom holds its clock between steps (world_hold.go); 0: none.
	held []int64
	// instant: the step being done lets no time pass (letsTimePass).
	instant bool
}

func newWorld(ctx context.Context, masters []*master, spec simulator.WorldSpec, p params) (*world, error) {
	w := &world{
		key: spec.Path, fenceKey: spec.Path + ":fence", channel: "redisson_lock__channel:{" + spec.Path + "}",
		masters: masters, p: p, lines: linesFor(p), byName: map[string]*contender{}, Base: simulator.NewBase(spec),
	}
	for _, m := range masters {
		if err := m.obs.Ping(ctx).Err(); err != nil {
			w.closeMasters()
			return nil, fmt.Errorf("redis %s: %w", m.addr, err)
		}
	}
	return w, nil
}

// obs is the classroom's own connection to the single master.
func (w *world) obs() *redis.Client { return w.masters[0].obs }

func (w *world) redlock() bool { return len(w.masters) > 1 }

func (w *world) quorum() int { return len(w.masters)/2 + 1 }

func (w *world) Path() string { return w.key }

func (w *world) Ready() string {
	text := fmt.Sprintf("Ready: the Redis key %s does not exist. Each step performs one action, then every polling waiter tries once more.", w.key)
	if w.holdsKeys() {
		text += " The key's expiry runs only in the steps that let time pass (a pause, a crash, a wait): between steps, and in the steps that are instants, the classroom holds it (PERSIST, and PEXPIREAT with the time left when time passes again), so it runs out in the step the scenario says, however fast or slowly you step or play."
	}
	if w.p.IncrFencing {
		text += " " + fencingCaveat
	}
	return text
}

// fencingCaveat is what an INCR token cannot promise, said wherever the
// classroom offers it as the fix.
const fencingCaveat = "The fencing counter is a key on one master: Redis replicates asynchronously, so after a failover to a replica that had not yet received the last INCRs the counter goes back, and a new holder can be given a token already handed out."

func (w *world) Line(name string) int {
	return simulator.LineOf(w.byName, name, func(c *contender) int { return c.line })
}

func (w *world) Stats() simulator.Stats {
	var s simulator.Stats
	for _, c := range w.clients {
		s.Add(c.stats)
		if c.loop != nil {
			s.Commands += int(c.loop.wire.commands.Load())
			s.Retries += int(c.loop.wire.refused.Load())
		}
		s.Renewals += int(c.renewals.Load())
		s.Commands += int(c.renewals.Load())
	}
	s.ServerCalls = w.calls
	return s
}

func (w *world) Clients() []simulator.ClientInfo {
	out := make([]simulator.ClientInfo, 0, len(w.clients))
	for _, c := range w.clients {
		ci := simulator.ClientInfo{
			Name: c.name, Node: c.token, Path: w.key, Mode: lockqueue.Exclusive, State: c.state, Token: c.fence,
			Session: c.token, Line: c.line, Joined: c.joined, Since: c.since,
			JoinedMs: w.ClockAt(c.joined).Milliseconds(), SinceMs: w.ClockAt(c.since).Milliseconds(),
			Polling: c.state == simulator.StateWaiting, Retries: c.retries(),
		}
		out = append(out, ci)
	}
	return out
}

// Close ends every client and deletes the run's keys (Redlock's masters
// are the world's own: they stop).
func (w *world) Close() error {
	for _, c := range w.clients {
		c.close()
	}
	var err error
	if !w.redlock() {
		if err = w.obs().Del(context.Background(), w.key, w.fenceKey).Err(); err != nil {
			err = fmt.Errorf("clean up redis key %s: %w", w.key, err)
		}
	}
	return errors.Join(err, w.closeMasters())
}

func (w *world) closeMasters() error {
	var errs []error
	for _, m := range w.masters {
		errs = append(errs, m.close())
	}
	return errors.Join(errs...)
}

func (c *contender) close() {
	if c.loop != nil {
		c.loop.stop()
	}
	c.unsubscribe()
	c.stopWatchdog()
	for i := range c.rdbs {
		c.rdbs[i].Close()
		c.proxies[i].Close()
	}
}

// Do performs one action, then lets every polling waiter try once: a step
// is one action and the retries it gives the waiters.
func (w *world) Do(ctx context.Context, step int, a simulator.Action) ([]simulator.Event, error) {
	w.Begin(step)
	from := w.ClockAt(step - 1)
	w.instant = !w.letsTimePass(a)
	if !w.instant {
		if err := w.resumeKeys(ctx); err != nil {
			return nil, fmt.Errorf("step %d: %w", step, err)
		}
	}
	stop := w.sampleTTL(ctx)
	err := w.act(ctx, a)
	if err != nil {
		err = fmt.Errorf("step %d: %s %s: %w", step, a.Action, a.Client, err)
	} else if err = w.reconcile(ctx); err != nil {
		err = fmt.Errorf("step %d: %w", step, err)
	}
	reads := stop()
	// Hold the key's clock until the next step that lets time pass.
	if herr := w.holdKeys(ctx); err == nil && herr != nil {
		err = fmt.Errorf("step %d: %w", step, herr)
	}
	if err != nil {
		return w.Events, err
	}
	if w.p.CountAll {
		n, err := w.serverCalls(ctx)
		if err != nil {
			return w.Events, fmt.Errorf("step %d: %w", step, err)
		}
		w.calls = n
	}
	w.End()
	w.stepTTL = w.placeTTL(reads, from, w.Clock)
	return w.Events, nil
}

func (w *world) act(ctx context.Context, a simulator.Action) error {
	if a.Action == simulator.ActAdd {
		if err := w.add(ctx, a.Client); err != nil {
			return err
		}
		return w.pollRound(ctx)
	}
	if m := w.masterByName(a.Client); m != nil && w.redlock() {
		return w.actMaster(ctx, m, a.Action)
	}
	c := w.byName[a.Client]
	if c == nil {
		return fmt.Errorf("unknown client %s", a.Client)
	}
	switch a.Action {
	case simulator.ActRelease:
		return w.release(ctx, c)
	case simulator.ActCrash:
		return w.cut(ctx, c, false)
	case simulator.ActPause:
		return w.cut(ctx, c, true)
	case simulator.ActExpire:
		return w.expireCut(ctx, c)
	case simulator.ActWake:
		return w.pollRound(ctx)
	case simulator.ActResume:
		return w.resumeCut(ctx, c)
	case simulator.ActWrite:
		w.write(c)
		return w.pollRound(ctx)
	case ActWait:
		return w.wait(ctx, c.name)
	case ActCompare:
		return w.compareQueues(ctx, c.name)
	}
	return fmt.Errorf("unknown action %q", a.Action)
}

func (w *world) add(ctx context.Context, name string) error {
	tok := make([]byte, 4)
	rand.Read(tok)
	c := &contender{
		name: name, token: name + "-" + hex.EncodeToString(tok), state: simulator.StateWaiting,
		joined: w.Step, since: w.Step,
	}
	var pools []redsyncredis.Pool
	for _, m := range w.masters {
		px, err := proxy.New(m.addr)
		if err != nil {
			c.close()
			return err
		}
		// One connection, no retries of its own: a command that meets a
		// cut fails, as the client's would. MaxRetries 1 lets the first
		// command after a pause redial the connection the cut closed.
		// No command is sent while a client is cut off, so the timeouts
		// only bound a slow answer: at a load average of 30 on 2 cores a
		// SET NX took longer than 2 s, failing the run.
		rdb := redis.NewClient(&redis.Options{
			Addr: px.Addr(), PoolSize: 1, MaxRetries: 1, DialTimeout: commandTimeout,
			ReadTimeout: commandTimeout, WriteTimeout: commandTimeout, ContextTimeoutEnabled: true,
		})
		c.proxies, c.rdbs = append(c.proxies, px), append(c.rdbs, rdb)
		pools = append(pools, goredis.NewPool(rdb))
	}
	if w.redlock() {
		// One try per poll round: the classroom paces the retries, so
		// every try is a step's event; the token is the client's own.
		c.mutex = redsync.New(pools...).NewMutex(w.key, redsync.WithExpiry(time.Duration(w.p.ExpiryMs)*time.Millisecond),
			redsync.WithTries(1), redsync.WithGenValueFunc(func() (string, error) { return c.token, nil }))
	}
	w.clients = append(w.clients, c)
	w.byName[name] = c
	if w.defaultLocker(name) {
		w.startLockLoop(c)
		w.Emit(simulator.Event{Client: name, Event: simulator.EvWait, On: w.ownerOfKey(ctx), Node: c.token,
			Text: fmt.Sprintf("calls redsync's Lock with its defaults: up to %d tries of SET NX PX 8000, 50–250 ms apart, on its own clock, then ErrFailed", redsyncTries)})
		return nil
	}
	ok, err := w.try(ctx, c)
	if err != nil {
		return err
	}
	if err := w.holdAcquired(ctx, ok); err != nil {
		return err
	}
	if ok {
		w.Emit(simulator.Event{Client: name, Event: simulator.EvLock, Node: c.token, Token: c.fence,
			Text: fmt.Sprintf("%s: %s, it holds the lock%s", w.lines.acquireText, w.gotText(ctx, c), w.fenceText(c))})
		return nil
	}
	if w.p.Watchdog {
		if err := w.subscribe(ctx, c); err != nil {
			return err
		}
		w.Emit(simulator.Event{Client: name, Event: simulator.EvWait, On: w.ownerOfKey(ctx), Node: c.token, Watch: "subscribe",
			Text: fmt.Sprintf("%s failed: the key is taken; it subscribes to %s and waits for an unlock message or the key's ttl (%d ms left)",
				w.lines.acquireText, w.channel, time.Until(c.retryAt).Milliseconds())})
		return nil
	}
	taken := "the key is taken"
	if w.redlock() {
		taken = w.noMajority(ctx)
	}
	w.Emit(simulator.Event{Client: name, Event: simulator.EvWait, On: w.ownerOfKey(ctx), Node: c.token,
		Text: fmt.Sprintf("%s failed: %s; it polls again every %d ms (the server keeps no list of waiters)", w.lines.acquireText, taken, w.p.retryMs())})
	return nil
}

// noMajority says why a Redlock try just failed: the masters that were
// free (redsync gave back what it got there) and those that are down.
func (w *world) noMajority(ctx context.Context) string {
	var free, down []string
	for i, t := range w.tokens(ctx) {
		m := w.masters[i]
		switch {
		case m.out:
			down = append(down, m.name+" is out (its delayed restart)")
		case !w.up(i):
			down = append(down, m.name+" is down")
		case t == "":
			free = append(free, m.name)
		}
	}
	text := fmt.Sprintf("only %d of %d masters were free (%s): no majority, so redsync gave those back", len(free), len(w.masters), strings.Join(free, ", "))
	if len(free) == 0 {
		text = fmt.Sprintf("no master of %d was free: no majority", len(w.masters))
	}
	if len(down) > 0 {
		text += "; " + strings.Join(down, ", ")
	}
	return text
}

// subscribe makes c a Redisson waiter: subscribed, through its own proxy,
// to the channel the unlock script publishes on.
func (w *world) subscribe(ctx context.Context, c *contender) error {
	c.stats.Commands++
	c.sub = c.rdb().Subscribe(ctx, w.channel)
	if _, err := c.sub.Receive(ctx); err != nil {
		return fmt.Errorf("%s: SUBSCRIBE %s: %w", c.name, w.channel, err)
	}
	return nil
}

func (c *contender) unsubscribe() {
	if c.sub != nil {
		c.sub.Close()
		c.sub = nil
	}
}

// woken waits a moment for the unlock message a release just published
// (the server sent it before answering the unlock script, so it is on its
// way); false when none came.
func (c *contender) woken(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	for {
		msg, err := c.sub.Receive(ctx)
		if err != nil {
			return false
		}
		if _, ok := msg.(*redis.Message); ok {
			return true
		}
	}
}

// gotText says what an acquirer got: the key, or Redlock's count of masters.
func (w *world) gotText(ctx context.Context, c *contender) string {
	if !w.redlock() {
		return "the key was free"
	}
	var got []string
	for i, t := range w.tokens(ctx) {
		if t == c.token {
			got = append(got, w.masters[i].name)
		}
	}
	return fmt.Sprintf("%d of %d masters (%s), a majority", len(got), len(w.masters), strings.Join(got, ", "))
}

func (w *world) fenceText(c *contender) string {
	if !w.p.IncrFencing {
		return ""
	}
	return fmt.Sprintf("; the same script's INCR %s gave it fencing token %d (no pause can fall between the key and its token)", w.fenceKey, c.fence)
}

// try is one acquisition attempt by c; on success it takes its fencing
// token and starts its watchdog.
func (w *world) try(ctx context.Context, c *contender) (bool, error) {
	c.stats.Commands++
	var ok bool
	switch {
	case w.redlock():
		// redsync sends SET NX PX to every master, and on failing the
		// quorum its release script to every master too.
		c.stats.Commands += len(w.masters) - 1
		if err := c.mutex.TryLockContext(ctx); err == nil {
			ok = true
		} else {
			// A failed try costs redsync's release script on every master.
			c.stats.Commands += len(w.masters)
			w.Log.Debug("redis classroom: redsync try", "client", c.name, "err", err)
		}
	case w.p.Watchdog:
		ttl, err := redissonLock.Run(ctx, c.rdb(), []string{w.key}, w.p.ExpiryMs, c.token).Int64()
		switch {
		case errors.Is(err, redis.Nil):
			ok = true
		case err != nil:
			return false, fmt.Errorf("%s: lock script: %w", c.name, c.failed(err))
		default:
			c.retryAt = time.Now().Add(time.Duration(ttl) * time.Millisecond)
		}
	case w.p.IncrFencing:
		n, err := setAndFence.Run(ctx, c.rdb(), []string{w.key, w.fenceKey}, c.token, w.p.ExpiryMs).Int64()
		if err != nil {
			return false, fmt.Errorf("%s: SET NX and INCR %s script: %w", c.name, w.fenceKey, c.failed(err))
		}
		ok, c.fence = n > 0, n
	default:
		var err error
		ok, err = c.rdb().SetNX(ctx, w.key, c.token, time.Duration(w.p.ExpiryMs)*time.Millisecond).Result()
		if err != nil {
			return false, fmt.Errorf("%s: SET NX: %w", c.name, c.failed(err))
		}
	}
	if !ok {
		c.stats.Retries++
		c.line = w.lines.retry
		return false, nil
	}
	c.stats.Create++
	c.state, c.since, c.line = simulator.StateHolding, w.Step, w.lines.work
	if w.p.Watchdog {
		c.unsubscribe()
		w.startWatchdog(c)
	}
	return true, nil
}

// startWatchdog renews c's lease every third of it, as Redisson's watchdog
// does, until c releases or its connection fails (a crash, a pause: the
// renewals stop with the client).
func (w *world) startWatchdog(c *contender) {
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
			if c.cutting() {
				continue // the process is stopped or gone: nothing renews
			}
			n, err := redissonRenew.Run(ctx, c.rdb(), []string{w.key}, w.p.ExpiryMs, c.token).Int()
			if err == nil {
				c.renewals.Add(1)
			}
			if err == nil && n == 0 {
				return // not ours any more: Redisson stops renewing too
			}
		}
	}()
}

// pollRound lets every polling waiter try once, all at once: the server,
// not the queue order, picks the winner. A Redisson waiter tries only when
// due: woken by an unlock message (published tells it so) or past the
// ttl its last try returned.
func (w *world) pollRound(ctx context.Context) error {
	return w.retryRound(ctx, false)
}

func (w *world) retryRound(ctx context.Context, published bool) error {
	var waiters []*contender
	for _, c := range w.clients {
		if c.state != simulator.StateWaiting || c.loop != nil {
			continue
		}
		if c.sub != nil {
			switch {
			case published && c.woken(ctx):
				c.stats.Notifications++
				w.Emit(simulator.Event{Client: c.name, Event: simulator.EvNotify, Watch: "subscribe", Node: c.token,
					Text: "the unlock message on " + w.channel + " woke it; it runs the lock script again"})
			case time.Now().Before(c.retryAt):
				continue // still asleep until the ttl runs out
			}
		}
		waiters = append(waiters, c)
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
	if err := w.holdAcquired(ctx, slices.Contains(won, true)); err != nil {
		return err
	}
	for i, c := range waiters {
		if won[i] {
			order := ""
			if len(waiters) > 2 {
				order = fmt.Sprintf(" (it was the %s of %d waiters to arrive: polling keeps no order)", ordinal(i+1), len(waiters))
			}
			w.Emit(simulator.Event{Client: c.name, Event: simulator.EvLock, Node: c.token, Token: c.fence,
				Text: fmt.Sprintf("its retry: %s, it holds the lock%s%s", w.gotText(ctx, c), w.fenceText(c), order)})
		}
	}
	return nil
}

// release is the scenario's release: a plain DEL, the compare-and-delete
// script, or Redisson's unlock script.
func (w *world) release(ctx context.Context, c *contender) error {
	if c.state != simulator.StateHolding && c.state != simulator.StateStale {
		return fmt.Errorf("%s holds nothing (%s)", c.name, c.state)
	}
	c.stopWatchdog()
	before := w.ownerOfKey(ctx)
	c.stats.Commands++
	c.line = w.lines.release
	deleted, err := w.unlock(ctx, c)
	if err != nil {
		return fmt.Errorf("%s: release: %w", c.name, err)
	}
	c.state, c.since = simulator.StateReleased, w.Step
	if deleted == 1 {
		c.stats.Delete++
	}
	w.Emit(simulator.Event{Client: c.name, Event: simulator.EvUnlock, Node: c.token, On: ownerUnless(before, c.name),
		Text: w.releaseText(c, before, deleted)})
	if w.p.Watchdog && deleted == 1 {
		return w.retryRound(ctx, true)
	}
	return w.pollRound(ctx)
}

// unlock sends c's release command and answers how many lock keys it
// deleted, 0 or 1.
func (w *world) unlock(ctx context.Context, c *contender) (int64, error) {
	switch {
	case w.redlock():
		return w.redlockUnlock(ctx, c)
	case w.p.Watchdog:
		return w.watchdogUnlock(ctx, c)
	case w.p.Release == releaseCAD:
		return compareAndDelete.Run(ctx, c.rdb(), []string{w.key}, c.token).Int64()
	default:
		return c.rdb().Del(ctx, w.key).Result()
	}
}

// redlockUnlock is redsync's release: its compare-and-delete script on
// every master. However many masters still had c's token, that is one
// lock deleted.
func (w *world) redlockUnlock(ctx context.Context, c *contender) (int64, error) {
	c.stats.Commands += len(w.masters) - 1
	before := w.tokens(ctx)
	_, err := c.mutex.UnlockContext(ctx)
	if errors.Is(err, redsync.ErrLockAlreadyExpired) || errors.As(err, new(*redsync.ErrTaken)) {
		err = nil
	}
	after := w.tokens(ctx)
	var deleted int64
	for i := range before {
		if before[i] == c.token && after[i] != c.token {
			deleted++
		}
	}
	return min(deleted, 1), err
}

// watchdogUnlock is Redisson's release: its unlock script, which answers
// 1 when it deleted the lock.
func (w *world) watchdogUnlock(ctx context.Context, c *contender) (int64, error) {
	r, err := redissonUnlock.Run(ctx, c.rdb(), []string{w.key, w.channel}, 0, w.p.ExpiryMs, c.token).Result()
	if errors.Is(err, redis.Nil) {
		err = nil
	}
	if n, ok := r.(int64); ok && n == 1 {
		return 1, err
	}
	return 0, err
}

// releaseText tells what c's release did to the key before owned.
func (w *world) releaseText(c *contender, before string, deleted int64) string {
	if w.redlock() && deleted == 1 && before != c.name {
		// The script deletes only copies with its token: a client that
		// lost its majority deletes what is left of its own.
		others := "no other client holds a majority"
		if before != "" {
			others = before + "'s copies, another token, are left alone"
		}
		return fmt.Sprintf("%s: deleted its own copies, which no longer made a majority; %s", w.lines.releaseText, others)
	}
	switch {
	case deleted == 1 && before == c.name:
		return fmt.Sprintf("%s: deleted its own key", w.lines.releaseText)
	case deleted == 1:
		return fmt.Sprintf("%s: its own key had expired, and the DEL deleted %s's lock (a plain DEL checks no owner)", w.lines.releaseText, before)
	case before == "":
		return fmt.Sprintf("%s: nothing to delete, its key had expired", w.lines.releaseText)
	default:
		return fmt.Sprintf("%s: the key is %s's now, so the script deleted nothing", w.lines.releaseText, before)
	}
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
func (w *world) cut(ctx context.Context, c *contender, pause bool) error {
	if c.state == simulator.StateCrashed || c.state == simulator.StateReleased || c.cutting() {
		return fmt.Errorf("%s is not running (%s)", c.name, c.state)
	}
	// held: the key is its own (as of the last step). A stale client's
	// key has already gone (it expired while the classroom stood still, or
	// another client deleted it): there is nothing left to expire.
	held := c.state == simulator.StateHolding
	stale := c.state == simulator.StateStale
	c.cut()
	cutAt := time.Now()
	w.announceCut(c, pause)
	if !held || w.p.ExpiryMs == 0 {
		return w.cutWithoutExpiry(ctx, c, pause, stale, cutAt)
	}
	if w.Split {
		// The key's expiry is the expire step's; until then the classroom
		// holds it, and the waiters find it taken.
		c.cutAt, c.cutHeld = cutAt, true
		return w.pollRound(ctx)
	}
	if err := w.awaitExpiry(ctx, c, cutAt); err != nil {
		return err
	}
	if !pause {
		return nil
	}
	c.restore()
	c.state, c.since, c.line = simulator.StateStale, w.Step, w.lines.work
	w.Emit(simulator.Event{Client: c.name, Event: simulator.EvResume, Node: c.token, AfterMs: time.Since(cutAt).Milliseconds(),
		Text: fmt.Sprintf("resumes after %.1fs: its key expired during the pause, but nothing tells it so: it still believes it holds the lock", time.Since(cutAt).Seconds())})
	return nil
}

// expireCut is a split scenario's expire step: the cut holder's key runs
// out while the waiters poll and find it taken; the step ends as Redis
// deletes the key, before any waiter's next try (the wake step's).
func (w *world) expireCut(ctx context.Context, c *contender) error {
	if !c.cutHeld || c.lapsed {
		return fmt.Errorf("%s has no key running out while it is cut off (%s)", c.name, c.state)
	}
	tries := w.retries()
	for {
		left, err := w.obs().PTTL(ctx, w.key).Result()
		if err != nil {
			return fmt.Errorf("PTTL %s: %w", w.key, err)
		}
		if left == -2 {
			break // gone
		}
		if left < 0 {
			return fmt.Errorf("%s has no expiry: %s's pause would never end", w.key, c.name)
		}
		// The waiters poll while the key lives, but not within a retry of
		// its end: a try that took it would be the next step's hand-over.
		if left > 2*w.p.retry() {
			if err := w.pollRound(ctx); err != nil {
				return err
			}
		}
		if err := simulator.Sleep(ctx, min(w.p.retry(), max(left, time.Millisecond))); err != nil {
			return fmt.Errorf("%s's key did not expire %.1fs after the cut: %w", c.name, time.Since(c.cutAt).Seconds(), err)
		}
	}
	w.Clock += time.Duration(w.p.ExpiryMs) * time.Millisecond
	c.lapsed, c.since = true, w.Step
	text := fmt.Sprintf("its key's %d ms expiry ran out with no word from it: Redis deleted the key; the waiters had made %d failed tries meanwhile, and their next try (the next step) will find it free", w.p.ExpiryMs, w.retries()-tries)
	if c.state == simulator.StatePaused {
		text += "; it is still stopped and believes it holds the lock: nothing told it otherwise"
	}
	w.Emit(simulator.Event{Client: c.name, Event: simulator.EvExpire, Node: c.token, AfterMs: time.Since(c.cutAt).Milliseconds(), Text: text})
	return nil
}

// resumeCut is a split scenario's resume step: the paused client, whose
// key expired in an earlier step, runs again, still believing it holds.
// It is stale since the expiry's step, when it lost the lock.
func (w *world) resumeCut(ctx context.Context, c *contender) error {
	if c.state != simulator.StatePaused || !c.lapsed {
		return fmt.Errorf("%s is not paused past its key's expiry (%s)", c.name, c.state)
	}
	c.restore()
	c.state, c.line = simulator.StateStale, w.lines.work
	w.Emit(simulator.Event{Client: c.name, Event: simulator.EvResume, Node: c.token, AfterMs: time.Since(c.cutAt).Milliseconds(),
		Text: "resumes after a pause longer than its key's expiry: its key expired during the pause, but nothing tells it so: it still believes it holds the lock"})
	return w.pollRound(ctx)
}

// announceCut records c, just cut off, as paused or crashed (a crash ends
// its renewals for good).
func (w *world) announceCut(c *contender, pause bool) {
	if pause {
		c.state = simulator.StatePaused
		w.Emit(simulator.Event{Client: c.name, Event: simulator.EvPause, Node: c.token,
			Text: "stops (a long GC pause): it sends nothing, renews nothing, and still believes what it believed"})
	} else {
		c.state = simulator.StateCrashed
		c.stopWatchdog()
		w.Emit(simulator.Event{Client: c.name, Event: simulator.EvCrash, Node: c.token,
			Text: "crashes: its connection is gone for good, and with it any renewal"})
	}
	c.since = w.Step
	w.show()
}

// cutWithoutExpiry is a cut when nothing of c's will expire: the waiters
// keep polling a few times, then a paused c resumes as it was, waiting or
// (stale) still believing it holds the lock.
func (w *world) cutWithoutExpiry(ctx context.Context, c *contender, pause, stale bool, cutAt time.Time) error {
	if err := w.pollFor(ctx, 3); err != nil {
		return err
	}
	if !pause {
		return nil
	}
	c.restore()
	text := fmt.Sprintf("resumes after %.1fs and polls again", time.Since(cutAt).Seconds())
	c.state = simulator.StateWaiting
	if stale {
		c.state, c.line = simulator.StateStale, w.lines.work
		text = fmt.Sprintf("resumes after %.1fs, still believing it holds the lock", time.Since(cutAt).Seconds())
	}
	w.Emit(simulator.Event{Client: c.name, Event: simulator.EvResume, Node: c.token, Text: text})
	return nil
}

// awaitExpiry lets the waiters poll every retry interval until c's key,
// silent since cutAt, expires, then tells of the expiry and lets them try
// once more.
func (w *world) awaitExpiry(ctx context.Context, c *contender, cutAt time.Time) error {
	tries := w.retries()
	expired := func() {
		after := time.Since(cutAt)
		// On the run's clock an expiry takes the lease, whatever this machine took.
		w.Clock += time.Duration(w.p.ExpiryMs) * time.Millisecond
		w.Emit(simulator.Event{Client: c.name, Event: simulator.EvExpire, Node: c.token, AfterMs: after.Milliseconds(),
			Text: fmt.Sprintf("its key's %d ms expiry ran out %.1fs after it went silent: Redis deleted the key; the waiters had made %d failed tries meanwhile", w.p.ExpiryMs, after.Seconds(), w.retries()-tries)})
	}
	for {
		owner, err := w.obs().Exists(ctx, w.key).Result()
		if err != nil {
			return fmt.Errorf("watch %s expire: %w", w.key, err)
		}
		if owner == 0 {
			break
		}
		mark := len(w.Events)
		if err := w.pollRound(ctx); err != nil {
			return err
		}
		if len(w.Events) > mark {
			// The key expired between the read and the retries, and a
			// retry took it: the expiry is told first, as it came first.
			won := slices.Clone(w.Events[mark:])
			w.Events = w.Events[:mark]
			expired()
			w.Events = append(w.Events, won...)
			return nil
		}
		if err := simulator.Sleep(ctx, w.p.retry()); err != nil {
			return fmt.Errorf("%s's key did not expire %.1fs after the cut: %w", c.name, time.Since(cutAt).Seconds(), err)
		}
	}
	expired()
	return w.pollRound(ctx)
}

// waitFor is how long a wait step lets pass in real time: longer than a
// watchdog's renewal interval in the built-ins, so its time to live is
// seen climbing back.
const waitFor = time.Second

// wait lets time pass: every waiter polls for a second (and a watchdog
// renews), so the view shows what a polling waiter costs.
func (w *world) wait(ctx context.Context, who string) error {
	rounds := max(1, int(waitFor/w.p.retry()))
	tries := w.retries()
	before, err := w.serverCalls(ctx)
	if err != nil {
		return err
	}
	start := time.Now()
	// A default locker's wait lasts until every such Lock has returned.
	loops := w.defaultLocker(who)
	if loops {
		if err := w.waitLoops(ctx); err != nil {
			return err
		}
	} else if err := w.pollFor(ctx, rounds); err != nil {
		return err
	}
	took := time.Since(start)
	text := fmt.Sprintf("time passes (%.1fs): %d waiter(s), %d failed tries in all", took.Seconds(), w.waiters(), w.retries()-tries)
	if w.p.OwnServer {
		after, err := w.serverCalls(ctx)
		if err != nil {
			return err
		}
		d := after - before
		// The server-counted meter must match the clients' tally step by
		// step; default lockers' tries straddle the step's edges (they
		// began when added), so their wait's count is told, not metered.
		if !loops {
			w.calls += d
			w.spinRate = float64(d) / took.Seconds()
		}
		text += fmt.Sprintf("; the server itself counted %d lock commands in %.1fs (INFO commandstats): %.0f commands/s while nobody could acquire",
			d, took.Seconds(), float64(d)/took.Seconds())
	}
	w.Emit(simulator.Event{Client: who, Event: simulator.EvWait, Text: text})
	return nil
}

// lockCommands are the commands a lock's clients send, as INFO
// commandstats names them; the classroom's own reads (GET, PTTL, EXISTS,
// INFO) are left out.
var lockCommands = []string{"set", "setnx", "del", "eval", "evalsha", "incr", "pexpire", "hincrby"}

// serverCalls is what the server counted of the lock's commands so far.
func (w *world) serverCalls(ctx context.Context) (int, error) {
	if !w.p.OwnServer {
		return 0, nil
	}
	info, err := w.obs().Info(ctx, "commandstats").Result()
	if err != nil {
		return 0, fmt.Errorf("INFO commandstats: %w", err)
	}
	return sumCalls(info, lockCommands), nil
}

// sumCalls adds the calls= of the named commands in INFO commandstats
// ("cmdstat_set:calls=12,usec=...").
func sumCalls(info string, names []string) int {
	total := 0
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !slices.Contains(names, strings.TrimPrefix(name, "cmdstat_")) {
			continue
		}
		for _, kv := range strings.Split(rest, ",") {
			if v, ok := strings.CutPrefix(kv, "calls="); ok {
				n, _ := strconv.Atoi(v)
				total += n
			}
		}
	}
	return total
}

func (w *world) write(c *contender) {
	c.line = w.lines.work
	with := " with no token"
	if c.fence != 0 {
		with = fmt.Sprintf(" with token %d", c.fence)
	}
	e := w.Resource.Tell(&c.stats, c.name, c.token, c.fence, with)
	if e.Event == simulator.EvFenced && c.fence != 0 {
		// The fix is only as good as its counter: say so where it acts.
		e.Text += ". This holds while the counter only goes up: after a failover with asynchronous replication it can go back"
	}
	w.Emit(e)
}

// reconcile reads the key and marks what the server says: a client that
// believes it holds but whose token is no longer the key's is stale.
func (w *world) reconcile(ctx context.Context) error {
	w.reapLoops(ctx)
	owner, err := w.keyToken(ctx)
	if err != nil {
		return err
	}
	for _, c := range w.clients {
		if c.state == simulator.StateHolding && c.token != owner {
			c.state, c.since = simulator.StateStale, w.Step
		}
	}
	return nil
}

// keyToken is the token the key holds now ("" when there is no key); on
// Redlock's masters, the token a quorum of them holds.
func (w *world) keyToken(ctx context.Context) (string, error) {
	if w.redlock() {
		count := map[string]int{}
		for _, t := range w.tokens(ctx) {
			if t != "" {
				count[t]++
			}
		}
		// A master kept out after its restart stands for the copy it
		// lost: it can grant it to no one else (restartDelayed).
		for _, m := range w.masters {
			if m.out && m.outToken != "" {
				count[m.outToken]++
			}
		}
		for t, n := range count {
			if n >= w.quorum() {
				return t, nil
			}
		}
		return "", nil
	}
	if w.p.Watchdog {
		fields, err := w.obs().HKeys(ctx, w.key).Result()
		if err != nil {
			return "", fmt.Errorf("read %s: %w", w.key, err)
		}
		if len(fields) == 0 {
			return "", nil
		}
		return fields[0], nil
	}
	v, err := w.obs().Get(ctx, w.key).Result()
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
	if err != nil {
		return ""
	}
	return w.clientOf(tok)
}

// show publishes the lock as it is now, in the middle of a step.
func (w *world) show() { simulator.ShowMidStep(w.Publish, w.Snapshot) }

// Snapshot reads the key from the server (GET or the hash's field, and
// PTTL): the holder is whoever's token the server holds, not whom the
// classroom believes. Polling waiters are added from the classroom's own
// clients, marked as polling: the server keeps no record of them. A node
// names its token as its client, as the live reader does, and no session:
// Redis has none, and the views would word it as one.
func (w *world) Snapshot() (lockqueue.Snapshot, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	snap := lockqueue.Snapshot{
		Service: Name, Path: w.key, Recipe: lockqueue.Generic, Connection: lockqueue.Connected, WatchSource: "none",
		Nodes: []lockqueue.Node{}, Alerts: []lockqueue.Alert{}, UpdatedAt: time.Now(),
	}
	tok, err := w.keyToken(ctx)
	if err != nil {
		return snap, true, err
	}
	if w.redlock() {
		w.redlockSnapshot(ctx, &snap)
	} else if tok != "" {
		pttl, err := w.leftMs(ctx, 0)
		if err != nil {
			return snap, true, fmt.Errorf("PTTL %s: %w", w.key, err)
		}
		snap.Exists = true
		n := lockqueue.Node{Name: tok, Seq: -1, Mode: lockqueue.Exclusive, Recipe: lockqueue.Generic, Holding: true,
			Rare: &lockqueue.Rare{Client: tok, LeaseID: w.key}, Data: tok}
		if pttl > 0 {
			n.SetLeaseLeftMs(pttl)
			n.SetLeaseTTLMs(w.p.ExpiryMs)
		}
		for _, c := range w.clients {
			if c.token == tok {
				n.SetOrder(c.fence)
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
			WaitsFor: tok, WaitsOn: lockqueue.OnPoll, Rare: &lockqueue.Rare{Client: c.token, WaitsForSource: lockqueue.ByRule}})
	}
	snap.Alerts = append(snap.Alerts, w.zombieHolders(tok)...)
	return snap, true, nil
}

// zombieHolders are the clients that believe they hold while the key is
// not theirs (a paused holder whose key expired, a client whose key
// another deleted): the server cannot show them, so the snapshot says so
// in an alert naming their token, the kind etcd's reader raises for a
// lease run out. tok is the key's holder now.
func (w *world) zombieHolders(tok string) []lockqueue.Alert {
	lost := "its key is no longer its own (it expired, or another client deleted it)"
	if w.redlock() {
		lost = "its keys no longer make a majority of the masters"
	}
	var out []lockqueue.Alert
	for _, c := range w.clients {
		z := simulator.Zombie{Name: c.name, State: c.state, Node: c.token, Lapsed: c.lapsed, CutHeld: c.cutHeld}
		if a, ok := simulator.ZombieHolder(z, w.clientOf(tok), simulator.ZombieWords{
			Lost: "without releasing it: " + lost, Back: "running again", Gone: "the key no longer shows"}); ok {
			out = append(out, a)
		}
	}
	return out
}

// Narrate tells the step from its events, in the run's clock.
func (w *world) Narrate(a simulator.Action, events []simulator.Event) string {
	var parts []string
	for _, e := range events {
		switch e.Event {
		case simulator.EvLock:
			if a.Action == simulator.ActWake {
				parts = append(parts, simulator.Said(e.Client, e.Text))
				continue
			}
			parts = append(parts, e.Client+" holds the lock")
		case simulator.EvWait:
			switch {
			case a.Action == ActWait:
				parts = append(parts, e.Text)
			case w.defaultLocker(e.Client):
				parts = append(parts, simulator.Said(e.Client, e.Text))
			default:
				parts = append(parts, e.Client+" finds the key taken and polls")
			}
		case ActStop, ActStart, ActRestart, ActExpire, ActDelayedRestart, EvQueueCost:
			parts = append(parts, e.Text)
		case EvGiveUp, simulator.EvUnlock, simulator.EvWrite, simulator.EvFenced, simulator.EvCrash, simulator.EvPause, simulator.EvExpire, simulator.EvResume:
			parts = append(parts, simulator.Said(e.Client, e.Text))
		}
	}
	// An expire step's own text counts the waiters' tries.
	if polls := w.waiters(); polls > 0 && a.Action != simulator.ActExpire && !slices.ContainsFunc(events, func(e simulator.Event) bool { return e.Event == simulator.EvWait }) {
		parts = append(parts, fmt.Sprintf("%d waiter(s) retried and found the key taken", polls))
	}
	return simulator.Sentence(a, parts)
}

func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return strconv.Itoa(n) + suffix
}

// waiters counts the clients waiting for the key.
func (w *world) waiters() int {
	n := 0
	for _, c := range w.clients {
		if c.state == simulator.StateWaiting {
			n++
		}
	}
	return n
}

// retries is the waiters' failed tries so far, all clients together.
func (w *world) retries() int {
	n := 0
	for _, c := range w.clients {
		n += c.retries()
	}
	return n
}

// pollFor lets every polling waiter try rounds times, a retry interval
// apart.
func (w *world) pollFor(ctx context.Context, rounds int) error {
	for range rounds {
		if err := w.pollRound(ctx); err != nil {
			return err
		}
		if err := simulator.Sleep(ctx, w.p.retry()); err != nil {
			return err
		}
	}
	return nil
}

package etcdlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/proxy"
	"github.com/zklockviz/zklockviz/simulator"
)

// settleTimeout bounds the wait for the clients to come to rest after an
// action (beyond a lease running out, which has its own bound).
const settleTimeout = 20 * time.Second

// meter counts what one client really sent and received, at the gRPC
// layer under the etcd client: the recipe's requests, the watch events
// that woke it, and its lease's keep-alives.
type meter struct {
	commands, notifications, renewals atomic.Int64
	// watches is the watches etcd confirmed created. A Mutex waiter holds
	// one watch at a time and starts the next after the event that ends
	// it, so its latest watch is in place when watches == notifications+1.
	watches atomic.Int64
	// target is the key the waiter's latest look-up for the key just
	// before its own found ("" for none): the key it watches next.
	mu     sync.Mutex
	target string
	// gate, while set, holds the client's next request until it is
	// closed: a split scenario's waiter, woken by the expiry's delete,
	// handles that event in the wake step (see world.expireCut).
	gate chan struct{}
	// held: a request waits at the gate.
	held atomic.Bool
}

// hold makes the client's next requests wait until release.
func (m *meter) hold() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.gate == nil {
		m.gate = make(chan struct{})
	}
}

// release lets the requests held at the gate go.
func (m *meter) release() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.gate != nil {
		close(m.gate)
		m.gate = nil
	}
}

// wait holds a request at the gate, if one is set.
func (m *meter) wait(ctx context.Context) error {
	m.mu.Lock()
	gate := m.gate
	m.mu.Unlock()
	if gate == nil {
		return nil
	}
	m.held.Store(true)
	defer m.held.Store(false)
	select {
	case <-gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (m *meter) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if err := m.wait(ctx); err != nil {
		return err
	}
	m.commands.Add(1)
	err := invoker(ctx, method, req, reply, cc, opts...)
	// The Mutex's waitDeletes is the one Range with a create-revision
	// bound: what it finds is the key the waiter will watch.
	if rr, ok := req.(*pb.RangeRequest); ok && err == nil && rr.MaxCreateRevision != 0 {
		target := ""
		if kvs := reply.(*pb.RangeResponse).Kvs; len(kvs) > 0 {
			target = string(kvs[0].Key)
		}
		m.mu.Lock()
		m.target = target
		m.mu.Unlock()
	}
	return err
}

// watchingFor says whether the waiter's watch on key is in place on the
// server. Until then an action could go unseen by it, or its event for a
// key already deleted could still be on its way (etcd delivers to a watch
// that starts in the past from a catch-up loop, up to 100 ms later).
func (m *meter) watchingFor(key string) bool {
	m.mu.Lock()
	target := m.target
	m.mu.Unlock()
	return target == key && m.watches.Load() == m.notifications.Load()+1
}

func (m *meter) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	cs, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		return nil, err
	}
	return meteredStream{ClientStream: cs, m: m}, nil
}

type meteredStream struct {
	grpc.ClientStream
	m *meter
}

func (s meteredStream) SendMsg(msg any) error {
	if _, ok := msg.(*pb.LeaseKeepAliveRequest); ok {
		s.m.renewals.Add(1)
	}
	return s.ClientStream.SendMsg(msg)
}

func (s meteredStream) RecvMsg(msg any) error {
	err := s.ClientStream.RecvMsg(msg)
	if wr, ok := msg.(*pb.WatchResponse); ok && err == nil {
		if wr.Created {
			s.m.watches.Add(1)
		}
		if len(wr.Events) > 0 {
			s.m.notifications.Add(1)
		}
	}
	return err
}

// client is one etcd client: its own clientv3 connection through its own
// loopback proxy, its own session (lease) and concurrency.Mutex.
type client struct {
	name  string
	proxy *proxy.Proxy
	cli   *clientv3.Client
	sess  *concurrency.Session
	mu    *concurrency.Mutex
	key   string // its key, "<prefix>/<lease in hex>"
	rev   int64  // its key's create revision: its fencing token
	meter *meter

	// Lock runs in its own goroutine while the client waits.
	locking    bool
	lockDone   chan error
	lockedAt   time.Time // when Lock returned; set before lockDone is sent
	cancelLock context.CancelFunc

	state               string
	joined, since, line int
	// stats are its writes and the keys it put and deleted; the meter
	// counts the rest.
	stats  simulator.Stats
	closed bool

	// In a split scenario: cutHeld, cut off holding, its key still there
	// (a zombie on the lane) until its expire step; paused, by a pause
	// rather than a crash; lapsed, its lease ran out in the expire step;
	// keepLease ends the classroom's keep-alive of its lease between
	// steps.
	cutHeld, paused, lapsed bool
	keepLease               context.CancelFunc
}

// world is one etcd lock prefix on the classroom's server and the clients
// contending for it.
type world struct {
	simulator.Base

	prefix string
	addr   string
	obs    *clientv3.Client // the classroom's own: snapshots and cleanup
	ttl    int

	clients []*client
	byName  map[string]*client
	// queue is the keys as last read, by create revision.
	queue   []string
	expired *lockqueue.ExpiredHolder
	// freedAt is when this step's Unlock returned: the start of a
	// hand-off. (An expiry's delete is only seen by polling, too late to
	// time one.)
	freedAt time.Time
	// toWake: an expiry's hand-over (world_split.go) is still to come.
	toWake bool
}

func newWorld(ctx context.Context, endpoint string, spec simulator.WorldSpec, p params) (*world, error) {
	obs, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("etcd %s: %w", endpoint, err)
	}
	w := &world{
		prefix: spec.Path, addr: strings.TrimPrefix(endpoint, "http://"), obs: obs, ttl: p.TTL,
		byName: map[string]*client{}, Base: simulator.NewBase(spec),
	}
	if _, err := obs.Get(ctx, w.prefix+"/", clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil {
		obs.Close()
		return nil, fmt.Errorf("etcd %s: %w", endpoint, err)
	}
	return w, nil
}

func (w *world) Path() string { return w.prefix }

func (w *world) Ready() string {
	return fmt.Sprintf("Ready: no key under %s/. Each step performs one action, then waits until every client holds, watches the key before its own or is gone.", w.prefix)
}

func (w *world) Line(name string) int {
	return simulator.LineOf(w.byName, name, func(c *client) int { return c.line })
}

func (w *world) Stats() simulator.Stats {
	var s simulator.Stats
	for _, c := range w.clients {
		s.Add(c.stats)
		s.Commands += int(c.meter.commands.Load())
		s.Notifications += int(c.meter.notifications.Load())
		s.Renewals += int(c.meter.renewals.Load())
	}
	return s
}

func (w *world) Clients() []simulator.ClientInfo {
	out := make([]simulator.ClientInfo, 0, len(w.clients))
	for _, c := range w.clients {
		name := strings.TrimPrefix(c.key, w.prefix+"/")
		ci := simulator.ClientInfo{
			Name: c.name, Node: name, Path: c.key, Mode: lockqueue.Exclusive, State: c.state, Token: c.rev,
			Session: name, Line: c.line, Joined: c.joined, Since: c.since,
			JoinedMs: w.ClockAt(c.joined).Milliseconds(), SinceMs: w.ClockAt(c.since).Milliseconds(),
		}
		if c.state == simulator.StateWaiting {
			if i := slices.Index(w.queue, c.key); i > 0 {
				ci.WaitsFor = w.ownerOf(w.queue[i-1])
			}
		}
		out = append(out, ci)
	}
	return out
}

// ownerOf names the client whose key it is (the key itself if none).
func (w *world) ownerOf(key string) string {
	for _, c := range w.clients {
		if c.key == key {
			return c.name
		}
	}
	return key
}

// Close ends every client, revokes their leases and deletes the prefix.
func (w *world) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var errs []error
	for _, c := range w.clients {
		c.stopKeepingLease()
		if c.sess != nil {
			if _, err := w.obs.Revoke(ctx, c.sess.Lease()); err != nil && !strings.Contains(err.Error(), "requested lease not found") {
				errs = append(errs, fmt.Errorf("revoke %s's lease: %w", c.name, err))
			}
		}
		c.close()
	}
	if _, err := w.obs.Delete(ctx, w.prefix+"/", clientv3.WithPrefix()); err != nil {
		errs = append(errs, fmt.Errorf("delete %s/: %w", w.prefix, err))
	}
	errs = append(errs, w.obs.Close())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("clean up etcd lock %s: %w", w.prefix, err)
	}
	return nil
}

// close ends c's Lock, client and proxy without revoking anything: the
// lease is the server's business (or the world's Close).
func (c *client) close() {
	if c.closed {
		return
	}
	c.closed = true
	if c.cancelLock != nil {
		c.cancelLock()
	}
	if c.sess != nil {
		c.sess.Orphan()
	}
	c.cli.Close()
	c.proxy.Close()
	if c.locking {
		<-c.lockDone
		c.locking = false
	}
}

// Do performs one action, then waits until every client is at rest.
func (w *world) Do(ctx context.Context, step int, a simulator.Action) ([]simulator.Event, error) {
	w.Begin(step)
	w.freedAt = time.Time{}
	if err := w.act(ctx, a); err != nil {
		return w.Events, fmt.Errorf("step %d: %s %s: %w", step, a.Action, a.Client, err)
	}
	if err := w.settle(ctx); err != nil {
		return w.Events, fmt.Errorf("step %d: %w", step, err)
	}
	if c := w.byName[a.Client]; a.Action == simulator.ActAdd && c != nil && c.locking {
		ahead := ""
		if i := slices.Index(w.queue, c.key); i > 0 {
			ahead = w.ownerOf(w.queue[i-1])
		}
		w.Emit(simulator.Event{Client: c.name, Event: simulator.EvWait, Node: w.nodeName(c), On: ahead,
			Text: fmt.Sprintf("puts its key %s; it is not the first by create revision, so it watches %s's key, the one just before its own (one watcher per key: no herd)", w.nodeName(c), ahead)})
	}
	w.End()
	return w.Events, nil
}

func (w *world) act(ctx context.Context, a simulator.Action) error {
	if a.Action == simulator.ActAdd {
		return w.add(ctx, a.Client)
	}
	c := w.byName[a.Client]
	if c == nil {
		return fmt.Errorf("unknown client %s", a.Client)
	}
	switch a.Action {
	case simulator.ActRelease:
		return w.release(ctx, c)
	case ActLeave:
		return w.leave(ctx, c)
	case simulator.ActCrash:
		return w.cut(ctx, c, false)
	case simulator.ActPause:
		return w.cut(ctx, c, true)
	case simulator.ActWrite:
		w.write(c)
		return nil
	case ActCheckedWrite:
		return w.checkedWrite(ctx, c)
	case simulator.ActExpire:
		return w.expireCut(ctx, c)
	case simulator.ActWake:
		return w.wake(ctx, c)
	case simulator.ActResume:
		return w.resumeCut(c)
	}
	return fmt.Errorf("unknown action %q", a.Action)
}

// add connects a client, opens its session and starts its Lock.
func (w *world) add(ctx context.Context, name string) error {
	px, err := proxy.New(w.addr)
	if err != nil {
		return err
	}
	m := &meter{}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: []string{"http://" + px.Addr()}, DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		DialOptions: []grpc.DialOption{
			grpc.WithChainUnaryInterceptor(m.unary), grpc.WithChainStreamInterceptor(m.stream),
			// After a pause the client redials at once, as a woken process
			// would, instead of after gRPC's growing backoff.
			grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.2, MaxDelay: 200 * time.Millisecond}, MinConnectTimeout: time.Second}),
		},
	})
	if err != nil {
		px.Close()
		return fmt.Errorf("%s: connect: %w", name, err)
	}
	c := &client{name: name, proxy: px, cli: cli, meter: m, state: simulator.StateWaiting, joined: w.Step, since: w.Step, line: 1}
	w.clients = append(w.clients, c)
	w.byName[name] = c
	sess, err := concurrency.NewSession(cli, concurrency.WithTTL(w.ttl), concurrency.WithContext(context.Background()))
	if err != nil {
		return fmt.Errorf("%s: new session: %w", name, err)
	}
	c.sess, c.stats.Create = sess, 1 // the Mutex's Txn puts its key once
	c.mu = concurrency.NewMutex(sess, w.prefix)
	c.key = fmt.Sprintf("%s/%x", w.prefix, sess.Lease())
	lctx, lcancel := context.WithCancel(context.Background())
	c.cancelLock, c.lockDone, c.locking, c.line = lcancel, make(chan error, 1), true, lineTxn
	go func() {
		err := c.mu.Lock(lctx)
		c.lockedAt = time.Now()
		c.lockDone <- err
	}()
	return nil
}

// settle waits until every client is at rest: each client in Lock has
// either returned from it or has its key in the queue behind another and
// its watch on the key ahead confirmed by etcd. It reads the queue from
// the server, as the waiters' own rule does.
func (w *world) settle(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	for {
		if err := w.collect(); err != nil {
			return err
		}
		keys, err := w.readQueue(ctx)
		if err != nil {
			return err
		}
		rest := true
		for _, c := range w.clients {
			if !c.locking {
				continue
			}
			if c.meter.held.Load() {
				// Woken by a split scenario's expiry: it handles the
				// event in the wake step.
				continue
			}
			i := slices.Index(keys, c.key)
			if i <= 0 || !c.meter.watchingFor(keys[i-1]) {
				// Not put yet, first (Lock is about to return), or not
				// yet watching the key now just before its own.
				rest = false
				continue
			}
			c.line = lineWatch
		}
		w.queue = keys
		if rest {
			return nil
		}
		if !sleep(ctx, 10*time.Millisecond) {
			return fmt.Errorf("clients did not come to rest within %v: %w", settleTimeout, context.Cause(ctx))
		}
	}
}

// collect takes the results of the Locks that returned.
func (w *world) collect() error {
	for _, c := range w.clients {
		if !c.locking {
			continue
		}
		var err error
		select {
		case err = <-c.lockDone:
		default:
			continue
		}
		c.locking = false
		c.cancelLock()
		if err != nil {
			c.state, c.since = simulator.StateReleased, w.Step
			w.Emit(simulator.Event{Client: c.name, Event: simulator.EvUnlock, Node: w.nodeName(c),
				Text: fmt.Sprintf("Lock returned %v: it does not hold the lock", err)})
			continue
		}
		rev, err := w.keyRev(context.Background(), c)
		if err != nil {
			return err
		}
		if rev == 0 {
			rev = c.mu.Header().GetRevision()
		}
		c.rev, c.state, c.since, c.line = rev, simulator.StateHolding, w.Step, lineWork
		e := simulator.Event{Client: c.name, Event: simulator.EvLock, Node: w.nodeName(c), Token: rev,
			Text: fmt.Sprintf("Lock returned: its key %s is the first by create revision (%d), so it holds the lock; the create revision is its fencing token", w.nodeName(c), rev)}
		if c.joined != w.Step {
			e.Text = fmt.Sprintf("the key it watched was deleted; its key %s is now the first by create revision (%d): it holds the lock", w.nodeName(c), rev)
			if !w.freedAt.IsZero() {
				e.AfterMs = max(c.lockedAt.Sub(w.freedAt), 0).Milliseconds()
				e.Text += fmt.Sprintf(" (hand-off: Lock returned %.1f ms after the delete)", float64(max(c.lockedAt.Sub(w.freedAt), 0).Microseconds())/1000)
			}
		}
		w.Emit(e)
	}
	return nil
}

func (w *world) nodeName(c *client) string { return strings.TrimPrefix(c.key, w.prefix+"/") }

// readQueue is the lock's keys by create revision, as the server has them.
func (w *world) readQueue(ctx context.Context) ([]string, error) {
	resp, err := w.obs.Get(ctx, w.prefix+"/", clientv3.WithPrefix(), clientv3.WithKeysOnly(),
		clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	if err != nil {
		return nil, fmt.Errorf("read %s/: %w", w.prefix, err)
	}
	keys := make([]string, len(resp.Kvs))
	for i, kv := range resp.Kvs {
		keys[i] = string(kv.Key)
	}
	return keys, nil
}

// release is Mutex.Unlock (the delete of its key), then the session's
// Close (the revoke of its lease).
func (w *world) release(ctx context.Context, c *client) error {
	if c.state != simulator.StateHolding && c.state != simulator.StateStale {
		return fmt.Errorf("%s holds nothing (%s)", c.name, c.state)
	}
	had, err := w.keyRev(ctx, c)
	if err != nil {
		return err
	}
	behind := w.behind(c)
	c.line = lineUnlock
	if err := c.mu.Unlock(ctx); err != nil {
		return fmt.Errorf("%s: Unlock: %w", c.name, err)
	}
	w.freedAt = time.Now()
	if err := c.sess.Close(); err != nil {
		w.Log.Debug("etcd classroom: close session", "client", c.name, "err", err)
	}
	c.state, c.since = simulator.StateReleased, w.Step
	text := "Unlock: deleted its key; no one was waiting"
	if behind != "" {
		text = fmt.Sprintf("Unlock: deleted its key; %s, the one waiter watching it, is woken", behind)
	}
	if had != 0 {
		c.stats.Delete++
	} else {
		text = "Unlock: its key was already gone (Unlock says nothing when the lock was lost)"
	}
	w.Emit(simulator.Event{Client: c.name, Event: simulator.EvUnlock, Node: w.nodeName(c), Text: text})
	return nil
}

// behind names the client whose key is just after c's, the one watching
// it ("" for none).
func (w *world) behind(c *client) string {
	if i := slices.Index(w.queue, c.key); i >= 0 && i+1 < len(w.queue) {
		return w.ownerOf(w.queue[i+1])
	}
	return ""
}

// keyRev is the create revision of c's key on the server, 0 when gone.
func (w *world) keyRev(ctx context.Context, c *client) (int64, error) {
	resp, err := w.obs.Get(ctx, c.key)
	if err != nil {
		return 0, fmt.Errorf("read %s's key: %w", c.name, err)
	}
	if len(resp.Kvs) == 0 {
		return 0, nil
	}
	return resp.Kvs[0].CreateRevision, nil
}

// leave cancels a waiter's Lock: the Mutex deletes its key itself, and
// the waiter behind it, woken, watches the next key ahead instead.
func (w *world) leave(ctx context.Context, c *client) error {
	if !c.locking {
		return fmt.Errorf("%s is not waiting (%s)", c.name, c.state)
	}
	behind := w.behind(c)
	c.cancelLock()
	var err error
	select {
	case err = <-c.lockDone:
	case <-ctx.Done():
		return fmt.Errorf("%s: Lock did not return after its cancel: %w", c.name, context.Cause(ctx))
	}
	c.locking = false
	if !errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s: Lock after cancel returned %v, want context.Canceled", c.name, err)
	}
	if err := c.sess.Close(); err != nil {
		w.Log.Debug("etcd classroom: close session", "client", c.name, "err", err)
	}
	c.stats.Delete++
	c.state, c.since, c.line = simulator.StateReleased, w.Step, lineUnlock
	text := "gives up waiting (its Lock's context is cancelled): the Mutex deletes its key from the middle of the queue"
	if behind != "" {
		text += fmt.Sprintf("; %s, which watched that key, is woken and watches the key ahead of it instead", behind)
	}
	w.Emit(simulator.Event{Client: c.name, Event: simulator.EvUnlock, Node: w.nodeName(c), Text: text})
	return nil
}

// cut takes a holder off the network: a crash for good, a pause until its
// lease has run out on the server and its key is deleted.
func (w *world) cut(ctx context.Context, c *client, pause bool) error {
	if c.state != simulator.StateHolding {
		return fmt.Errorf("%s is not holding (%s): only a holder's pause or crash is staged", c.name, c.state)
	}
	c.proxy.Cut()
	cutAt := time.Now()
	if w.Split {
		return w.cutHeld(ctx, c, pause)
	}
	w.announceCut(c, pause, "")
	if err := w.awaitKeyGone(ctx, c, cutAt, "its cut"); err != nil {
		return err
	}
	after := time.Since(cutAt)
	// On the run's clock an expiry takes the lease, whatever this machine took.
	w.Clock += time.Duration(w.ttl) * time.Second
	w.expired = &lockqueue.ExpiredHolder{Name: w.nodeName(c), LeaseID: lockqueue.LeaseHex(int64(c.sess.Lease()))}
	w.Emit(simulator.Event{Client: c.name, Event: simulator.EvExpire, Node: w.nodeName(c), AfterMs: after.Milliseconds(),
		Text: fmt.Sprintf("its %d s lease ran out unrenewed %.1fs after it went silent: etcd revoked the lease and deleted its key, the next waiter's watch fires", w.ttl, after.Seconds())})
	if err := w.settle(ctx); err != nil {
		return err
	}
	if !pause {
		return nil
	}
	done := c.restore()
	c.since = w.Step
	w.Emit(simulator.Event{Client: c.name, Event: simulator.EvResume, Node: w.nodeName(c), AfterMs: time.Since(cutAt).Milliseconds(),
		Text: fmt.Sprintf("resumes after %.1fs: its key is gone, but nothing interrupts it: it still believes it holds the lock unless it checks (session.Done() is %s)", time.Since(cutAt).Seconds(), done)})
	return nil
}

// restore gives a paused client, whose key is gone, its connection back:
// it runs again believing it holds (stale). It says whether its session
// has noticed the loss: session.Done() "closed" or "not yet closed".
func (c *client) restore() string {
	c.proxy.Restore()
	c.state, c.line, c.cutHeld = simulator.StateStale, lineWork, false
	select {
	case <-c.sess.Done():
		return "closed"
	default:
		return "not yet closed"
	}
}

// awaitKeyGone waits until etcd has deleted c's key, its lease unrenewed
// since since (after what, for the error), showing the lock meanwhile.
func (w *world) awaitKeyGone(ctx context.Context, c *client, since time.Time, after string) error {
	bound := time.Duration(w.ttl)*time.Second + 15*time.Second
	wctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	for {
		rev, err := w.keyRev(wctx, c)
		if err != nil {
			return err
		}
		if rev == 0 {
			return nil
		}
		w.show()
		if !sleep(wctx, 100*time.Millisecond) {
			return fmt.Errorf("%s's key was not deleted %.1fs after %s: %w", c.name, time.Since(since).Seconds(), after, context.Cause(wctx))
		}
	}
}

// announceCut records c, just cut off, as paused or crashed; more is
// what the step adds of its key.
func (w *world) announceCut(c *client, pause bool, more string) {
	if pause {
		c.state = simulator.StatePaused
		w.Emit(simulator.Event{Client: c.name, Event: simulator.EvPause, Node: w.nodeName(c),
			Text: "stops (a long GC pause): no keep-alive reaches etcd, and it still believes it holds the lock" + more})
	} else {
		c.state = simulator.StateCrashed
		w.Emit(simulator.Event{Client: c.name, Event: simulator.EvCrash, Node: w.nodeName(c),
			Text: "crashes: its connection is gone for good, and with it the keep-alives of its lease" + more})
	}
	c.since = w.Step
	w.show()
}

// write is a client writing without any check, with its create revision
// as the token.
func (w *world) write(c *client) {
	c.line = lineWork
	w.Emit(w.Resource.Tell(&c.stats, c.name, w.nodeName(c), c.rev, fmt.Sprintf(" with token %d (its key's create revision)", c.rev)))
}

// checkedWrite checks session.Done(), then its key in a Txn on the
// Mutex's IsOwner comparison, and writes only if both say it holds.
func (w *world) checkedWrite(ctx context.Context, c *client) error {
	c.line = lineChecked
	stop := func(why string) {
		c.state, c.since = simulator.StateReleased, w.Step
		w.Emit(simulator.Event{Client: c.name, Event: simulator.EvUnlock, Node: w.nodeName(c),
			Text: why + ": it knows it lost the lock, so it stops without writing. The check caught a loss that came before it; one that comes between a passing check and the write it cannot see: the gap is still a race"})
	}
	select {
	case <-c.sess.Done():
		stop("checks session.Done() before writing: closed, its lease is gone")
		return nil
	default:
	}
	tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := c.cli.Txn(tctx).If(c.mu.IsOwner()).Commit()
	if err != nil {
		return fmt.Errorf("%s: IsOwner Txn: %w", c.name, err)
	}
	if !resp.Succeeded {
		stop(fmt.Sprintf("checks its key in a Txn (CreateRevision == %d): the comparison fails, the key is gone", c.rev))
		return nil
	}
	w.write(c)
	// The check narrows the race, it does not close it: say so beside the
	// write it let through.
	w.Events[len(w.Events)-1].Text += checkRace
	return nil
}

// checkRace is what a checked write cannot promise.
const checkRace = "; its check passed first, but that is no fix: a pause between the check and the write can let the lease run out and another client take the lock, and the write then lands stale. Only a resource that checks the token (or a write made in the same Txn on etcd itself) closes that gap"

// show publishes the lock as it is now, in the middle of a step.
func (w *world) show() { simulator.ShowMidStep(w.Publish, w.Snapshot) }

// Snapshot reads the prefix's keys by create revision and their leases'
// time left from the server and builds the queue by lockqueue's etcd
// rules, the live reader's own.
func (w *world) Snapshot() (lockqueue.Snapshot, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := w.obs.Get(ctx, w.prefix+"/", clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	if err != nil {
		return lockqueue.Snapshot{Service: Name, Path: w.prefix}, true, fmt.Errorf("read %s/: %w", w.prefix, err)
	}
	keys := make([]lockqueue.EtcdKey, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		k := lockqueue.EtcdKey{Name: strings.TrimPrefix(string(kv.Key), w.prefix+"/"), CreateRevision: kv.CreateRevision, Value: kv.Value, Lease: kv.Lease}
		if kv.Lease != 0 {
			l, err := w.obs.TimeToLive(ctx, clientv3.LeaseID(kv.Lease))
			if err != nil {
				return lockqueue.Snapshot{Service: Name, Path: w.prefix}, true, fmt.Errorf("lease of %s: %w", kv.Key, err)
			}
			k.LeaseTTL, k.LeaseLeft, k.LeaseGone = time.Duration(l.GrantedTTL)*time.Second, time.Duration(l.TTL)*time.Second, l.TTL < 0
		}
		keys = append(keys, k)
	}
	s := lockqueue.BuildEtcd(w.prefix, keys)
	s.Exists = len(keys) > 0
	w.markCut(&s)
	if w.expired != nil && !w.expired.Apply(&s) {
		w.expired = nil
	}
	s.Connection, s.UpdatedAt = lockqueue.Connected, time.Now()
	return s, true, nil
}

// Narrate tells the step from its events.
func (w *world) Narrate(a simulator.Action, events []simulator.Event) string {
	var parts []string
	for _, e := range events {
		part := simulator.Said(e.Client, e.Text)
		if e.Event == simulator.EvLock {
			part = fmt.Sprintf("%s holds the lock (token %d)", e.Client, e.Token)
		}
		parts = append(parts, part)
	}
	return simulator.Sentence(a, parts)
}

package zksim

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/simulator"
	"github.com/zklockviz/zklockviz/third_party/zk"
)

// world is one lock path on a real ZooKeeper and the clients queuing on it.
// A run has one world at a time; changing the past replays the run's steps
// on a fresh world. Steps run one at a time (Run.opMu).
type world struct {
	path     string // as users see it (chroot-relative)
	zpath    string // as the server sees it
	servers  []string
	obs      *zk.Conn // the manager's own session: creates the lock node, reads snapshots, sees expiry
	lock     simulator.LockKind
	leases   int
	strategy simulator.Strategy
	recipe   recipe
	opts     lockqueue.Options

	sessionTimeout time.Duration
	// noSnapshots skips the per-step snapshot (benchmarks of big queues).
	noSnapshots bool
	// expired are the paths an expire step deleted, whose watchers the
	// next wake step lets handle their notifications.
	expired []string
	// beforeExists, in tests, runs just before a client's exists() on the
	// node it waits for (to delete that node first: the race the recipe's
	// "if not exists: goto 2" line is for).
	beforeExists func(client, target string)

	clients []*client
	byName  map[string]*client
	cache   map[string]lockqueue.Child

	// A scene of two locks (scene.go): second is the other lock's world,
	// whose host is this one (its steps, clock and events are the host's);
	// reversed are the clients whose first lock is the second.
	second, host *world
	reversed     []string

	// Base: the step being done and the run's clock (a step waiting for a
	// session to expire moves it by the session timeout, whatever the real
	// ZooKeeper took). A scene's second lock records nothing of its own:
	// its host does (rec).
	simulator.Base
}

// worldConfig is a world's lock as the server sees it (ZPath) and the
// backend's servers, observer and session timeout; Spec has the rest.
type worldConfig struct {
	Spec           simulator.WorldSpec
	ZPath          string
	Servers        []string
	Observer       *zk.Conn
	SessionTimeout time.Duration
}

// newWorld creates the lock node.
func newWorld(cfg worldConfig) (*world, error) {
	sc := cfg.Spec.Scenario
	st := cfg.Spec.Strategy
	if sc.Lock == simulator.LeaseLock {
		st = simulator.Children
	}
	w := &world{
		path: cfg.Spec.Path, zpath: cfg.ZPath, servers: cfg.Servers, obs: cfg.Observer,
		lock: sc.Lock, leases: sc.Leases, strategy: st, recipe: recipeFor(sc.Lock, cfg.Spec.Strategy),
		opts: buildOptions(sc.Lock, sc.Leases, st), sessionTimeout: cfg.SessionTimeout, Base: simulator.NewBase(cfg.Spec),
		byName: map[string]*client{}, cache: map[string]lockqueue.Child{},
	}
	if _, err := w.obs.Create(w.zpath, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		return nil, fmt.Errorf("create lock node %s: %w", w.path, err)
	}
	return w, nil
}

// Close ends every session and deletes the lock node and whatever the
// clients left under it (the ephemeral nodes of cut-off sessions that have
// not expired yet).
func (w *world) Close() error {
	var wg sync.WaitGroup
	for _, c := range w.clients {
		wg.Go(c.close)
	}
	wg.Wait()
	var errs []error
	names, _, err := w.obs.Children(w.zpath)
	if unreachable(err) {
		return fmt.Errorf("%w (the run's lock %s among it): %v", ErrSandboxLeft, w.path, err)
	}
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("clean up %s: %w", w.path, err)
	}
	for _, n := range names {
		if err := w.obs.Delete(w.zpath+"/"+n, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			errs = append(errs, fmt.Errorf("clean up %s/%s: %w", w.path, n, err))
		}
	}
	if err := w.obs.Delete(w.zpath, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		errs = append(errs, fmt.Errorf("clean up %s: %w", w.path, err))
	}
	if w.second != nil {
		errs = append(errs, w.second.Close())
	}
	return errors.Join(errs...)
}

func (w *world) emit(e simulator.Event) int { return w.rec().Emit(e) }

// rec is the world that records the step: the host of a scene's second
// lock, else w.
func (w *world) rec() *world {
	if w.host != nil {
		return w.host
	}
	return w
}

// ownerOf names the client whose node a name or full path is.
func (w *world) ownerOf(node string) string {
	node = path.Base(node)
	for _, c := range w.clients {
		if c.lastNode == node {
			return c.name
		}
	}
	return node
}

// Do performs one action and waits until every client is quiescent: it
// holds, it waits with its watch armed, or it is gone.
func (w *world) Do(ctx context.Context, step int, a simulator.Action) ([]simulator.Event, error) {
	w.Begin(step)
	if w.second != nil {
		w.second.Step = step
	}
	if err := w.act(ctx, a); err != nil {
		return w.Events, fmt.Errorf("step %d: %s %s: %w", step, a.Action, a.Client, err)
	}
	for _, o := range []*world{w, w.second} {
		if o == nil {
			continue
		}
		if err := o.quiescent(); err != nil {
			return w.Events, fmt.Errorf("step %d: %w", step, err)
		}
	}
	w.End()
	return w.Events, nil
}

func (w *world) act(ctx context.Context, a simulator.Action) error {
	if simulator.IsAdd(a.Action) {
		if w.find(a.Client) != nil {
			return conflictf("%s is already in this run", a.Client)
		}
		h, n := w.home(a), len(w.Events)
		err := h.add(ctx, a)
		if h != w && n < len(w.Events) {
			w.Events[n].Text += " (on " + h.path + ")"
		}
		return err
	}
	c := w.find(a.Client)
	if c == nil {
		return conflictf("unknown client %s", a.Client)
	}
	// A client acts on the lock it joined (c.w): a scene's reversed client
	// on the second.
	switch a.Action {
	case simulator.ActRelease:
		return c.w.release(ctx, c)
	case simulator.ActCrash:
		return c.w.crash(ctx, c, false)
	case simulator.ActPause:
		return c.w.crash(ctx, c, true)
	case simulator.ActWrite:
		return c.w.write(c)
	case ActLockSecond:
		return w.lockSecond(ctx, c)
	case simulator.ActExpire:
		return w.expire(ctx, c)
	case simulator.ActWake:
		return w.wake(ctx, c)
	case simulator.ActResume:
		return w.resumeCut(ctx, c)
	}
	return invalidf("unknown action %q", a.Action)
}

func (w *world) add(ctx context.Context, a simulator.Action) error {
	if w.byName[a.Client] != nil {
		return conflictf("%s is already in this run", a.Client)
	}
	mode, err := simulator.ModeOf(w.lock, a.Action)
	if err != nil {
		return invalidf("%v", err)
	}
	c := &client{name: a.Client, mode: mode, index: len(w.clients), w: w, joined: w.Step, since: w.Step}
	if err := c.connect(ctx, w.servers[c.index%len(w.servers)]); err != nil {
		return unavailablef("%v", err)
	}
	w.clients = append(w.clients, c)
	w.byName[c.name] = c
	// The node is created by this client's own session; any watch it fires
	// belongs to sessions that were there before.
	acquired, err := c.join()
	if err != nil {
		return err
	}
	i := w.emit(w.joinEvent(c, acquired))
	return w.settle(ctx, i, []string{c.nodePath()})
}

func (w *world) joinEvent(c *client, acquired bool) simulator.Event {
	what := map[lockqueue.Mode]string{lockqueue.Read: "a reader", lockqueue.Write: "a writer", lockqueue.Exclusive: "a client", lockqueue.Lease: "an instance"}[c.mode]
	if acquired {
		held := "holds the lock"
		if c.mode == lockqueue.Lease {
			held = "holds a lease"
		}
		return simulator.Event{Client: c.name, Event: simulator.EvLock, Node: c.node,
			Text: fmt.Sprintf("%s: created %s and %s", what, c.node, held)}
	}
	return w.waitEvent(c, fmt.Sprintf("%s: created %s; ", what, c.node))
}

// waitEvent describes a client that waits: for whom, and on which watch.
func (w *world) waitEvent(c *client, lead string) simulator.Event {
	e := simulator.Event{Client: c.name, Event: simulator.EvWait, Node: c.node}
	switch {
	case c.waitsFor == "":
		e.Watch = "children"
		e.Text = lead + "stands by (children watch on the lock)"
	case w.strategy == simulator.Predecessor:
		e.On, e.Watch = w.ownerOf(c.waitsFor), "exists"
		e.Text = lead + fmt.Sprintf("waits for %s (exists watch on %s)", e.On, c.waitsFor)
	default:
		e.On, e.Watch = w.ownerOf(c.waitsFor), "children"
		e.Text = lead + fmt.Sprintf("waits for %s (children watch on the lock)", e.On)
	}
	return e
}

func (w *world) release(ctx context.Context, c *client) error {
	if c.state != simulator.StateHolding && c.state != simulator.StateStale {
		return conflictf("%s holds nothing (%s)", c.name, c.state)
	}
	node := c.node
	stale := c.state == simulator.StateStale
	gone, self, err := c.release()
	if err != nil {
		return err
	}
	c.state, c.since = simulator.StateReleased, w.Step
	text := fmt.Sprintf("deleted %s", node)
	if gone {
		text = fmt.Sprintf("its node %s was already gone: its session had expired", c.lastNode)
		if !stale {
			text = "it had no node"
		}
	}
	if len(self) > 0 {
		// The text timeline folds notify rows into their cause: this
		// wake-up is counted too, so the row says so.
		text += "; its own children watch fired (left from its last getChildren)"
	}
	i := w.emit(simulator.Event{Client: c.name, Event: simulator.EvUnlock, Node: c.lastNode, Text: text})
	w.emitSelf(c, self)
	if err := w.releaseMember(ctx, c); err != nil {
		return err
	}
	c.close()
	if gone {
		return nil
	}
	return w.settle(ctx, i, []string{w.zpath + "/" + node})
}

// emitSelf records the wake-ups a client's own delete caused (self).
func (w *world) emitSelf(c *client, self []zk.Event) {
	for _, ev := range self {
		w.emit(simulator.Event{Client: c.name, Event: simulator.EvNotify, On: c.name, Node: path.Base(ev.Path), Watch: "children", Wasted: true,
			Text: "woken by its own delete (the children watch left from its last getChildren)"})
	}
}

// crash cuts a client off; ZooKeeper deletes its node when the session
// expires. A pause then restores the connection: the client finds a new
// session and, if it held, still believes it holds (seed 004).
func (w *world) crash(ctx context.Context, c *client, pause bool) error {
	if c.node == "" || !c.live() || c.state == simulator.StateStale {
		return conflictf("%s has no session to lose (%s)", c.name, c.state)
	}
	held := c.state == simulator.StateHolding
	node := c.node
	w.silence(c, pause)
	if w.Split {
		// The expiry is the next step's: this one ends with the node
		// still there, its session silent (a zombie on the lane).
		c.cutNode, c.cutHeld = node, held
		return nil
	}

	if err := w.awaitExpiry(ctx, c, node); err != nil {
		return err
	}
	after := time.Since(c.cutAt)
	// On the run's clock an expiry takes the session timeout, what the
	// server is configured to wait, not what this machine happened to take.
	w.rec().Clock += w.sessionTimeout
	if !pause || !held {
		c.node = ""
	}
	i := w.emit(simulator.Event{Client: c.name, Event: simulator.EvExpire, Node: node, AfterMs: after.Milliseconds(),
		Text: fmt.Sprintf("session 0x%x expired %.1fs after it went silent; ZooKeeper deleted %s", c.session, after.Seconds(), node)})
	if err := w.settle(ctx, i, []string{w.zpath + "/" + node}); err != nil {
		return err
	}
	// The session took the client's node on a scene's other lock too.
	if err := w.memberGone(ctx, c, i, c.state); err != nil {
		return err
	}
	if !pause {
		// Stop its reconnect attempts; the session is gone anyway.
		go c.close()
		return nil
	}
	return w.resume(ctx, c, node, held)
}

// expire is a split scenario's expiry step: the cut client's session runs
// out on the server, which deletes its node and sends its watchers their
// notification; they handle it in the wake step. A paused holder still
// believes it holds: it is stopped, and nothing has told it.
func (w *world) expire(ctx context.Context, c *client) error {
	if c.cutNode == "" || c.lapsed {
		return conflictf("%s has no cut-off session to expire (%s)", c.name, c.state)
	}
	node := c.cutNode
	if err := w.awaitExpiry(ctx, c, node); err != nil {
		return err
	}
	after := time.Since(c.cutAt)
	w.Clock += w.sessionTimeout
	c.lapsed, c.since = true, w.Step
	if c.state == simulator.StateCrashed || !c.cutHeld {
		c.node = ""
	}
	p := w.zpath + "/" + node
	var notified []string
	for _, o := range w.clients {
		if o.live() && o.watching([]string{p}) {
			notified = append(notified, o.name)
		}
	}
	w.expired = append(w.expired, p)
	// The run's clock, not this machine's: between the cut and this step
	// the lecturer may have waited any time.
	text := fmt.Sprintf("session 0x%x expired: the server heard nothing from it for its session timeout (%.1fs); ZooKeeper deleted %s", c.session, w.sessionTimeout.Seconds(), node)
	switch {
	case len(notified) > 0:
		text += fmt.Sprintf(" and sent %s a watch notification, handled in the next step (the next node in line is now first by the recipe's rule, but its client has not read that yet)", simulator.ListAnd(notified))
	default:
		text += "; nobody watched it"
	}
	if c.state == simulator.StatePaused && c.cutHeld {
		text += fmt.Sprintf("; %s, still stopped, believes it holds the lock", c.name)
	}
	// Notified stays empty: the notifications are delivered, and counted,
	// in the wake step.
	w.emit(simulator.Event{Client: c.name, Event: simulator.EvExpire, Node: node, AfterMs: after.Milliseconds(), Text: text})
	if c.state == simulator.StateCrashed {
		go c.close() // stop its reconnect attempts; the session is gone anyway
	}
	return nil
}

// wake is a split scenario's hand-over step: the waiters an expiry
// notified handle their notifications (c is the one expected to lock, as
// the scenario names it); the next in line re-reads the children and
// holds.
func (w *world) wake(ctx context.Context, c *client) error {
	if len(w.expired) == 0 {
		return conflictf("no expiry has notified anyone for %s to handle", c.name)
	}
	changed := w.expired
	w.expired = nil
	i := w.emit(simulator.Event{Client: c.name, Event: simulator.EvWake,
		Text: "the waiters the expiry notified handle their notification"})
	return w.settle(ctx, i, changed)
}

// resumeCut is a split scenario's resume step: the paused client, whose
// session expired in an earlier step, gets its connection back. Its
// since stays the expiry's step: that is when it lost the lock.
func (w *world) resumeCut(ctx context.Context, c *client) error {
	if c.state != simulator.StatePaused || !c.lapsed {
		return conflictf("%s is not paused past its session's expiry (%s)", c.name, c.state)
	}
	since := c.since
	if err := w.resume(ctx, c, c.cutNode, c.cutHeld); err != nil {
		return err
	}
	c.since, c.cutNode = since, ""
	return nil
}

// silence cuts c off the server, as a crash (for good) or as a long GC
// pause (until its session has expired).
func (w *world) silence(c *client, pause bool) {
	c.proxy.Cut()
	c.cutAt = time.Now()
	node := c.node
	if pause {
		c.state = simulator.StatePaused
		w.emit(simulator.Event{Client: c.name, Event: simulator.EvPause, Node: node,
			Text: fmt.Sprintf("stops (a long GC pause): no heartbeats; %s stays until the session expires", node)})
	} else {
		c.state = simulator.StateCrashed
		w.emit(simulator.Event{Client: c.name, Event: simulator.EvCrash, Node: node,
			Text: fmt.Sprintf("crashes (its connection is cut for good); %s stays until the session expires", node)})
	}
	c.since = w.Step
	w.show()
}

// resume gives a paused client its connection back once its session (and
// node) are gone: a holder comes back believing it still holds, a waiter
// comes back out of the queue.
func (w *world) resume(ctx context.Context, c *client, node string, held bool) error {
	old := c.session
	c.proxy.Restore()
	err := c.sess.wait(ctx, func(st zk.State) bool {
		return st == zk.StateHasSession && c.conn.SessionID() != old
	})
	if err != nil {
		return fmt.Errorf("%s: no new session after the pause: %w", c.name, err)
	}
	c.session = c.conn.SessionID()
	c.fired() // watches invalidated with the old session: no notifications
	c.since = w.Step
	// How long it was away: what this machine took, unless the pause
	// spans steps, whose real length is the lecturer's pace, not the
	// story's.
	after := fmt.Sprintf("resumes after %.1fs", time.Since(c.cutAt).Seconds())
	if w.Split {
		after = "resumes after a pause longer than its session timeout"
	}
	if held {
		c.state = simulator.StateStale
		c.line = w.recipe.write
		w.emit(simulator.Event{Client: c.name, Event: simulator.EvResume, Node: node, AfterMs: time.Since(c.cutAt).Milliseconds(),
			Text: fmt.Sprintf("%s: its session had expired (the new one is 0x%x), but it still believes it holds the lock", after, c.session)})
	} else {
		c.state = simulator.StateExpired
		c.waitsFor = ""
		go c.close()
		w.emit(simulator.Event{Client: c.name, Event: simulator.EvResume, Node: node, AfterMs: time.Since(c.cutAt).Milliseconds(),
			Text: after + ": its session expired while it waited, its watch went with it; it is out of the queue"})
	}
	return nil
}

// awaitExpiry waits for the server to delete a cut-off client's node.
func (w *world) awaitExpiry(ctx context.Context, c *client, node string) error {
	p := w.zpath + "/" + node
	for {
		ok, _, ch, err := w.obs.ExistsW(p)
		if err != nil {
			return fmt.Errorf("watch %s for its session's expiry: %w", node, err)
		}
		if !ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s's session did not expire (node %s still there %.1fs after the cut; session timeout %v): %w",
				c.name, node, time.Since(c.cutAt).Seconds(), w.sessionTimeout, context.Cause(ctx))
		case <-ch:
		}
	}
}

func (w *world) write(c *client) error {
	if c.state != simulator.StateHolding && c.state != simulator.StateStale {
		return conflictf("%s does not hold the lock (%s)", c.name, c.state)
	}
	c.line = w.recipe.write
	// The token was read when it acquired.
	w.emit(w.Resource.Tell(&c.stats, c.name, c.lastNode, c.token, " with token "+tokenText(c.token)))
	return nil
}

// tokenText is a ZooKeeper token: the holder's node's czxid, in hex as
// ZooKeeper writes zxids.
func tokenText(t int64) string {
	if t == 0 {
		return "none"
	}
	return fmt.Sprintf("0x%x", t)
}

// settleWorkers bounds the parallel syncs and re-checks of a big herd.
const settleWorkers = 16

// settle delivers what a change caused. Only clients with a watch on a
// changed path (or on the children) can be notified; each of them syncs
// its own session, after which ZooKeeper's ordering guarantees any watch
// event for the change has reached it (a client sees the event before any
// reply that follows the change). Then each handles its events, in
// parallel; the record is written in queue order, so a step reads the same
// every time.
func (w *world) settle(ctx context.Context, cause int, changed []string) error {
	var targets []*client
	for _, c := range w.clients {
		if c.live() && c.watching(changed) {
			targets = append(targets, c)
		}
	}
	reactions := make([]reaction, len(targets))
	err := parallel(ctx, len(targets), func(i int) error {
		c := targets[i]
		if _, err := c.conn.Sync(w.zpath); err != nil {
			return fmt.Errorf("%s: sync: %w", c.name, err)
		}
		reactions[i] = c.react()
		return reactions[i].err
	})
	if err != nil {
		return err
	}
	var notified []string
	for _, r := range reactions {
		for _, ev := range r.events {
			notified = append(notified, r.c.name)
			e := simulator.Event{Client: r.c.name, Event: simulator.EvNotify, Wasted: !r.acquired}
			if ev.Path == w.zpath {
				e.Watch = "children"
				e.On = w.ownerOf(changed[0])
				e.Node = path.Base(changed[0])
			} else {
				e.Watch = "exists"
				e.On = w.ownerOf(ev.Path)
				e.Node = path.Base(ev.Path)
			}
			e.Text = w.notifyText(r, e)
			w.emit(e)
		}
	}
	notified = slices.Compact(notified)
	if r := w.rec(); cause >= 0 && cause < len(r.Events) {
		r.Events[cause].Notified = append(r.Events[cause].Notified, notified...)
		if len(notified) > 0 {
			r.Events[cause].Text += "; notified " + strings.Join(notified, ", ")
		}
	}
	for _, r := range reactions {
		switch {
		case r.acquired:
			r.c.since = w.Step
			held := "holds the lock"
			if r.c.mode == lockqueue.Lease {
				held = "holds a lease"
			}
			w.emit(simulator.Event{Client: r.c.name, Event: simulator.EvLock, Node: r.c.node, Text: fmt.Sprintf("re-read the children: %s now %s", r.c.node, held)})
		case r.rewait:
			w.emit(w.waitEvent(r.c, "re-read the children: "))
		}
	}
	return nil
}

func (w *world) notifyText(r reaction, e simulator.Event) string {
	var what string
	if e.Watch == "children" {
		what = fmt.Sprintf("children watch on %s fired (%s changed)", w.path, e.Node)
	} else {
		what = fmt.Sprintf("exists watch on %s fired (deleted)", e.Node)
	}
	switch {
	case r.acquired:
		return what + "; it acquires"
	case r.c.state == simulator.StateWaiting:
		return what + "; it re-reads the children and keeps waiting"
	default:
		return what + "; it already holds: woken for nothing"
	}
}

// quiescent checks that every client has come to rest: it holds, it waits
// with a watch armed, or it is gone.
func (w *world) quiescent() error {
	var stuck []string
	for _, c := range w.clients {
		if c.state == simulator.StateWaiting && (!c.live() || len(c.watches) == 0) {
			stuck = append(stuck, c.name)
		}
	}
	if len(stuck) > 0 {
		return fmt.Errorf("%s wait but watch nothing: nothing would ever wake them", strings.Join(stuck, ", "))
	}
	return nil
}

// parallel runs f(0..n-1) on at most settleWorkers goroutines and returns
// the error of the lowest i that failed; it gives up when ctx ends.
func parallel(ctx context.Context, n int, f func(i int) error) error {
	if n == 0 {
		return nil
	}
	var next atomic.Int64
	errs := make([]error, n)
	var wg sync.WaitGroup
	for range min(n, settleWorkers) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n && ctx.Err() == nil; i = int(next.Add(1) - 1) {
				errs[i] = f(i)
			}
		})
	}
	finished := make(chan struct{})
	go func() {
		wg.Wait()
		close(finished)
	}()
	select {
	case <-finished:
	case <-ctx.Done():
		return fmt.Errorf("clients did not settle: %w", context.Cause(ctx))
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// show publishes the lock as it is now, in the middle of a step.
func (w *world) show() {
	if w.Publish == nil || w.noSnapshots {
		return
	}
	if snap, err := w.snapshot(); err == nil {
		w.Publish(snap)
	} else {
		w.Log.Debug("simulator: mid-step snapshot", "path", w.path, "err", err)
	}
}

// snapshot reads the lock as the watcher would and joins the clients' own
// watch records, which include the children watches a server never lists.
func (w *world) snapshot() (lockqueue.Snapshot, error) {
	names, st, err := w.obs.Children(w.zpath)
	if err != nil {
		return lockqueue.Snapshot{}, fmt.Errorf("read %s: %w", w.path, err)
	}
	children := make([]lockqueue.Child, 0, len(names))
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		seen[n] = true
		ch, ok := w.cache[n]
		if !ok {
			data, s, err := w.obs.Get(w.zpath + "/" + n)
			if errors.Is(err, zk.ErrNoNode) {
				continue
			}
			if err != nil {
				return lockqueue.Snapshot{}, fmt.Errorf("read %s/%s: %w", w.path, n, err)
			}
			ch = lockqueue.Child{Name: n, Data: data, Czxid: s.Czxid, Ctime: time.UnixMilli(s.Ctime), EphemeralOwner: s.EphemeralOwner}
			w.cache[n] = ch
		}
		children = append(children, ch)
	}
	maps.DeleteFunc(w.cache, func(n string, _ lockqueue.Child) bool { return !seen[n] })
	opts := w.opts
	opts.CVersion = st.Cversion
	snap := lockqueue.Build(w.path, children, opts)
	snap.Revision = st.Pzxid
	snap.Connection = lockqueue.Connected
	now := time.Now()
	snap.UpdatedAt = now
	// The simulator's records are exact, so a missing watch is missing at
	// once: no debounce.
	missing := make(map[string]time.Time, len(snap.Nodes))
	for _, n := range snap.Nodes {
		missing[n.Name] = time.Time{}
	}
	lockqueue.JoinWatches(&snap, w.watchTable(), missing, now)
	snap.Alerts = append(snap.Alerts, w.zombieHolders(snap)...)
	return snap, nil
}

// zombieHolders are the clients that believe they hold while their node
// is gone (a paused holder whose session expired): the server's listing
// cannot show them, so the snapshot says so in an alert naming the node
// they lost, the same kind etcd's reader raises for a lease run out.
func (w *world) zombieHolders(snap lockqueue.Snapshot) []lockqueue.Alert {
	holder := ""
	if h := snap.Holders(); len(h) > 0 {
		holder = w.ownerOf(h[0])
	}
	var out []lockqueue.Alert
	for _, c := range w.clients {
		z := simulator.Zombie{Name: c.name, State: c.state, Node: c.lastNode, Lapsed: c.lapsed, CutHeld: c.cutHeld}
		if a, ok := simulator.ZombieHolder(z, holder, simulator.ZombieWords{
			Lost: "when its session expired, not by releasing it, and ZooKeeper deleted its node " + c.lastNode,
			Back: "back from its pause", Gone: "whose node is gone"}); ok {
			out = append(out, a)
		}
	}
	return out
}

// watchTable is what the clients know they watch. A cut-off client watches
// nothing: the server drops a connection's watches when it goes.
func (w *world) watchTable() lockqueue.WatchTable {
	t := lockqueue.WatchTable{Source: "simulator", Watches: map[int64][]string{}, Connected: map[int64]bool{}, Expiry: map[int64]time.Time{}}
	for _, c := range w.clients {
		if c.session == 0 {
			continue
		}
		if !c.live() {
			// A scene's member is cut off with its owner's session.
			cut := c.cutAt
			if c.owner != nil {
				cut = c.owner.cutAt
			}
			if !cut.IsZero() {
				t.Expiry[c.session] = cut.Add(w.sessionTimeout)
			}
			continue
		}
		t.Connected[c.session] = true
		var paths []string
		for _, aw := range c.watches {
			if aw.creation {
				// A creation watch on a predecessor that was already gone:
				// still on the server, but it will never fire and the
				// client has gone back to getChildren.
				continue
			}
			p := w.path
			if aw.kind != "children" {
				p = w.path + strings.TrimPrefix(aw.path, w.zpath)
			}
			if !slices.Contains(paths, p) {
				paths = append(paths, p)
			}
		}
		t.Watches[c.session] = paths
	}
	return t
}

// Stats sums every client's counters.
func (w *world) Stats() simulator.Stats {
	var s simulator.Stats
	for _, c := range w.clients {
		s.Add(c.stats)
	}
	if w.second != nil {
		s.Add(w.second.Stats())
	}
	return s
}

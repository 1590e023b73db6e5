// Package zkwatch is the read-only live watcher: it keeps one watch per
// lock parent (a persistent recursive watch on ZooKeeper 3.6+, whose
// events name the child that came or went; a children watch before 3.6,
// and on each other folder a semaphore keeps nodes in), reads what each
// change brought, asks every ensemble member which sessions really watch
// which nodes, and publishes whole lockqueue.Snapshots. It never writes to
// ZooKeeper.
//
// A Watcher is made of parts that each own their state and their lock; a
// newcomer can read them one at a time:
//
//   - config.go: Config, its defaults and validation.
//   - session.go: the connection and its session: the state snapshots are
//     shown with, and the re-read a new session (or an expiry) sets off.
//   - lock.go, lockread.go, persist.go, nodedata.go: one reader per
//     watched lock parent: the single watch on it (persist.go: the
//     persistent watch and the reads its events make; lockread.go: the
//     listing, with a children watch before ZooKeeper 3.6, and on each
//     other folder a semaphore keeps nodes in), the reads of new
//     children's data, and the last snapshot. registry.go holds the
//     readers and routes events.
//   - watchtable.go: the poller that asks every ensemble member for its
//     watch table (serverinfo.go, fourletter.go, adminserver.go) and
//     merges the answers.
//   - discover.go: lock parents found under --watch-under prefixes (one
//     persistent recursive watch per prefix on ZooKeeper 3.6+, whose
//     events also reach the readers of the lock parents below it).
//   - publish.go: how a lock's last read, the session's state and the last
//     watch table become the snapshot views get.
//   - zombie.go: a read that removes a node last shown a zombie reads the
//     watch table afresh first, so a client that reconnected and let go
//     is not told expired.
//
// watcher.go (this file) wires them together and holds the public API.
// Locks are taken in one order: Watcher.pubMu, discovery, registry, a
// lock's own; the session's, the poller's, the clock's and runState's are
// leaves, held while nothing else is taken.
package zkwatch

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/third_party/zk"
)

// Defaults and bounds.
const (
	DefaultSessionTimeout = 10 * time.Second
	DefaultPoll           = time.Second
	// MaxDiscoverDepth bounds how far below a --watch-under prefix lock
	// parents are looked for: discovery lists every level above them (and
	// before ZooKeeper 3.6 keeps a children watch on each), and must never
	// amount to reading the whole tree.
	MaxDiscoverDepth = 4
	// settle is the least time between two reads of one parent. A burst of
	// creates then costs one read per settle, not one per create; the watch
	// re-armed by each read guarantees a final read after the burst.
	settle = 10 * time.Millisecond
	// readParallel bounds concurrent getData calls for new children.
	readParallel = 32
	retryDelay   = time.Second
	// youngMargin: a session newer than the last watch-table poll cannot be
	// in its cons list; it is not a zombie for being absent.
	youngMargin = time.Second
)

// Watcher watches lock parents. Create it with New, start it with Run.
type Watcher struct {
	cfg  Config
	root chroot
	log  *slog.Logger

	sess  *session   // the connection and its session
	locks *registry  // the lock readers, one per watched lock parent
	disc  *discovery // lock parents under prefixes
	poll  *poller    // the ensemble's watch table
	// clock is the measured offset to ZooKeeper's clock, which ctimes are
	// corrected by before they are published.
	clock serverClock
	reads atomic.Int64
	joins atomic.Int64 // lock joins with a watch table (idle.go)
	// persistRefused: the server refused a persistent watch, so every
	// lock keeps to children watches.
	persistRefused atomic.Bool
	// persistMu orders the persistent watches set and removed: a path
	// removed and watched again must not lose its new watch to the
	// removal of the old (persist.go).
	persistMu sync.Mutex

	// pubMu orders publishes, so a snapshot taken before a state change
	// can never be published after it.
	pubMu sync.Mutex

	run runState
}

// New validates cfg and returns a Watcher that has not connected yet.
func New(cfg Config) (*Watcher, error) {
	c, err := cfg.check()
	if err != nil {
		return nil, err
	}
	log := c.Logger.With("component", "zkwatch")
	w := &Watcher{
		cfg:   c.Config,
		root:  c.root,
		log:   log,
		locks: newRegistry(c.root),
		disc:  newDiscovery(c.root, c.Prefixes, c.DiscoverLimit, !c.ChildrenWatchesOnly, log),
		poll:  newPoller(c, log),
		run:   runState{done: make(chan struct{})},
	}
	w.sess = newSession(log, c.servers, len(c.Auth) > 0, w.rereadAll, w.disarmAll)
	for _, p := range c.Paths {
		w.locks.add(p, false)
	}
	return w, nil
}

// Run connects and watches until ctx is done or Close is called. It returns
// nil on a clean stop.
func (w *Watcher) Run(ctx context.Context) error {
	ctx, err := w.run.begin(ctx)
	if err != nil {
		return err
	}
	defer w.run.end()

	conn, err := w.sess.connect(w.cfg, w.onEvent)
	if err != nil {
		return err
	}
	w.log.Info("connecting", "servers", w.sess.servers, "chroot", string(w.root), "sessionTimeout", w.cfg.SessionTimeout,
		"tls", w.cfg.TLS != nil, "auth", len(w.cfg.Auth) > 0)
	if len(w.cfg.Auth) > 0 {
		// No read goes out before the credentials: AddAuth waits for the
		// first session, and the locks wait for them (session.live).
		// go-zookeeper sends them again itself before any request on a
		// later connection.
		w.run.spawn(func(context.Context) { w.sess.addAuth(conn, w.cfg.Auth, w.run.stopping) })
	}
	w.sess.setReader(countingReader{r: conn, n: &w.reads})
	for _, l := range w.locks.all() {
		w.startLock(l)
		l.poke()
	}
	w.run.spawn(w.stateLoop)
	w.run.spawn(w.discoverLoop)
	w.run.spawn(w.pollLoop)
	w.disc.poke()

	<-ctx.Done()
	w.run.stop()
	conn.Close()
	w.run.wait()
	w.log.Info("stopped")
	return nil
}

// Close stops Run and waits for it to return. It is safe to call more than
// once, and without Run.
func (w *Watcher) Close() { w.run.close() }

// AddPath starts watching another lock parent. Adding a path already
// watched is not an error.
func (w *Watcher) AddPath(p string) error {
	if err := ValidatePath(p); err != nil {
		return err
	}
	if !w.run.accepting() {
		return errors.New("zkwatch: watcher is closed")
	}
	l, isNew := w.locks.add(p, false)
	if !isNew {
		return nil
	}
	w.startLock(l)
	l.poke()
	w.log.Info("watching", "path", p)
	return nil
}

// RemovePath stops watching lock parent p, which was configured or added
// (ErrNotWatched otherwise; ErrDiscovered for one found under a prefix):
// its reader stops re-reading and publishing, and Config.Forget is told,
// so a hub behind Publish drops it. Its persistent watch is removed; a
// children watch (before ZooKeeper 3.6) stays set until the parent's
// children next change, and that one event is ignored since nothing
// re-arms it. Adding p again later reads it afresh.
func (w *Watcher) RemovePath(p string) error {
	if err := ValidatePath(p); err != nil {
		return err
	}
	l, err := w.locks.remove(p)
	if err != nil {
		return err
	}
	w.unwatch(l)
	w.log.Info("unwatched", "path", p)
	if w.cfg.Forget != nil {
		// Under pubMu: a publish of p's reader that passed its removed
		// check before remove is out before the hub forgets p; and a p
		// added again meanwhile is not forgotten.
		w.pubMu.Lock()
		if w.locks.get(p) == nil {
			w.cfg.Forget(p)
		}
		w.pubMu.Unlock()
	}
	return nil
}

// Paths lists the watched lock parents, configured and discovered, sorted.
func (w *Watcher) Paths() []string { return w.locks.paths() }

// Snapshot returns the last published snapshot of path.
func (w *Watcher) Snapshot(p string) (lockqueue.Snapshot, bool) {
	l := w.locks.get(p)
	if l == nil {
		return lockqueue.Snapshot{}, false
	}
	return l.lastPublished()
}

// Discovery says what discovery under the --watch-under prefixes looks
// into, and what it does not for its limit.
func (w *Watcher) Discovery() DiscoveryStatus { return w.disc.status() }

// EmptyFolders is how many folders below the --watch-under prefixes were
// found empty: places a lock may be taken, with nothing in them to watch.
// The count may be a second old.
func (w *Watcher) EmptyFolders() int { return w.disc.emptyFolders(false) }

// Reads is the number of ZooKeeper read requests sent so far.
func (w *Watcher) Reads() int64 { return w.reads.Load() }

// Joins is the number of times a lock's last read has been joined with a
// watch table so far: a watch-table poll that changes nothing of a lock
// joins it no more.
func (w *Watcher) Joins() int64 { return w.joins.Load() }

// Connection is the current connection state.
func (w *Watcher) Connection() lockqueue.Connection { return w.sess.view().state }

// onEvent is go-zookeeper's event callback. It runs on the client's receive
// loop, so it only flags work and never blocks or calls ZooKeeper.
func (w *Watcher) onEvent(ev zk.Event) {
	if w.run.stopping() {
		return // Close's own disconnect is not news
	}
	switch ev.Type {
	case zk.EventSession:
		w.sess.handle(ev.State)
	case zk.EventNodeChildrenChanged, zk.EventNodeCreated, zk.EventNodeDeleted,
		zk.EventNodeDataChanged, zk.EventNotWatching:
		w.locks.changed(ev)
		w.disc.event(ev)
	}
}

// rereadAll reads every lock and level again: changes may have been missed
// while there was no session (or no credentials). Until each re-read lands
// its old snapshot stays marked stale.
func (w *Watcher) rereadAll() {
	for _, l := range w.locks.all() {
		l.poke()
	}
	w.disc.dirtyAll()
}

// disarmAll notes that a session expired, and with it every watch the
// watcher had set.
func (w *Watcher) disarmAll() {
	w.locks.disarm()
	w.disc.disarm()
}

// startLock starts l's reader once Run is under way.
func (w *Watcher) startLock(l *lock) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stop != nil || l.removed {
		return
	}
	l.stop = w.run.spawn(func(ctx context.Context) { w.lockLoop(ctx, l) })
}

// runState is the watcher's life: not yet run, running, stopping, closed.
// It is the last lock taken: nothing else is locked while it is held.
type runState struct {
	mu                       sync.Mutex
	running, halting, closed bool
	ctx                      context.Context
	cancel                   context.CancelFunc
	done                     chan struct{}
	wg                       sync.WaitGroup
}

// begin starts the run, once.
func (r *runState) begin(parent context.Context) (context.Context, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running || r.closed {
		return nil, errors.New("zkwatch: Run called twice or after Close")
	}
	r.ctx, r.cancel = context.WithCancel(parent)
	r.running = true
	return r.ctx, nil
}

// end is deferred by Run: it lets Close return.
func (r *runState) end() {
	r.cancel()
	close(r.done)
}

// spawn runs fn on its own goroutine with a context of the run's that the
// returned cancel ends early; nil (and fn not run) once the run is
// stopping or before it began. wg.Add under mu, before stop is set, keeps
// every Add ahead of wait's Wait.
func (r *runState) spawn(fn func(ctx context.Context)) context.CancelFunc {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.running || r.halting {
		return nil
	}
	ctx, cancel := context.WithCancel(r.ctx)
	r.wg.Go(func() {
		defer cancel()
		fn(ctx)
	})
	return cancel
}

func (r *runState) stop() {
	r.mu.Lock()
	r.halting = true
	r.mu.Unlock()
}

func (r *runState) wait() { r.wg.Wait() }

func (r *runState) stopping() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.halting
}

// accepting: paths may still be added.
func (r *runState) accepting() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.closed && !r.halting
}

func (r *runState) close() {
	r.mu.Lock()
	r.closed = true
	running, cancel := r.running, r.cancel
	r.mu.Unlock()
	if running {
		cancel()
		<-r.done
	}
}

// sleep waits for d or ctx, reporting whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

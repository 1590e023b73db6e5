package zkwatch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/third_party/zk"
)

// lock is the reader of one watched lock parent: its goroutine (lockLoop)
// holds the parent's watch (one persistent recursive watch on ZooKeeper
// 3.6+; before, a children watch on the parent and one on each other folder
// a semaphore keeps nodes in), reads what is new after each event,
// and keeps the last read and the last published snapshot.
//
// Its fields are grouped by what guards them, one embedded struct per
// rule: lockGuarded by l.mu, lockPublish by the watcher's pubMu, lockFlags
// atomic, and lockOwn the lock's goroutine's own.
type lock struct {
	path, full string
	kick       chan struct{}
	// hint: the children discovery listed when it found the parent, for
	// its first read (firstread.go); set before the goroutine starts,
	// then the goroutine's.
	hint []string

	lockGuarded
	lockPublish
	lockFlags
	lockOwn
}

// lockGuarded is what l.mu guards. The registry sets armed, folders and
// removed too; publishes read the rest; the event callback queues the
// persistent watch's events.
type lockGuarded struct {
	mu   sync.Mutex
	stop context.CancelFunc // ends its goroutine; nil until started
	// base is Build's output for the last read, before the watch join.
	// Its nodes are never modified: once a join of them is published,
	// base.Nodes becomes the published nodes (the same nodes in the same
	// order, joined; JoinWatches resets what it sets), so a lock's nodes
	// are kept once, shared by base, last and the views.
	base lockqueue.Snapshot
	// index maps each node of base.Nodes (by nodeKey) to its position; nil when
	// base.Nodes holds no read children.
	index map[string]int32
	// fresh: base.Nodes is a read's Build output that no join has used
	// yet, referenced nowhere else, so the next join fills it in place.
	fresh bool
	// baseGen counts the bases set, so a join can tell whether the base
	// it joined is still the base.
	baseGen uint64
	epoch   uint64             // the connection epoch of that read
	last    lockqueue.Snapshot // last published; never modified; written with pubMu held too
	// published: last is set; written with pubMu held too.
	published bool
	armed     bool // a children watch is set and has not fired
	// folders: a semaphore's other folders this lock reads (server
	// paths), each true while its children watch is set.
	folders  map[string]bool
	removed  bool
	final    bool
	stateSeq uint64 // the connection state its last publish showed

	// The persistent watch (persist.go): while persistent, the event
	// callback queues the children's creates and deletes in events, or
	// sets relist for a change they cannot express.
	persistent bool
	events     []childEvent
	relist     bool
}

// lockPublish is what the watcher's pubMu guards: a publish's join.
type lockPublish struct {
	// missing is the join's findings (lockqueue.Join).
	missing map[string]time.Time
	joined  joinedWith // what the last join depended on
}

// lockFlags are read and set without a lock.
type lockFlags struct {
	// persisted is the session epoch the persistent watch was set in (0:
	// none). Set by the lock's goroutine; atomic for unwatch's.
	persisted atomic.Uint64
	// viaPrefix: the watch is a --watch-under prefix's recursive watch
	// (discover.go), not the lock's own; it is not the lock's to remove.
	viaPrefix atomic.Bool

	// reading is set from a poke to the end of the read it causes. A
	// watch-table poll meanwhile leaves its publish to the lock's
	// goroutine (pollLater): joined in the poll, a 1,000-node queue held
	// pubMu for the join while the change's publish waited behind it.
	reading   atomic.Bool
	pollLater atomic.Bool
}

// lockOwn is the lock's goroutine's own, used between its reads.
type lockOwn struct {
	parentCzxid int64
	// seen: each folder's incarnation and cversion at the listing base
	// holds, by folder ("" the parent; a semaphore's other folders by
	// user path).
	seen       map[string]folderSeen
	parentKey  [2]int64 // czxid, data version of the data in parentData
	parentData []byte
	sessions   map[int64]string // session ids as text, shared by the nodes
	lastErr    string
	// eventBase: base is a listing made under the persistent watch, to
	// which events apply; sem, that listing's semaphore recipe.
	eventBase bool
	sem       lockqueue.Recipe
}

func (l *lock) poke() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// lastPublished returns a copy of the last snapshot published.
func (l *lock) lastPublished() (lockqueue.Snapshot, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.published {
		return lockqueue.Snapshot{}, false
	}
	return cloneSnapshot(l.last), true
}

// removeLocked stops the reader of a lock no longer watched and leaves it
// its last snapshot to publish.
func (l *lock) removeLocked(epoch uint64) {
	l.removed = true
	l.base, l.index, l.fresh = missingSnapshot(l.path), nil, false
	l.baseGen++
	l.base.Alerts = []lockqueue.Alert{}
	l.epoch = epoch
	if l.stop != nil {
		l.stop()
	}
}

// lockLoop re-reads the parent after each poke, at most once per settle.
// Every read re-arms the children watch, so events during a read cause
// one more read: the last state is always read.
func (w *Watcher) lockLoop(ctx context.Context, l *lock) {
	// Views learn of the path at once, even with no session to read it.
	if _, _, ok := w.sess.live(); !ok {
		w.emit(l)
	}
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.kick:
		}
		l.reading.Store(true)
		ok := w.readPoked(ctx, l, &last)
		l.reading.Store(false)
		if !ok {
			return
		}
		if l.pollLater.Swap(false) {
			w.emit(l)
		}
	}
}

// readPoked reads l once poked, at most once per settle; false when ctx
// ended.
func (w *Watcher) readPoked(ctx context.Context, l *lock, last *time.Time) bool {
	if !sleep(ctx, time.Until(last.Add(settle))) {
		return false
	}
	select {
	case <-l.kick:
	default:
	}
	r, epoch, ok := w.sess.live()
	if !ok {
		return true // the next session pokes every lock
	}
	*last = time.Now()
	if err := w.readLock(ctx, r, epoch, l); err != nil {
		if ctx.Err() != nil {
			return false
		}
		w.readRetry(l, err)
	} else {
		l.lastErr = ""
	}
	return true
}

// emitAfterPoll publishes l with a new watch table, or leaves it to the
// read under way, which publishes with the newest table anyway.
func (w *Watcher) emitAfterPoll(l *lock) {
	if l.reading.Load() {
		l.pollLater.Store(true)
		// The read may have ended since: then one of the two takes it.
		if l.reading.Load() || !l.pollLater.Swap(false) {
			return
		}
	}
	w.emit(l)
}

// readRetry logs a failed read (once while it keeps failing the same way)
// and reads again later.
func (w *Watcher) readRetry(l *lock, err error) {
	if msg := err.Error(); msg != l.lastErr {
		l.lastErr = msg
		w.log.Warn("read failed; retrying", "path", l.path, "err", err)
	}
	time.AfterFunc(retryDelay, l.poke)
}

// connectionErr: the connection state already says what happened.
func connectionErr(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) ||
		errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrClosing) ||
		errors.Is(err, zk.ErrSessionMoved)
}

// readMissing handles a parent that does not exist: watch for it to appear
// (Curator deletes empty container parents and makes them again later).
func (w *Watcher) readMissing(ctx context.Context, r Reader, epoch uint64, l *lock) error {
	persistent := l.persisted.Load() == epoch
	l.mu.Lock()
	l.armed = persistent
	l.mu.Unlock()
	// The persistent watch tells when the parent is made; an exists watch
	// beside it would take its place (ZooKeeper before 3.9 keeps one
	// watch mode per path and connection: ZOOKEEPER-4466).
	if !persistent && !w.locks.isDiscovered(l) {
		// A discovered lock goes away with its listing instead, so it
		// leaves no exists watch behind.
		ok, _, _, err := r.ExistsW(l.full)
		if err != nil {
			return w.readFailed(l, fmt.Errorf("exists %s: %w", l.full, err))
		}
		if ok {
			l.poke() // created in between: read it
			return nil
		}
	}
	l.parentCzxid, l.parentData, l.sessions, l.seen = 0, nil, nil, nil
	w.locks.dropFolders(l)
	w.setBase(ctx, l, missingSnapshot(l.path), nil, epoch)
	return nil
}

func missingSnapshot(p string) lockqueue.Snapshot {
	s := lockqueue.Build(p, nil, lockqueue.Options{})
	s.Exists = false
	s.Alerts = append(s.Alerts, lockqueue.Alert{Kind: lockqueue.AlertNoParent, Nodes: []string{},
		Message: p + " does not exist (yet); watching for it to appear (Curator deletes empty lock parents and makes them again on the next acquire)"})
	return s
}

// setBase makes s the lock's last read and publishes it. A read that
// removes a node last published as a zombie reads the watch table afresh
// first (zombie.go).
func (w *Watcher) setBase(ctx context.Context, l *lock, s lockqueue.Snapshot, index map[string]int32, epoch uint64) {
	if l.zombieGone(s) {
		w.recheckZombies(ctx, l)
	}
	l.mu.Lock()
	if l.removed {
		l.mu.Unlock()
		return
	}
	l.base, l.index, l.epoch, l.fresh = s, index, epoch, true
	l.baseGen++
	l.mu.Unlock()
	w.emit(l)
}

// readFailed keeps the last known nodes, marks them with the error and
// publishes; connection errors are left to the connection state.
func (w *Watcher) readFailed(l *lock, err error) error {
	if connectionErr(err) {
		return err
	}
	if errors.Is(err, zk.ErrNoAuth) {
		err = fmt.Errorf("%w (the ACL does not let the watcher read it: pass credentials with --zk-auth digest:user:password)", err)
	}
	l.mu.Lock()
	l.base.Error = err.Error()
	l.mu.Unlock()
	w.emit(l)
	return err
}

// session returns the text of session id, the same string for every node
// of the session (a queue's nodes often share a few sessions).
func (l *lock) session(id int64, text string) string {
	if s, ok := l.sessions[id]; ok {
		return s
	}
	if l.sessions == nil {
		l.sessions = map[int64]string{}
	}
	l.sessions[id] = text
	return text
}

// pruneSessions forgets sessions no node has, once they are many.
func (l *lock) pruneSessions(nodes []lockqueue.Node) {
	if len(l.sessions) <= 2*len(nodes)+64 {
		return
	}
	live := make(map[int64]string, len(l.sessions))
	for ni := range nodes {
		n := &nodes[ni]
		live[n.Owner()] = n.Session
	}
	l.sessions = live
}

package zkwatch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/third_party/zk"
)

// A lock parent's persistent recursive watch (ZooKeeper 3.6+). Its
// NodeCreated and NodeDeleted events name the child that came or went, so
// a change is read without listing the parent: a new child's data is the
// only read (one round trip, as a naive listing's, but of one node, not of
// every name), and a deletion needs none. The watch stays set across
// events, so nothing is re-armed; it is the connection's, so a new
// connection sets it again and lists the parent once. A change the events
// cannot express (the parent's own data, a semaphore's folders, a child
// that is no sequential lock node) falls back to a listing, and so does a
// server that refuses the watch: one-shot children watches, as before 3.6.
//
// Events are applied to the last read in the order the server sent them,
// and each child's last event decides: a create keeps (or reads again) the
// child, a delete drops it. Events that came before a listing are already
// in it and are dropped; those that came while it was under way may be,
// and applying them again changes nothing (a child's create before a
// listing and its delete after it both come as events, in order, and
// sequential names are not reused within an incarnation of the parent).

// maxEvents bounds the events queued for one read: beyond it a listing is
// cheaper than the events, and the queue stops growing.
const maxEvents = 100_000

// childEvent is a child of a lock parent created or deleted.
type childEvent struct {
	name    string
	created bool
	at      time.Time // when the event came: just after the change
}

// persistentWatch makes sure l's persistent watch is set in this session
// epoch; false when l uses children watches instead.
func (w *Watcher) persistentWatch(r Reader, epoch uint64, l *lock) bool {
	if w.cfg.ChildrenWatchesOnly || w.persistRefused.Load() {
		return false
	}
	if l.persisted.Load() == epoch {
		return true
	}
	if w.prefixWatchFor(r, epoch, l.full) {
		// The prefix's watch is set: events from now on are queued, and
		// the listing that follows holds those before.
		l.mu.Lock()
		l.persistent, l.events, l.relist = true, nil, true
		l.mu.Unlock()
		l.eventBase = false
		l.viaPrefix.Store(true)
		l.persisted.Store(epoch)
		return true
	}
	l.viaPrefix.Store(false)
	// Queue events from before the request: the server may send one
	// before its answer.
	l.mu.Lock()
	l.persistent, l.events, l.relist = true, nil, true
	l.mu.Unlock()
	l.eventBase = false
	w.persistMu.Lock()
	err := r.AddWatch(l.full, zk.AddWatchModePersistentRecursive)
	w.persistMu.Unlock()
	if err == nil {
		l.persisted.Store(epoch)
		return true
	}
	l.mu.Lock()
	l.persistent, l.events = false, nil
	l.mu.Unlock()
	if connectionErr(err) || errors.Is(err, zk.ErrNoAuth) {
		return false // the listing says what went wrong
	}
	if !w.persistRefused.Swap(true) {
		w.log.Warn("ZooKeeper refused a persistent watch (it needs 3.6 or later); using children watches", "path", l.path, "err", err)
	}
	return false
}

// unwatch removes the persistent watch of a lock no longer watched, unless
// the path is watched again since: its events would keep coming for the
// whole session, and the watch-table count would take it for a client's.
func (w *Watcher) unwatch(l *lock) {
	r, epoch, ok := w.sess.live()
	if !ok || l.persisted.Load() != epoch || l.viaPrefix.Load() {
		return // none of its own set in this connection
	}
	w.run.spawn(func(context.Context) {
		w.persistMu.Lock()
		defer w.persistMu.Unlock()
		if w.locks.hasFull(l.full) {
			return
		}
		// Any: ZooKeeper 3.8 has no type for persistent watches alone.
		// It takes a children watch discovery may hold on the path too,
		// so discovery lists it again.
		if err := r.RemoveWatches(l.full, zk.WatcherTypeAny); err != nil && !connectionErr(err) {
			w.log.Debug("could not remove a persistent watch", "path", l.path, "err", err)
		}
		w.disc.changed(l.full)
	})
}

// takeEvents returns the events queued for l and whether a listing is
// needed instead, and clears both.
func (l *lock) takeEvents() ([]childEvent, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	evs, relist := l.events, l.relist
	l.events, l.relist = nil, false
	return evs, relist
}

// parentEvent takes an event on the lock parent itself.
func (l *lock) parentEvent() {
	l.mu.Lock()
	if l.persistent {
		// The parent made, deleted, or its data set: list it again.
		l.relist = true
	} else {
		l.armed = false // the children watch fired
	}
	l.mu.Unlock()
	l.poke()
}

// childEvent takes an event on a child of the lock parent: only the
// persistent watch sends those.
func (l *lock) childEvent(ev zk.Event) {
	l.mu.Lock()
	if !l.persistent {
		l.mu.Unlock()
		return
	}
	switch {
	case ev.Type == zk.EventNodeDataChanged:
		// A kept child's data is not read again (it was not with
		// children watches either): the recipes never set it.
		l.mu.Unlock()
		return
	case ev.Type != zk.EventNodeCreated && ev.Type != zk.EventNodeDeleted, len(l.events) >= maxEvents:
		l.events, l.relist = nil, true
	case !l.relist:
		l.events = append(l.events, childEvent{name: path.Base(ev.Path), created: ev.Type == zk.EventNodeCreated, at: time.Now()})
	}
	l.mu.Unlock()
	l.poke()
}

// fromEvents reports whether evs can be applied to l's last read in place
// of a listing.
func (l *lock) fromEvents(epoch uint64, evs []childEvent, relist bool) bool {
	if relist || !l.eventBase || l.persisted.Load() != epoch || l.sem != lockqueue.NoRecipe {
		return false
	}
	return onlySequential(evs)
}

// onlySequential: no child in evs was made without a sequence number. One
// that was may be a semaphore's folder, or a lease whose name comes back:
// a listing tells.
func onlySequential(evs []childEvent) bool {
	for _, ev := range evs {
		if ev.created && !sequential(ev.name) {
			return false
		}
	}
	return true
}

// readFromEvents reads l from its queued events when they can say what
// changed; done is false when the parent is to be listed instead.
func (w *Watcher) readFromEvents(ctx context.Context, r Reader, epoch uint64, l *lock) (done bool, err error) {
	evs, relist := l.takeEvents()
	if !l.fromEvents(epoch, evs, relist) {
		return false, nil
	}
	if len(evs) == 0 {
		return true, nil // taken by the read before
	}
	return w.readEvents(ctx, r, epoch, l, evs)
}

// readEvents is readLock for a lock whose events say what changed since
// its last read. An exists call on the parent, sent beside the new
// children's reads, ends it: its answer comes after the events of every
// change before it, and its cversion counts those changes (one per create
// or delete), so the read takes exactly the events up to that point, and
// a transaction of many creates or deletes (a multi) is shown whole, never
// in part. False: the events cannot be applied after all (the parent went
// or came anew, or the counts disagree); list the parent instead.
func (w *Watcher) readEvents(ctx context.Context, r Reader, epoch uint64, l *lock, evs []childEvent) (bool, error) {
	l.mu.Lock()
	prev, index := l.base.Nodes, l.index
	l.mu.Unlock()
	seen := l.seen[""]
	got := map[string]lockqueue.Child{}
	var stat *zk.Stat
	for batch := evs; ; {
		more, ok, st, err := readBatch(ctx, r, l.full, creates(batch, l.full), len(l.parentData) <= batchParentData)
		if err != nil {
			l.eventBase = false // these events are spent: list again
			return true, w.readFailed(l, err)
		}
		maps.Copy(got, more)
		if !ok || st.Czxid != l.parentCzxid {
			return false, nil
		}
		need := int(st.Cversion-seen.cversion) - len(evs)
		if need == 0 {
			stat = st
			break
		}
		if batch = l.takeFirst(need); batch == nil || !onlySequential(batch) {
			return false, nil
		}
		evs = append(evs, batch...)
	}
	keep, fresh, at := foldEvents(prev, index, evs)
	nodes := keptNodes(prev, keep, len(fresh))
	for _, it := range fresh {
		if c, ok := got[it.name]; ok {
			w.clock.observe(c.Ctime, at[it.name])
		}
	}
	nodes = l.addFresh(nodes, fresh, got)
	l.seen[""] = folderSeen{czxid: stat.Czxid, cversion: stat.Cversion}

	s := lockqueue.BuildNodes(l.path, nodes, lockqueue.Options{Leases: w.cfg.Leases[l.path], ParentData: l.parentData,
		CVersion: stat.Cversion, Semaphore: l.sem})
	s.Revision = stat.Pzxid
	l.pruneSessions(s.Nodes)
	w.publishRead(ctx, l, s, epoch, keptBase{prev: prev, index: index, keep: keep})
	return true, nil
}

// readBatch reads the data of the children created (fresh) and the
// parent's Stat (ok: it exists) in one multiRead, whose answer ends the
// events as an exists call's would. It replaces two requests, an exists
// and a get sent from a goroutine of its own: in cmd's benchmark beside
// the naive broadcaster (one queue both watch) the p50 ratio went from
// 1.05-1.09 to 0.91-0.96, builds alternating. The exists and the gets go
// apart when the server has no multiRead, fresh is too many for one
// request, or the parent's data (which a multiRead's Stat comes with) is
// not small: withParent false.
func readBatch(ctx context.Context, r Reader, full string, fresh []item, withParent bool) (got map[string]lockqueue.Child, ok bool, st *zk.Stat, err error) {
	if withParent && len(fresh) < dataBatch {
		names := make([]string, len(fresh))
		for i, it := range fresh {
			names[i] = it.name
		}
		ops := append(appendDataOps(make([]zk.ReadOp, 0, len(fresh)+1), full, names), zk.GetDataOp(full))
		res, err := r.MultiRead(ops...)
		if err == nil {
			return batchAnswer(full, names, ops, res)
		}
		if !errors.Is(err, zk.ErrMultiReadUnimplemented) {
			return nil, false, nil, err
		}
	}
	read := readItemsAsync(ctx, r, fresh)
	ok, st, err = r.Exists(full)
	got, rerr := read()
	if err = cmp.Or(err, rerr); err != nil {
		return nil, false, nil, err
	}
	return got, ok, st, nil
}

// batchAnswer is readBatch's answer from its multiRead's results: one
// per name, then the parent's.
func batchAnswer(full string, names []string, ops []zk.ReadOp, res []zk.ReadResult) (got map[string]lockqueue.Child, ok bool, st *zk.Stat, err error) {
	got = make(map[string]lockqueue.Child, len(names))
	if err := addChildren(got, names, ops, res); err != nil {
		return nil, false, nil, err
	}
	switch parent := res[len(names)]; {
	case errors.Is(parent.Error, zk.ErrNoNode):
		return got, false, nil, nil
	case parent.Error != nil:
		return nil, false, nil, fmt.Errorf("stat of %s: %w", full, parent.Error)
	default:
		return got, true, parent.Stat, nil
	}
}

// batchParentData is the most parent data readBatch reads with each
// change: the recipes' lock parents carry none, or a few bytes (kazoo's
// semaphore its limit), while a node may hold a megabyte.
const batchParentData = 1024

// creates lists the children created in evs, to read.
func creates(evs []childEvent, full string) []item {
	var out []item
	for _, ev := range evs {
		if ev.created {
			out = append(out, item{full: full, name: ev.name})
		}
	}
	return out
}

// takeFirst takes the first n events queued, leaving the rest; nil when
// fewer are queued or a listing is needed.
func (l *lock) takeFirst(n int) []childEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n <= 0 || len(l.events) < n || l.relist {
		return nil
	}
	out := l.events[:n:n]
	l.events = l.events[n:]
	return out
}

// foldEvents tells, from the events in order, the last read's nodes kept
// (by position in prev) and the children to read: those whose last event
// is a create, with when it came.
func foldEvents(prev []lockqueue.Node, index map[string]int32, evs []childEvent) (keep []bool, fresh []item, at map[string]time.Time) {
	keep = make([]bool, len(prev))
	for i := range keep {
		keep[i] = true
	}
	last := make(map[string]int, len(evs)) // name → its last event
	for i, ev := range evs {
		last[ev.name] = i
	}
	at = map[string]time.Time{}
	for i, ev := range evs {
		if last[ev.name] != i {
			continue
		}
		if p, ok := index[ev.name]; ok {
			keep[p] = false // gone, or made again: read afresh
		}
		if ev.created {
			fresh = append(fresh, item{name: ev.name})
			at[ev.name] = ev.at
		}
	}
	return keep, fresh, at
}

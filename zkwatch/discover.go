package zkwatch

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklockviz/zklockviz/lockqueue"
)

// level is a node under a --watch-under prefix that is not (yet) a lock
// parent. Each holds a children watch, so a lock parent appearing anywhere
// within MaxDiscoverDepth levels is noticed; deeper nodes are never watched.
// Its fields are guarded by discovery.mu.
type level struct {
	full, path string
	depth      int
	root       bool            // the prefix itself
	kids       map[string]bool // the last listing
	dirty      bool
	armed      bool
}

// discovery finds lock parents under the --watch-under prefixes: it keeps
// a children watch on each level above them, and hands each lock parent it
// finds to the registry. Its lock is taken before the registry's.
type discovery struct {
	log  *slog.Logger
	kick chan struct{}

	mu        sync.Mutex
	levels    map[string]*level // by server path
	capLogged bool
}

func newDiscovery(root chroot, prefixes []string, log *slog.Logger) *discovery {
	d := &discovery{log: log, kick: make(chan struct{}, 1), levels: map[string]*level{}}
	for _, p := range prefixes {
		full := root.full(p)
		d.levels[full] = &level{full: full, path: p, root: true, dirty: true, kids: map[string]bool{}}
	}
	return d
}

func (d *discovery) poke() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// changed takes a watch event on server path full.
func (d *discovery) changed(full string) {
	d.mu.Lock()
	lv := d.levels[full]
	if lv != nil {
		lv.armed = false
		lv.dirty = true
	}
	d.mu.Unlock()
	if lv != nil {
		d.poke()
	}
}

// dirtyAll lists every level again (a new session may have missed events).
func (d *discovery) dirtyAll() {
	d.mu.Lock()
	for _, lv := range d.levels {
		lv.dirty = true
	}
	d.mu.Unlock()
	d.poke()
}

// disarm notes that every watch is gone with an expired session.
func (d *discovery) disarm() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, lv := range d.levels {
		lv.armed = false
	}
}

// armedWatches counts the children watches discovery holds now, but for
// those on lock parents (isLock), which their readers count.
func (d *discovery) armedWatches(isLock func(full string) bool) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, lv := range d.levels {
		if lv.armed && !isLock(lv.full) {
			n++
		}
	}
	return n
}

// fulls lists the server paths discovery keeps watches on.
func (d *discovery) fulls() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Collect(maps.Keys(d.levels))
}

// isLockParent: a folder whose children carry sequence suffixes is a lock
// queue of some recipe.
func isLockParent(names []string) bool {
	for _, n := range names {
		if _, _, ok := lockqueue.SplitSeq(n); ok {
			return true
		}
	}
	return false
}

// curatorSemaphore reports whether the folder at full, whose children are
// names, is a Curator semaphore's path: "leases" and "locks" only, with
// nothing but Curator lease nodes in "leases". A folder that merely holds
// lock parents named so has other things there; one with only "locks" is
// left to be found as the mutex it then looks like (Curator deletes an
// empty leases container, so a semaphore nobody holds can look so too).
func curatorSemaphore(r Reader, full string, names []string) bool {
	if !lockqueue.IsCuratorSemaphore(names) {
		return false
	}
	leases, _, err := r.Children(join(full, lockqueue.CuratorLeases))
	if err != nil {
		return false // gone since, or unreadable: the next listing decides
	}
	for _, n := range leases {
		if nm, ok := lockqueue.ParseName(n); !ok || nm.Recipe != lockqueue.Curator || nm.Mode != lockqueue.Lease {
			return false
		}
	}
	return true
}

func (w *Watcher) discoverLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.disc.kick:
		}
		if !sleep(ctx, settle) {
			return
		}
		for ctx.Err() == nil {
			r, _, ok := w.sess.live()
			if !ok {
				break
			}
			lv := w.disc.nextDirty()
			if lv == nil {
				break
			}
			w.scanLevel(r, lv)
		}
	}
}

func (d *discovery) nextDirty() *level {
	d.mu.Lock()
	defer d.mu.Unlock()
	var best *level
	for _, lv := range d.levels {
		// Shallow first, so a subtree removed above is never scanned.
		if lv.dirty && (best == nil || lv.depth < best.depth || lv.depth == best.depth && lv.full < best.full) {
			best = lv
		}
	}
	if best != nil {
		best.dirty = false
	}
	return best
}

func (d *discovery) markDirty(lv *level) {
	d.mu.Lock()
	if d.levels[lv.full] == lv {
		lv.dirty = true
	}
	d.mu.Unlock()
	d.poke()
}

// levelOp is one thing a level's listing asks of the registry, in order:
// forget the discovered locks at (self) and below full, or add a lock at
// path.
type levelOp struct {
	drop string // server path
	self bool
	add  string // user path
}

func (w *Watcher) scanLevel(r Reader, lv *level) {
	names, _, _, err := r.ChildrenW(lv.full)
	if errors.Is(err, zk.ErrNoNode) {
		w.levelGone(r, lv)
		return
	}
	if err != nil {
		if !connectionErr(err) {
			w.log.Warn("discovery: list failed; retrying", "path", lv.path, "err", err)
		}
		time.AfterFunc(retryDelay, func() { w.disc.markDirty(lv) })
		return
	}
	lockParent := isLockParent(names) || curatorSemaphore(r, lv.full, names)
	ops, ok := w.disc.relist(lv, names, lockParent, w.locks.hasFull)
	if !ok {
		return // dropped meanwhile
	}
	w.apply(ops)
}

// levelGone forgets what was found below a level that went away; a
// prefix gets an exists watch to tell when it comes (back).
func (w *Watcher) levelGone(r Reader, lv *level) {
	if lv.root {
		ok, _, _, err := r.ExistsW(lv.full)
		if err == nil && ok {
			w.disc.markDirty(lv)
			return
		}
	}
	w.disc.mu.Lock()
	w.disc.dropLevelsLocked(lv.full, !lv.root)
	lv.kids = map[string]bool{}
	lv.armed = false
	w.disc.mu.Unlock()
	w.finishRemoved(w.locks.dropDiscovered(lv.full, !lv.root, w.sess.view().epoch))
}

// relist takes a level's new listing: a lock parent replaces the level
// (and anything found below it); otherwise the levels of children gone
// are dropped and those of new ones made. It returns what the registry is
// to do, in order; false when lv was dropped meanwhile. isLock tells the
// lock parents already watched.
func (d *discovery) relist(lv *level, names []string, lockParent bool, isLock func(full string) bool) ([]levelOp, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.levels[lv.full] != lv {
		return nil, false
	}
	lv.armed = true
	if lockParent {
		d.dropLevelsLocked(lv.full, true)
		return []levelOp{{drop: lv.full, self: true}, {add: lv.path}}, true
	}
	now := make(map[string]bool, len(names))
	for _, n := range names {
		now[n] = true
	}
	var ops []levelOp
	drop := func(full string) {
		d.dropLevelsLocked(full, true)
		ops = append(ops, levelOp{drop: full, self: true})
	}
	for old := range lv.kids {
		if !now[old] {
			drop(join(lv.full, old))
		}
	}
	lv.kids = now
	adding := map[string]bool{}
	isLockNow := func(full string) bool { return adding[full] || isLock(full) }
	for _, n := range names {
		full := join(lv.full, n)
		if isLockNow(full) {
			continue
		}
		if base, ok := strings.CutSuffix(n, lockqueue.KazooSemaphoreLock); ok && now[base] {
			// A kazoo Semaphore's lock queue, beside its path: the
			// semaphore at base reads it, so it is neither a lock of its
			// own nor a folder to look into.
			if bfull := join(lv.full, base); !isLockNow(bfull) {
				drop(bfull)
				ops = append(ops, levelOp{add: join(lv.path, base)})
				adding[bfull] = true
			}
			drop(full)
			continue
		}
		d.addLevelLocked(lv, n)
	}
	return ops, true
}

// addLevelLocked makes a level of lv's child n, unless it is one, too deep,
// or one too many.
func (d *discovery) addLevelLocked(lv *level, n string) {
	full := join(lv.full, n)
	if _, ok := d.levels[full]; ok || lv.depth >= MaxDiscoverDepth {
		return
	}
	if len(d.levels) >= maxLevels {
		if !d.capLogged {
			d.capLogged = true
			d.log.Warn("discovery: too many folders under the prefixes; not looking further", "limit", maxLevels, "at", lv.path)
		}
		return
	}
	d.levels[full] = &level{full: full, path: join(lv.path, n), depth: lv.depth + 1, kids: map[string]bool{}, dirty: true}
}

// dropLevelsLocked forgets the levels at (when self) and below full, the
// prefixes excepted. The server keeps the dropped watches until they fire,
// which they do when those nodes go.
func (d *discovery) dropLevelsLocked(full string, self bool) {
	for p, lv := range d.levels {
		if under(p, full, self) && !lv.root {
			delete(d.levels, p)
		}
	}
}

// apply carries out a listing's ops on the registry, then starts the
// locks found and publishes the last snapshot of those gone.
func (w *Watcher) apply(ops []levelOp) {
	var added, removed []*lock
	epoch := w.sess.view().epoch
	for _, op := range ops {
		if op.add == "" {
			removed = append(removed, w.locks.dropDiscovered(op.drop, op.self, epoch)...)
			continue
		}
		if l, isNew := w.locks.add(op.add, true); isNew {
			added = append(added, l)
		}
	}
	for _, l := range added {
		w.startLock(l)
	}
	w.finishRemoved(removed)
	for _, l := range added {
		w.log.Info("discovered lock parent", "path", l.path)
		l.poke()
	}
}

// finishRemoved publishes each dropped lock's last snapshot (Exists:false),
// then tells Config.Forget.
func (w *Watcher) finishRemoved(ls []*lock) {
	for _, l := range ls {
		w.log.Info("lock parent gone", "path", l.path)
		w.unwatch(l)
		w.emit(l)
		if w.cfg.Forget == nil {
			continue
		}
		// Under pubMu no publish of a lock watched again at the same path
		// can come between the check and the call: if it published first,
		// the path is not forgotten; if later, it makes the path anew.
		w.pubMu.Lock()
		if w.locks.get(l.path) == nil {
			w.cfg.Forget(l.path)
		}
		w.pubMu.Unlock()
	}
}

package zkwatch

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklockviz/zklockviz/lockqueue"
)

// level is a node under a --watch-under prefix that is not (yet) a lock
// parent. Each holds a children watch, so a lock parent appearing anywhere
// within MaxDiscoverDepth levels is noticed; deeper nodes are never watched.
type level struct {
	full, path string
	depth      int
	root       bool            // the prefix itself
	kids       map[string]bool // the last listing
	dirty      bool
	armed      bool
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
		case <-w.discoverCh:
		}
		if !sleep(ctx, settle) {
			return
		}
		for ctx.Err() == nil {
			r, _, ok := w.sessionReader()
			if !ok {
				break
			}
			lv := w.nextDirtyLevel()
			if lv == nil {
				break
			}
			w.scanLevel(r, lv)
		}
	}
}

func (w *Watcher) nextDirtyLevel() *level {
	w.mu.Lock()
	defer w.mu.Unlock()
	var best *level
	for _, lv := range w.levels {
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

func (w *Watcher) scanLevel(r Reader, lv *level) {
	names, _, _, err := r.ChildrenW(lv.full)
	if errors.Is(err, zk.ErrNoNode) {
		if lv.root {
			ok, _, _, err := r.ExistsW(lv.full)
			if err == nil && ok {
				w.markDirty(lv)
				return
			}
		}
		w.mu.Lock()
		removed := w.dropBelowLocked(lv.full, !lv.root)
		lv.kids = map[string]bool{}
		lv.armed = false
		w.mu.Unlock()
		w.finishRemoved(removed)
		return
	}
	if err != nil {
		if !connectionErr(err) {
			w.log.Warn("discovery: list failed; retrying", "path", lv.path, "err", err)
		}
		time.AfterFunc(retryDelay, func() { w.markDirty(lv) })
		return
	}

	var added []*lock
	var removed []*lock
	w.mu.Lock()
	if w.levels[lv.full] != lv {
		w.mu.Unlock()
		return // dropped meanwhile
	}
	lv.armed = true
	if isLockParent(names) || curatorSemaphore(r, lv.full, names) {
		removed = w.dropBelowLocked(lv.full, true)
		if _, ok := w.byFull[lv.full]; !ok {
			added = append(added, w.addLockLocked(lv.path, true))
		}
	} else {
		now := make(map[string]bool, len(names))
		for _, n := range names {
			now[n] = true
		}
		for old := range lv.kids {
			if !now[old] {
				removed = append(removed, w.dropBelowLocked(join(lv.full, old), true)...)
			}
		}
		lv.kids = now
		for _, n := range names {
			full, path := join(lv.full, n), join(lv.path, n)
			if _, ok := w.byFull[full]; ok {
				continue
			}
			if base, ok := strings.CutSuffix(n, lockqueue.KazooSemaphoreLock); ok && now[base] {
				// A kazoo Semaphore's lock queue, beside its path: the
				// semaphore at base reads it, so it is neither a lock of
				// its own nor a folder to look into.
				if _, ok := w.byFull[join(lv.full, base)]; !ok {
					removed = append(removed, w.dropBelowLocked(join(lv.full, base), true)...)
					added = append(added, w.addLockLocked(join(lv.path, base), true))
				}
				removed = append(removed, w.dropBelowLocked(full, true)...)
				continue
			}
			if _, ok := w.levels[full]; ok || lv.depth >= MaxDiscoverDepth {
				continue
			}
			if len(w.levels) >= maxLevels {
				if !w.levelCapLog {
					w.levelCapLog = true
					w.log.Warn("discovery: too many folders under the prefixes; not looking further", "limit", maxLevels, "at", lv.path)
				}
				continue
			}
			w.levels[full] = &level{full: full, path: path, depth: lv.depth + 1, kids: map[string]bool{}, dirty: true}
		}
	}
	for _, l := range added {
		w.startLockLocked(l)
	}
	w.mu.Unlock()
	w.finishRemoved(removed)
	for _, l := range added {
		w.log.Info("discovered lock parent", "path", l.path)
		l.poke()
	}
}

func (w *Watcher) markDirty(lv *level) {
	w.mu.Lock()
	if w.levels[lv.full] == lv {
		lv.dirty = true
	}
	w.mu.Unlock()
	w.pokeDiscovery()
}

// dropBelowLocked forgets the levels at and below full (only below when
// self is false) and the discovered locks there, returning those locks.
// Configured locks stay. The server keeps the dropped watches until they
// fire, which they do when those nodes go.
func (w *Watcher) dropBelowLocked(full string, self bool) []*lock {
	under := func(p string) bool {
		return (self && p == full) || strings.HasPrefix(p, strings.TrimSuffix(full, "/")+"/")
	}
	for p, lv := range w.levels {
		if under(p) && !lv.root {
			delete(w.levels, p)
		}
	}
	var out []*lock
	for p, l := range w.byFull {
		if under(p) && l.discovered {
			delete(w.byFull, p)
			delete(w.locks, l.path)
			l.removed = true
			w.dropFoldersLocked(l)
			l.base, l.index, l.fresh = missingSnapshot(l.path), nil, false
			l.base.Alerts = []lockqueue.Alert{}
			l.epoch = w.epoch
			if l.stop != nil {
				l.stop()
			}
			out = append(out, l)
		}
	}
	return out
}

// finishRemoved publishes each dropped lock's last snapshot (Exists:false),
// then tells Config.Forget.
func (w *Watcher) finishRemoved(ls []*lock) {
	for _, l := range ls {
		w.log.Info("lock parent gone", "path", l.path)
		w.emit(l)
		if w.cfg.Forget == nil {
			continue
		}
		// Under pubMu no publish of a lock watched again at the same path
		// can come between the check and the call: if it published first,
		// the path is not forgotten; if later, it makes the path anew.
		w.pubMu.Lock()
		w.mu.Lock()
		again := w.locks[l.path] != nil
		w.mu.Unlock()
		if !again {
			w.cfg.Forget(l.path)
		}
		w.pubMu.Unlock()
	}
}

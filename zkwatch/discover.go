package zkwatch

import (
	"context"
	"errors"
	"log/slog"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/third_party/zk"
)

// Discovery finds lock parents under the --watch-under prefixes, at most
// MaxDiscoverDepth levels down, and hands each to the registry. It knows
// the folders above them (levels) and, for each, the names of its
// children; it learns of changes in one of two ways.
//
// On ZooKeeper 3.6+, one persistent recursive watch per prefix: its
// NodeCreated and NodeDeleted events name every node made or deleted below
// the prefix, so no folder needs a watch of its own. The tree is listed
// once per connection, in batches of folders per multiRead request, with
// no watch (the prefix's tells); a new connection sets the watch again and
// lists the tree again, which shows what changed in between. After that the
// events keep it: a new folder is listed (it may have children already), a
// deleted one is forgotten with all that was found below it, and a folder
// whose new or deleted child may change what it is (a sequential child
// makes it a lock parent; a semaphore's folders) is listed again. Changes
// told while a folder's listing is out are applied on top of the listing
// when it is in: each child's last change decides, so a change the listing
// already shows is applied again to no effect.
//
// A lock parent under a prefix keeps no watch of its own: the prefix's
// tells its reader of its children (ZooKeeper sends a connection one event
// per change, however many of its watches match), and a persistent watch
// per lock would cost a request per lock, on every connection, and a watch
// on the server, for the same events. It also keeps ZOOKEEPER-4466 (before
// 3.9, one watch mode per path and connection) out of the way: nothing but
// the prefix's recursive watch is set on a prefix, and discovery sets no
// watch on any other path.
//
// Before 3.6, or with Config.ChildrenWatchesOnly, a children watch on each
// level: at most Config.DiscoverLimit of them (--discover-limit). The
// folders beyond are counted and Discovery reports them, so the dashboard
// and the API can say what is not looked into: a bound never hides locks
// silently.

// DefaultDiscoverLimit is how many folders discovery keeps children
// watches on (ZooKeeper before 3.6, or ChildrenWatchesOnly) unless
// Config.DiscoverLimit says otherwise.
const DefaultDiscoverLimit = 2000

// multiReadBatch is how many folders one multiRead request lists: about
// 30 KB of request for paths of 30 bytes, well inside the server's 1 MB
// jute.maxbuffer.
const multiReadBatch = 1000

// level is a folder under a --watch-under prefix that is not (yet) a lock
// parent. Its fields are guarded by discovery.mu; it is kept small, as a
// fleet has a folder per entity.
type level struct {
	full string // server path
	// kids are its children in the last listing and the changes since;
	// nil when none. A child that is a level shares its name's bytes with
	// that level's full.
	kids  map[string]struct{}
	depth int8
	root  bool // the prefix itself
	dirty bool // to be listed
	armed bool // its children watch is set (children watches)
	// inflight: its listing is out (recursive watch); discovery.pending
	// holds the changes to its children told meanwhile.
	inflight bool
}

// childChange is a child of a level made or deleted.
type childChange struct {
	name    string
	created bool
}

// discovery finds lock parents under the --watch-under prefixes, and hands
// each lock parent it finds to the registry. Its lock is taken before the
// registry's.
type discovery struct {
	log      *slog.Logger
	root     chroot
	prefixes []string // server paths
	limit    int
	kick     chan struct{}

	mu     sync.Mutex
	levels map[string]*level // by server path
	// dirtyq queues the dirty levels by depth, for nextBatch; an entry no
	// longer dirty, or dropped, is skipped.
	dirtyq [MaxDiscoverDepth + 1][]*level
	// pending holds the changes to a level's children told while its
	// listing is out, applied on top of it; skipped counts a level's
	// children not looked into for the limit. Few levels have either.
	pending map[*level][]childChange
	skipped map[*level]int
	// recursive: a persistent recursive watch per prefix; false: a
	// children watch per level.
	recursive bool
	// ops are the registry changes found, in the order found, for the
	// discovery loop to carry out (applyOps).
	ops       []levelOp
	capLogged bool
	// empty is emptyFolders' last count, made at emptyAt.
	empty   int
	emptyAt time.Time
	// pass sums up what the discovery loop's pass found, for its log line.
	// Only the loop's goroutine, which carries out the ops, touches it.
	pass passLog

	// wmu guards watched, the session epoch each prefix's recursive
	// watch was set in. Taken before Watcher.persistMu, never with mu.
	wmu     sync.Mutex
	watched map[string]uint64
}

func newDiscovery(root chroot, prefixes []string, limit int, recursive bool, log *slog.Logger) *discovery {
	d := &discovery{log: log, root: root, limit: limit, recursive: recursive, kick: make(chan struct{}, 1),
		levels: map[string]*level{}, watched: map[string]uint64{}, pending: map[*level][]childChange{}, skipped: map[*level]int{}}
	for _, p := range prefixes {
		full := root.full(p)
		d.prefixes = append(d.prefixes, full)
		lv := &level{full: full, root: true}
		d.levels[full] = lv
		d.dirtyLocked(lv)
	}
	return d
}

// user is the user path of server path full.
func (d *discovery) user(full string) string {
	p, _ := d.root.rel(full)
	return p
}

func (d *discovery) poke() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

func (d *discovery) isRecursive() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.recursive
}

// event takes a watch event. With children watches it is a level's watch
// firing; with the prefixes' recursive watches, a node made or deleted.
func (d *discovery) event(ev zk.Event) {
	d.mu.Lock()
	if !d.recursive {
		d.mu.Unlock()
		d.changed(ev.Path)
		return
	}
	poke := (ev.Type == zk.EventNodeCreated || ev.Type == zk.EventNodeDeleted) &&
		d.madeOrDeletedLocked(ev.Path, ev.Type == zk.EventNodeCreated)
	d.mu.Unlock()
	if poke {
		d.poke()
	}
}

// madeOrDeletedLocked takes the node at full made or deleted; true when
// there is work for the discovery loop.
func (d *discovery) madeOrDeletedLocked(full string, created bool) bool {
	if lv := d.levels[full]; lv != nil && lv.root {
		// The prefix made or deleted: its listing tells which.
		d.dirtyLocked(lv)
		return true
	}
	if full == "/" {
		return false
	}
	lv := d.levels[path.Dir(full)]
	switch {
	case lv == nil:
		return false // below a lock parent (its reader's), or too deep
	case lv.inflight:
		d.pending[lv] = append(d.pending[lv], childChange{name: path.Base(full), created: created})
		return false
	case lv.dirty:
		return false // its listing, still to come, shows it
	}
	d.childChangedLocked(lv, path.Base(full), created)
	return true
}

// childChangedLocked applies a change to one of lv's children, or marks lv
// to be listed when the change may change what lv is.
func (d *discovery) childChangedLocked(lv *level, name string, created bool) {
	if relistFor(lv, name) {
		d.dirtyLocked(lv)
		return
	}
	full := join(lv.full, name)
	if !created {
		delete(lv.kids, name)
		d.dropLocked(full)
		return
	}
	if lv.kids == nil {
		lv.kids = map[string]struct{}{}
	}
	lv.kids[d.addLevelLocked(lv, name)] = struct{}{}
}

// relistFor: a child named so, made or deleted, may change what lv is or
// what its other children are, which only a listing of lv tells (the rule
// in relist): a sequential node makes lv a lock parent; "leases" and
// "locks" may make it a Curator semaphore; a kazoo Semaphore's lock queue
// beside its path makes that path a lock.
func relistFor(lv *level, name string) bool {
	if _, _, ok := lockqueue.SplitSeq(name); ok {
		return true
	}
	if name == lockqueue.CuratorLeases || name == lockqueue.CuratorLocks || strings.HasSuffix(name, lockqueue.KazooSemaphoreLock) {
		return true
	}
	_, ok := lv.kids[name+lockqueue.KazooSemaphoreLock]
	return ok
}

// changed takes a children watch's event on server path full.
func (d *discovery) changed(full string) {
	d.mu.Lock()
	lv := d.levels[full]
	if lv != nil {
		lv.armed = false
		d.dirtyLocked(lv)
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
		d.dirtyLocked(lv)
	}
	d.mu.Unlock()
	d.poke()
}

// childrenWatches turns to a children watch per level: the server refused
// a persistent watch.
func (d *discovery) childrenWatches() {
	d.mu.Lock()
	d.recursive = false
	for _, lv := range d.levels {
		lv.inflight = false
		d.dirtyLocked(lv)
	}
	clear(d.pending)
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

// armedWatches counts the watches discovery holds now: the prefixes'
// recursive watches set in epoch (each counts as one children watch in the
// server's table, as a lock's does: registry.armedWatches), and the
// children watches, but for those on lock parents (isLock), which their
// readers count.
func (d *discovery) armedWatches(isLock func(full string) bool, epoch uint64) int {
	n := 0
	d.wmu.Lock()
	for _, e := range d.watched {
		if e == epoch {
			n++
		}
	}
	d.wmu.Unlock()
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, lv := range d.levels {
		if lv.armed && !isLock(lv.full) {
			n++
		}
	}
	return n
}

// DiscoveryStatus is what discovery under the --watch-under prefixes
// looks into.
type DiscoveryStatus struct {
	// Prefixes are the --watch-under prefixes; none: no discovery.
	Prefixes []string
	// Recursive: one persistent recursive watch per prefix (ZooKeeper
	// 3.6+); otherwise a children watch per folder, at most Limit.
	Recursive bool
	// Folders is how many folders below the prefixes are looked into,
	// the prefixes included, lock parents not.
	Folders int
	// Unexplored is how many folders were not looked into because Limit
	// was reached: lock parents in them are not shown.
	Unexplored int
	// Limit is the bound on folders with children watches.
	Limit int
}

func (d *discovery) status() DiscoveryStatus {
	d.mu.Lock()
	defer d.mu.Unlock()
	st := DiscoveryStatus{Recursive: d.recursive, Folders: len(d.levels), Limit: d.limit}
	for _, p := range d.prefixes {
		st.Prefixes = append(st.Prefixes, d.user(p))
	}
	for _, n := range d.skipped {
		st.Unexplored += n
	}
	return st
}

// emptyEvery is how long a count of the empty folders is kept: counting
// walks every folder, and the dashboard asks on every refresh of every
// viewer.
const emptyEvery = time.Second

// emptyFolders counts the folders below the prefixes listed with no
// children: a lock parent with no lock nodes now (kazoo's Lock leaves one
// after its last release) is one of them, as nothing in ZooKeeper tells it
// from any other empty folder. A folder still to be listed is not counted.
// The count is at most emptyEvery old, unless fresh asks for a new one.
func (d *discovery) emptyFolders(fresh bool) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if now := time.Now(); fresh || now.Sub(d.emptyAt) >= emptyEvery {
		d.empty, d.emptyAt = 0, now
		for _, lv := range d.levels {
			if !lv.root && !lv.dirty && !lv.inflight && len(lv.kids) == 0 {
				d.empty++
			}
		}
	}
	return d.empty
}

// isLockParent: a folder whose children carry sequence suffixes is a lock
// queue of some recipe.
func isLockParent(names []string) bool {
	return slices.ContainsFunc(names, func(n string) bool {
		_, _, ok := lockqueue.SplitSeq(n)
		return ok
	})
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
			r, epoch, ok := w.sess.live()
			if !ok || !w.discoverNext(r, epoch) {
				break
			}
		}
		w.applyOps() // those of events alone
		w.logPass()
	}
}

// passLog is what one pass of the discovery loop (a kick, then every
// folder to list) found and lost, for one INFO line a pass: a fleet's
// first walk finds thousands of lock parents (with children watches, one
// listing a folder), and a line a listing buried the log. Each path is at
// debug level.
type passLog struct {
	found, gone int
	first       []string // the first few found
}

func (p *passLog) add(found, gone []*lock) {
	for _, l := range found {
		if len(p.first) < 5 {
			p.first = append(p.first, l.path)
		}
	}
	p.found += len(found)
	p.gone += len(gone)
}

// logPass says what the pass found and lost, with the empty folders it
// knows of (where a lock may be taken: the dashboard counts them too).
func (w *Watcher) logPass() {
	p := &w.disc.pass
	if p.found == 0 && p.gone == 0 {
		return
	}
	w.log.Info("discovery: lock parents below the --watch-under prefixes", "found", p.found, "first", p.first, "gone", p.gone,
		"emptyFolders", w.disc.emptyFolders(true))
	*p = passLog{}
}

// discoverNext lists the next levels and carries out what their listings
// found; false when there is nothing to list, or it cannot be now.
func (w *Watcher) discoverNext(r Reader, epoch uint64) bool {
	if w.disc.isRecursive() {
		if err := w.watchPrefixes(r, epoch); err != nil {
			// Refused: children watches from now on, listed at once.
			return w.persistRefused.Load() && !connectionErr(err)
		}
		batch := w.disc.nextBatch(multiReadBatch, true)
		if len(batch) == 0 {
			return false
		}
		w.listBatch(r, batch)
	} else {
		batch := w.disc.nextBatch(1, false)
		if len(batch) == 0 {
			return false
		}
		w.scanLevel(r, batch[0])
	}
	w.applyOps()
	return true
}

// watchPrefixes sets each prefix's persistent recursive watch in this
// session epoch, before anything below it is listed.
func (w *Watcher) watchPrefixes(r Reader, epoch uint64) error {
	for _, p := range w.disc.prefixes {
		if err := w.watchPrefix(r, epoch, p); err != nil {
			return err
		}
	}
	return nil
}

// watchPrefix sets the recursive watch of the prefix at server path p
// once per session epoch (the watch is the connection's). A server that
// refuses it (before 3.6) turns discovery and every lock to children
// watches.
func (w *Watcher) watchPrefix(r Reader, epoch uint64, p string) error {
	d := w.disc
	d.wmu.Lock()
	defer d.wmu.Unlock()
	if d.watched[p] == epoch {
		return nil
	}
	w.persistMu.Lock()
	err := r.AddWatch(p, zk.AddWatchModePersistentRecursive)
	w.persistMu.Unlock()
	if err == nil {
		d.watched[p] = epoch
		return nil
	}
	if connectionErr(err) || errors.Is(err, zk.ErrNoAuth) {
		return err
	}
	if !w.persistRefused.Swap(true) {
		w.log.Warn("ZooKeeper refused a persistent watch (it needs 3.6 or later); using children watches", "path", d.user(p), "err", err)
	}
	d.childrenWatches()
	return err
}

// prefixWatchFor reports whether the lock parent at server path full is at
// or below a prefix whose recursive watch is set in epoch, setting it if
// need be: the lock's reader then takes the prefix's events and needs no
// watch of its own.
func (w *Watcher) prefixWatchFor(r Reader, epoch uint64, full string) bool {
	if w.cfg.ChildrenWatchesOnly || !w.disc.isRecursive() {
		return false
	}
	for _, p := range w.disc.prefixes {
		if under(full, p, true) {
			return w.watchPrefix(r, epoch, p) == nil
		}
	}
	return false
}

// dirtyLocked marks lv to be listed, queued by depth.
func (d *discovery) dirtyLocked(lv *level) {
	if !lv.dirty {
		lv.dirty = true
		d.dirtyq[lv.depth] = append(d.dirtyq[lv.depth], lv)
	}
}

// nextBatch takes the levels to list next: dirty ones of the least depth
// (shallow first, so a subtree removed above is never listed), at most
// max. With recursive, their listings are out from now on.
func (d *discovery) nextBatch(max int, recursive bool) []*level {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []*level
	for depth := range d.dirtyq {
		q := d.dirtyq[depth]
		for len(q) > 0 && len(out) < max {
			lv := q[0]
			q = q[1:]
			if lv.dirty && d.levels[lv.full] == lv {
				out = append(out, lv)
			}
		}
		if len(q) == 0 {
			q = nil // let the backing array go
		}
		d.dirtyq[depth] = q
		if len(out) > 0 {
			break
		}
	}
	for _, lv := range out {
		lv.dirty = false
		if recursive {
			lv.inflight = true
			delete(d.pending, lv)
		}
	}
	return out
}

func (d *discovery) markDirty(lv *level) {
	d.mu.Lock()
	if d.levels[lv.full] == lv {
		d.dirtyLocked(lv)
	}
	d.mu.Unlock()
	d.poke()
}

// listLater ends the listings of levels that failed, and lists them again
// after retryDelay.
func (d *discovery) listLater(levels []*level) {
	d.mu.Lock()
	for _, lv := range levels {
		lv.inflight = false
		delete(d.pending, lv)
	}
	d.mu.Unlock()
	time.AfterFunc(retryDelay, func() {
		for _, lv := range levels {
			d.markDirty(lv)
		}
	})
}

// levelOp is one thing a level's listing asks of the registry, in order:
// forget the discovered locks at drop (self) and below it (below), or add
// a lock at add.
type levelOp struct {
	drop        string // server path
	self, below bool
	add         string   // user path
	names       []string // the children add's listing showed
}

// dropLocked forgets the level at full, if any, and the levels below it,
// and queues the same for the registry's discovered locks. A discovered
// lock's folder is a level (or a prefix), so when full was no level, or
// one with no children, only a lock at full itself can go.
func (d *discovery) dropLocked(full string) {
	lv := d.levels[full]
	below := lv != nil && len(lv.kids) > 0
	d.dropLevelsLocked(full, true)
	d.ops = append(d.ops, levelOp{drop: full, self: true, below: below})
}

// listBatch lists batch's levels in one multiRead, with no watch: the
// prefixes' recursive watches tell of changes.
func (w *Watcher) listBatch(r Reader, batch []*level) {
	ops := make([]zk.ReadOp, len(batch))
	for i, lv := range batch {
		ops[i] = zk.GetChildrenOp(lv.full)
	}
	res, err := r.MultiRead(ops...)
	if err != nil {
		if !connectionErr(err) {
			w.log.Warn("discovery: list failed; retrying", "folders", len(batch), "first", w.disc.user(batch[0].full), "err", err)
		}
		w.disc.listLater(batch)
		return
	}
	for i, lv := range batch {
		switch err := res[i].Error; {
		case errors.Is(err, zk.ErrNoNode):
			w.levelGone(r, lv)
		case err != nil:
			w.log.Warn("discovery: list failed; retrying", "path", w.disc.user(lv.full), "err", err)
			w.disc.listLater([]*level{lv})
		default:
			lockParent := isLockParent(res[i].Children) || curatorSemaphore(r, lv.full, res[i].Children)
			w.disc.relist(lv, res[i].Children, lockParent, w.locks.hasFull)
		}
	}
}

// scanLevel lists one level, setting its children watch.
func (w *Watcher) scanLevel(r Reader, lv *level) {
	names, _, _, err := r.ChildrenW(lv.full)
	if errors.Is(err, zk.ErrNoNode) {
		w.levelGone(r, lv)
		return
	}
	if err != nil {
		if !connectionErr(err) {
			w.log.Warn("discovery: list failed; retrying", "path", w.disc.user(lv.full), "err", err)
		}
		time.AfterFunc(retryDelay, func() { w.disc.markDirty(lv) })
		return
	}
	lockParent := isLockParent(names) || curatorSemaphore(r, lv.full, names)
	w.disc.relist(lv, names, lockParent, w.locks.hasFull)
}

// levelGone forgets what was found below a level that went away. With
// children watches a prefix gets an exists watch to tell when it comes
// (back); the recursive watch tells that itself.
func (w *Watcher) levelGone(r Reader, lv *level) {
	if lv.root && !w.disc.isRecursive() {
		ok, _, _, err := r.ExistsW(lv.full)
		if err == nil && ok {
			w.disc.markDirty(lv)
			return
		}
	}
	d := w.disc
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.levels[lv.full] != lv {
		return
	}
	d.dropLevelsLocked(lv.full, !lv.root)
	lv.kids, lv.armed, lv.inflight = nil, false, false
	delete(d.pending, lv)
	delete(d.skipped, lv)
	d.ops = append(d.ops, levelOp{drop: lv.full, self: !lv.root, below: true})
}

// applyOps carries out the registry changes found so far, in order.
func (w *Watcher) applyOps() {
	w.disc.mu.Lock()
	ops := w.disc.ops
	w.disc.ops = nil
	w.disc.mu.Unlock()
	if len(ops) > 0 {
		w.apply(ops)
	}
}

// relist takes a level's new listing: a lock parent replaces the level
// (and anything found below it); otherwise the levels of children gone
// are dropped and those of new ones made, and the changes told while the
// listing was out are applied on top. What the registry is to do is
// queued for applyOps. isLock tells the lock parents already watched.
func (d *discovery) relist(lv *level, names []string, lockParent bool, isLock func(full string) bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.levels[lv.full] != lv {
		return // dropped meanwhile
	}
	lv.armed = !d.recursive
	pending := d.pending[lv]
	lv.inflight = false
	delete(d.pending, lv)
	if lockParent {
		// What was found below it goes; it is no lock yet (a level never
		// is), unless it is a prefix, or configured, already watched.
		if len(lv.kids) > 0 {
			d.ops = append(d.ops, levelOp{drop: lv.full, below: true})
		}
		d.dropLevelsLocked(lv.full, true)
		if !isLock(lv.full) {
			d.ops = append(d.ops, levelOp{add: d.user(lv.full), names: names})
		}
		return
	}
	var now map[string]struct{}
	if len(names) > 0 {
		now = make(map[string]struct{}, len(names))
	}
	for _, n := range names {
		now[n] = struct{}{}
	}
	for old := range lv.kids {
		if _, ok := now[old]; !ok {
			d.dropLocked(join(lv.full, old))
		}
	}
	lv.kids = now
	delete(d.skipped, lv)
	adding := map[string]bool{}
	isLockNow := func(full string) bool { return adding[full] || isLock(full) }
	for _, n := range names {
		full := join(lv.full, n)
		if isLockNow(full) {
			continue
		}
		if base, ok := strings.CutSuffix(n, lockqueue.KazooSemaphoreLock); ok && has(now, base) {
			// A kazoo Semaphore's lock queue, beside its path: the
			// semaphore at base reads it, so it is neither a lock of its
			// own nor a folder to look into.
			if bfull := join(lv.full, base); !isLockNow(bfull) {
				d.dropLocked(bfull)
				d.ops = append(d.ops, levelOp{add: d.user(bfull)})
				adding[bfull] = true
			}
			d.dropLocked(full)
			continue
		}
		// The same name: a new level's full keeps it (a string key is
		// replaced on assignment).
		now[d.addLevelLocked(lv, n)] = struct{}{}
	}
	for _, c := range pending {
		if lv.dirty {
			break // to be listed again anyway
		}
		d.childChangedLocked(lv, c.name, c.created)
	}
}

// has reports whether set holds k.
func has(set map[string]struct{}, k string) bool {
	_, ok := set[k]
	return ok
}

// addLevelLocked makes a level of lv's child n, unless it is one, too
// deep, or, with children watches, one too many (counted in skipped). It
// returns n, as the tail of the new level's full when it made one, so lv's
// kids can keep the name without a copy of its own (a fleet's folder costs
// its path once).
func (d *discovery) addLevelLocked(lv *level, n string) string {
	full := join(lv.full, n)
	if _, ok := d.levels[full]; ok || lv.depth >= MaxDiscoverDepth {
		return n
	}
	if !d.recursive && len(d.levels) >= d.limit {
		d.skipped[lv]++
		if !d.capLogged {
			d.capLogged = true
			d.log.Warn("discovery: too many folders under the prefixes for children watches; not looking into the rest (raise --discover-limit)",
				"limit", d.limit, "at", d.user(lv.full))
		}
		return n
	}
	kid := &level{full: full, depth: lv.depth + 1}
	d.levels[full] = kid
	d.dirtyLocked(kid)
	return full[len(full)-len(n):]
}

// dropLevelsLocked forgets the levels at (when self) and below full, the
// prefixes excepted, following the children each level lists (every level
// below is one's child). With children watches the server keeps the
// dropped watches until they fire, which they do when those nodes go.
func (d *discovery) dropLevelsLocked(full string, self bool) {
	lv := d.levels[full]
	if lv == nil {
		return
	}
	for n := range lv.kids {
		d.dropLevelsLocked(join(full, n), true)
	}
	if self && !lv.root {
		delete(d.levels, full)
		delete(d.pending, lv)
		delete(d.skipped, lv)
	}
}

// apply carries out a listing's ops on the registry, then starts the
// locks found and publishes the last snapshot of those gone.
func (w *Watcher) apply(ops []levelOp) {
	var added, removed []*lock
	epoch := w.sess.view().epoch
	for _, op := range ops {
		switch {
		case op.add != "":
			if l, isNew := w.locks.add(op.add, true); isNew {
				l.hint = op.names // its goroutine starts below
				added = append(added, l)
			}
		case op.below:
			removed = append(removed, w.locks.dropDiscovered(op.drop, op.self, epoch)...)
		case op.self:
			removed = append(removed, w.locks.dropDiscoveredAt(op.drop, epoch)...)
		}
	}
	for _, l := range added {
		w.startLock(l)
	}
	w.finishRemoved(removed)
	w.debugLocks("discovered lock parent", added)
	w.disc.pass.add(added, removed)
	for _, l := range added {
		l.poke()
	}
}

// debugLocks says, at debug level, each lock parent discovery found or
// lost; logPass sums them up.
func (w *Watcher) debugLocks(msg string, ls []*lock) {
	for _, l := range ls {
		w.log.Debug(msg, "path", l.path)
	}
}

// finishRemoved publishes each dropped lock's last snapshot (Exists:false),
// then tells Config.Forget.
func (w *Watcher) finishRemoved(ls []*lock) {
	w.debugLocks("lock parent gone", ls)
	for _, l := range ls {
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

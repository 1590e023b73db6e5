package zkwatch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklockviz/zklockviz/lockqueue"
)

// lock is one watched lock parent.
type lock struct {
	path, full string
	kick       chan struct{}

	// Guarded by Watcher.mu.
	discovered bool // found under a prefix rather than configured
	stop       context.CancelFunc
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
	fresh     bool
	epoch     uint64 // the connection epoch of that read
	missing   map[string]time.Time
	last      lockqueue.Snapshot // last published; never modified
	published bool
	armed     bool // a children watch is set and has not fired
	// folders: a semaphore's other folders this lock reads (server
	// paths), each true while its children watch is set.
	folders  map[string]bool
	removed  bool
	final    bool
	stateSeq uint64 // the connection state its last publish showed

	// Owned by the lock's goroutine.
	parentCzxid int64
	// seen: each folder's incarnation and cversion at the listing base
	// holds, by folder ("" the parent; a semaphore's other folders by
	// user path).
	seen       map[string]folderSeen
	parentKey  [2]int64 // czxid, data version of the data in parentData
	parentData []byte
	sessions   map[int64]string // session ids as text, shared by the nodes
	lastErr    string
}

func (l *lock) poke() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

func (w *Watcher) addLockLocked(p string, discovered bool) *lock {
	full := w.root.full(p)
	l := &lock{path: p, full: full, discovered: discovered, kick: make(chan struct{}, 1)}
	l.base = lockqueue.Build(p, nil, lockqueue.Options{})
	l.base.Exists = false
	l.base.Error = "not read yet: waiting for a ZooKeeper session"
	w.locks[p] = l
	w.byFull[full] = l
	return l
}

// startLockLocked starts l's goroutine once Run is under way.
func (w *Watcher) startLockLocked(l *lock) bool {
	if !w.running || w.stopping || l.stop != nil || l.removed {
		return false
	}
	ctx, cancel := context.WithCancel(w.runCtx)
	l.stop = cancel
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		w.lockLoop(ctx, l)
	}()
	return true
}

// lockLoop re-reads the parent after each poke, at most once per settle.
// Every read re-arms the children watch, so events during a read cause
// one more read: the last state is always read.
func (w *Watcher) lockLoop(ctx context.Context, l *lock) {
	// Views learn of the path at once, even with no session to read it.
	if _, _, ok := w.sessionReader(); !ok {
		w.emit(l)
	}
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.kick:
		}
		if !sleep(ctx, time.Until(last.Add(settle))) {
			return
		}
		select {
		case <-l.kick:
		default:
		}
		r, epoch, ok := w.sessionReader()
		if !ok {
			continue // the next session pokes every lock
		}
		last = time.Now()
		err := w.readLock(ctx, r, epoch, l)
		switch {
		case err == nil:
			l.lastErr = ""
		case ctx.Err() != nil:
			return
		default:
			if msg := err.Error(); msg != l.lastErr {
				l.lastErr = msg
				w.log.Warn("read failed; retrying", "path", l.path, "err", err)
			}
			time.AfterFunc(retryDelay, l.poke)
		}
	}
}

// connectionErr: the connection state already says what happened.
func connectionErr(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) ||
		errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrClosing) ||
		errors.Is(err, zk.ErrSessionMoved)
}

// listing is one folder's children as read for a lock: the lock parent's
// own, or one of the other folders a semaphore keeps its nodes in.
type listing struct {
	folder string // user path; "" for the lock parent itself
	full   string // server path
	names  []string
	stat   *zk.Stat
}

// folderSeen is what the last read saw of one folder of a lock.
type folderSeen struct {
	czxid    int64 // the folder's incarnation
	cversion int32 // its child-change counter at that listing
}

// nodeKey identifies a node among all the folders of one lock: a name in
// the lock parent, or the full user path of a node in another folder.
func nodeKey(folder, name string) string {
	if folder == "" {
		return name
	}
	return folder + "/" + name
}

func (w *Watcher) readLock(ctx context.Context, r Reader, epoch uint64, l *lock) error {
	names, stat, _, err := r.ChildrenW(l.full)
	answered := time.Now()
	if errors.Is(err, zk.ErrNoNode) {
		return w.readMissing(r, epoch, l)
	}
	if err != nil {
		return w.readFailed(l, fmt.Errorf("children of %s: %w", l.full, err))
	}
	w.mu.Lock()
	l.armed = true
	// The last read's nodes and their index: never modified, so they are
	// read without the lock from here on.
	prev, index := l.base.Nodes, l.index
	w.mu.Unlock()

	if stat.Czxid != l.parentCzxid {
		// A new incarnation of the parent restarts its sequence counter,
		// so old names may come back as different nodes. (parentCzxid
		// moves on once the read succeeds.)
		prev, index = nil, nil
	}
	// Parent data matters for kazoo's Semaphore (its lease limit, and
	// what tells its path from other folders); read it again only when
	// it changed.
	if key := [2]int64{stat.Czxid, int64(stat.Version)}; l.parentData == nil || key != l.parentKey {
		data, pstat, err := r.Get(l.full)
		if errors.Is(err, zk.ErrNoNode) {
			return nil // deleted since: the children watch fires and we read again
		}
		if err != nil {
			return w.readFailed(l, fmt.Errorf("data of %s: %w", l.full, err))
		}
		if data == nil {
			data = []byte{}
		}
		l.parentData, l.parentKey = data, [2]int64{pstat.Czxid, int64(pstat.Version)}
	}

	// A semaphore keeps its nodes in more folders than its path: each gets
	// a children watch of its own, one per folder, however many look.
	sem, folders := lockqueue.SemaphoreFolders(l.path, names, l.parentData)
	lists := []listing{{full: l.full, names: names, stat: stat}}
	if sem == lockqueue.Curator {
		lists[0].names = nil // "leases" and "locks" are folders, not nodes
	}
	// Each folder has its own sequence counter: the highest is the one
	// nearest to wrapping.
	revision, cversion := stat.Pzxid, stat.Cversion
	for _, f := range folders {
		full := w.root.full(f)
		fnames, fstat, _, err := r.ChildrenW(full)
		if errors.Is(err, zk.ErrNoNode) {
			// Not made yet (kazoo's lock queue before the first acquire)
			// or deleted (Curator's empty containers): the listing left no
			// watch, and the parent's children watch tells when it comes.
			continue
		}
		if err != nil {
			return w.readFailed(l, fmt.Errorf("children of %s: %w", full, err))
		}
		lists = append(lists, listing{folder: f, full: full, names: fnames, stat: fstat})
		revision, cversion = max(revision, fstat.Pzxid), max(cversion, fstat.Cversion)
	}
	w.setFolders(l, lists[1:])

	// keep marks the last read's nodes listed again.
	keep := make([]bool, len(prev))
	type item struct{ folder, full, name string }
	var fresh []item
	for _, ls := range lists {
		seen := l.seen[ls.folder]
		trusted := ls.folder == "" || seen.czxid == ls.stat.Czxid
		kept, nfresh := 0, 0
		for _, n := range ls.names {
			if i, ok := index[nodeKey(ls.folder, n)]; ok && trusted {
				keep[i] = true
				kept++
			} else {
				fresh = append(fresh, item{ls.folder, ls.full, n})
				nfresh++
			}
		}
		had := len(index)
		if len(lists) > 1 {
			had = 0
			for i := range prev {
				if prev[i].Folder == ls.folder {
					had++
				}
			}
		}
		// Data is read only for names not seen before, but a name seen
		// before may be a new node: non-sequential children (kazoo's
		// semaphore leases, named by a client's fixed id) can be deleted
		// and made again between two listings. Each create and delete
		// bumps the folder's cversion, so when it moved by more than the
		// names that came and went explain, something came and went
		// unseen: re-read the non-sequential children. Sequential names
		// never come back within one folder incarnation, so the budget of
		// one read per new sequence node holds.
		changes := nfresh + (had - kept)
		if moved := ls.stat.Cversion - seen.cversion; had > 0 && (moved < 0 || int(moved) > changes) {
			for i := range prev {
				if _, _, seq := lockqueue.SplitSeq(prev[i].Name); keep[i] && !seq && prev[i].Folder == ls.folder {
					keep[i] = false
					fresh = append(fresh, item{ls.folder, ls.full, prev[i].Name})
				}
			}
		}
	}
	got := map[string]lockqueue.Child{}
	for i := 0; i < len(fresh); {
		// fresh is grouped by folder: read each group at once.
		j := i
		var group []string
		for ; j < len(fresh) && fresh[j].folder == fresh[i].folder; j++ {
			group = append(group, fresh[j].name)
		}
		kids, err := w.getChildren(ctx, r, fresh[i].full, group)
		if err != nil {
			return w.readFailed(l, err)
		}
		for n, c := range kids {
			c.Folder = fresh[i].folder
			got[nodeKey(c.Folder, n)] = c
		}
		i = j
	}
	if index != nil {
		// Sequential nodes new since the last listing were created live,
		// just before this listing: they tell ZooKeeper's clock.
		// Only the parent's own listing was answered at answered; a
		// folder's comes later and could show nodes made after it.
		for _, it := range fresh {
			if _, ok := index[it.name]; ok || it.folder != "" {
				continue
			}
			if _, _, seq := lockqueue.SplitSeq(it.name); seq {
				if c, ok := got[it.name]; ok {
					w.clock.observe(c.Ctime, answered)
				}
			}
		}
	}
	// The Build input: the nodes kept, in the last read's queue order, then
	// the new ones, so that a join (the common change) needs no sort. A
	// kept node's name is not parsed again nor its data encoded again.
	nodes := make([]lockqueue.Node, 0, len(prev)+len(fresh))
	for i := range prev {
		if keep[i] {
			nodes = append(nodes, prev[i])
		}
	}
	for _, it := range fresh {
		// Absent from got: deleted between the listing and the read; its
		// deletion fires the children watch.
		if c, ok := got[nodeKey(it.folder, it.name)]; ok {
			node := lockqueue.NewNode(c)
			node.Session = l.session(node.Owner(), node.Session)
			nodes = append(nodes, node)
		}
	}
	l.parentCzxid = stat.Czxid
	l.seen = make(map[string]folderSeen, len(lists))
	for _, ls := range lists {
		l.seen[ls.folder] = folderSeen{czxid: ls.stat.Czxid, cversion: ls.stat.Cversion}
	}

	w.mu.Lock()
	leases := w.cfg.Leases[l.path]
	w.mu.Unlock()
	s := lockqueue.BuildNodes(l.path, nodes, lockqueue.Options{Leases: leases, ParentData: l.parentData,
		CVersion: cversion, Semaphore: sem})
	s.Revision = revision
	l.pruneSessions(s.Nodes)
	w.setBase(l, s, reindex(index, prev, keep, s.Nodes), epoch)
	return nil
}

// setFolders records the folders besides its path whose children watches
// l holds now, so their events reach l, and forgets those it no longer
// reads. The server keeps a forgotten watch until it fires, which it does
// when that folder goes.
func (w *Watcher) setFolders(l *lock, lists []listing) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if l.removed {
		return
	}
	now := make(map[string]bool, len(lists))
	for _, ls := range lists {
		now[ls.full] = true
	}
	for full := range l.folders {
		if !now[full] && w.folders[full] == l {
			delete(w.folders, full)
		}
	}
	for full := range now {
		w.folders[full] = l
	}
	if len(now) == 0 {
		now = nil
	}
	l.folders = now
}

// dropFoldersLocked forgets all of l's other folders.
func (w *Watcher) dropFoldersLocked(l *lock) {
	for full := range l.folders {
		if w.folders[full] == l {
			delete(w.folders, full)
		}
	}
	l.folders = nil
}

// armedFolders counts l's other folders whose children watch is set.
func (l *lock) armedFolders() int {
	n := 0
	for _, armed := range l.folders {
		if armed {
			n++
		}
	}
	return n
}

// reindex updates index, the positions of prev's nodes, to those of nodes:
// prev's nodes not kept are gone, and the others may have moved. It
// updates in place (only the lock's goroutine reads index's contents) and
// makes a new map when there is none.
func reindex(index map[string]int32, prev []lockqueue.Node, keep []bool, nodes []lockqueue.Node) map[string]int32 {
	if index == nil {
		index = make(map[string]int32, len(nodes))
	}
	for i := range prev {
		if !keep[i] {
			delete(index, nodeKey(prev[i].Folder, prev[i].Name))
		}
	}
	for i := range nodes {
		k := nodeKey(nodes[i].Folder, nodes[i].Name)
		if at, ok := index[k]; !ok || at != int32(i) {
			index[k] = int32(i)
		}
	}
	return index
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
	for _, n := range nodes {
		live[n.Owner()] = n.Session
	}
	l.sessions = live
}

// readMissing handles a parent that does not exist: watch for it to appear
// (Curator deletes empty container parents and makes them again later).
func (w *Watcher) readMissing(r Reader, epoch uint64, l *lock) error {
	w.mu.Lock()
	l.armed = false
	discovered := l.discovered
	w.mu.Unlock()
	if !discovered {
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
	w.mu.Lock()
	w.dropFoldersLocked(l)
	w.mu.Unlock()
	w.setBase(l, missingSnapshot(l.path), nil, epoch)
	return nil
}

func missingSnapshot(p string) lockqueue.Snapshot {
	s := lockqueue.Build(p, nil, lockqueue.Options{})
	s.Exists = false
	s.Alerts = append(s.Alerts, lockqueue.Alert{Kind: lockqueue.AlertNoParent, Nodes: []string{},
		Message: p + " does not exist (yet); watching for it to appear (Curator deletes empty lock parents and makes them again on the next acquire)"})
	return s
}

func (w *Watcher) setBase(l *lock, s lockqueue.Snapshot, index map[string]int32, epoch uint64) {
	w.mu.Lock()
	if l.removed {
		w.mu.Unlock()
		return
	}
	l.base, l.index, l.epoch, l.fresh = s, index, epoch, true
	w.mu.Unlock()
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
	w.mu.Lock()
	l.base.Error = err.Error()
	w.mu.Unlock()
	w.emit(l)
	return err
}

// getChildren reads data and Stat of the named children, readParallel at a
// time (go-zookeeper pipelines concurrent requests on its one connection).
// Children deleted meanwhile are left out.
func (w *Watcher) getChildren(ctx context.Context, r Reader, parent string, names []string) (map[string]lockqueue.Child, error) {
	out := make(map[string]lockqueue.Child, len(names))
	if len(names) == 0 {
		return out, nil
	}
	if len(names) == 1 {
		// The usual change, one new node: no workers for it.
		n := names[0]
		data, st, err := r.Get(join(parent, n))
		switch {
		case errors.Is(err, zk.ErrNoNode):
		case err != nil:
			return out, fmt.Errorf("data of %s: %w", join(parent, n), err)
		default:
			out[n] = lockqueue.Child{Name: n, Data: data, Czxid: st.Czxid,
				Ctime: time.UnixMilli(st.Ctime), EphemeralOwner: st.EphemeralOwner}
		}
		return out, ctx.Err()
	}
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	ch := make(chan string)
	for range min(readParallel, len(names)) {
		wg.Go(func() {
			for n := range ch {
				data, st, err := r.Get(join(parent, n))
				mu.Lock()
				switch {
				case errors.Is(err, zk.ErrNoNode):
				case err != nil:
					if firstErr == nil {
						firstErr = fmt.Errorf("data of %s: %w", join(parent, n), err)
					}
				default:
					out[n] = lockqueue.Child{Name: n, Data: data, Czxid: st.Czxid,
						Ctime: time.UnixMilli(st.Ctime), EphemeralOwner: st.EphemeralOwner}
				}
				mu.Unlock()
			}
		})
	}
feed:
	for _, n := range names {
		mu.Lock()
		failed := firstErr != nil
		mu.Unlock()
		if failed {
			break
		}
		select {
		case ch <- n:
		case <-ctx.Done():
			break feed
		}
	}
	close(ch)
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil {
		firstErr = ctx.Err()
	}
	return out, firstErr
}

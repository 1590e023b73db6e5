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
	// index maps each name in base.Nodes to its position; nil when
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
	removed   bool
	final     bool
	stateSeq  uint64 // the connection state its last publish showed

	// Owned by the lock's goroutine.
	cversion    int32 // the parent's cversion at the listing base holds
	parentCzxid int64
	parentKey   [2]int64 // czxid, data version of the data in parentData
	parentData  []byte
	sessions    map[int64]string // session ids as text, shared by the nodes
	lastErr     string
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
	// Parent data only matters for kazoo's Semaphore (its lease limit);
	// read it again only when it changed.
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

	// keep marks the last read's nodes listed again.
	keep := make([]bool, len(prev))
	var fresh []string
	kept := 0
	for _, n := range names {
		if i, ok := index[n]; ok {
			keep[i] = true
			kept++
		} else {
			fresh = append(fresh, n)
		}
	}
	// Data is read only for names not seen before, but a name seen before
	// may be a new node: non-sequential children (kazoo's semaphore leases,
	// named by a client's fixed id) can be deleted and made again between
	// two listings. Each create and delete bumps the parent's cversion, so
	// when it moved by more than the names that came and went explain,
	// something came and went unseen: re-read the non-sequential children.
	// Sequential names never come back within one parent incarnation, so
	// the budget of one read per new sequence node holds.
	changes := len(fresh) + (len(index) - kept)
	if moved := stat.Cversion - l.cversion; len(index) > 0 && (moved < 0 || int(moved) > changes) {
		for i := range prev {
			if _, _, seq := lockqueue.SplitSeq(prev[i].Name); keep[i] && !seq {
				keep[i] = false
				fresh = append(fresh, prev[i].Name)
			}
		}
	}
	got, err := w.getChildren(ctx, r, l.full, fresh)
	if err != nil {
		return w.readFailed(l, err)
	}
	if index != nil {
		// Sequential nodes new since the last listing were created live,
		// just before this listing: they tell ZooKeeper's clock.
		for _, n := range fresh {
			if _, ok := index[n]; ok {
				continue
			}
			if _, _, seq := lockqueue.SplitSeq(n); seq {
				if c, ok := got[n]; ok {
					w.clock.observe(c.Ctime, answered)
				}
			}
		}
	}
	// The Build input: the nodes kept, in the last read's queue order, then
	// the new ones, so that a join (the common change) needs no sort. A
	// kept node's name is not parsed again nor its data encoded again.
	nodes := make([]lockqueue.Node, 0, len(names))
	for i := range prev {
		if keep[i] {
			nodes = append(nodes, prev[i])
		}
	}
	for _, n := range fresh {
		// Absent from got: deleted between the listing and the read; its
		// deletion fires the children watch.
		if c, ok := got[n]; ok {
			node := lockqueue.NewNode(c)
			node.Session = l.session(node.Owner(), node.Session)
			nodes = append(nodes, node)
		}
	}
	l.cversion, l.parentCzxid = stat.Cversion, stat.Czxid

	w.mu.Lock()
	leases := w.cfg.Leases[l.path]
	w.mu.Unlock()
	s := lockqueue.BuildNodes(l.path, nodes, lockqueue.Options{Leases: leases, ParentData: l.parentData, CVersion: stat.Cversion})
	s.Revision = stat.Pzxid
	l.pruneSessions(s.Nodes)
	w.setBase(l, s, reindex(index, prev, keep, s.Nodes), epoch)
	return nil
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
			delete(index, prev[i].Name)
		}
	}
	for i := range nodes {
		if at, ok := index[nodes[i].Name]; !ok || at != int32(i) {
			index[nodes[i].Name] = int32(i)
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
	l.parentCzxid, l.parentData, l.sessions = 0, nil, nil
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

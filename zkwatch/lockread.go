package zkwatch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/third_party/zk"
)

// One read of a lock: list its folders (re-arming their children watches),
// tell the nodes kept from the new ones, read only the new ones' data, and
// build the snapshot from both. Reads follow changes, never viewers.

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

// listings is one read's listings of all a lock's folders.
type listings struct {
	sem   lockqueue.Recipe
	lists []listing // the lock parent's first
	// Each folder has its own sequence counter: the highest is the one
	// nearest to wrapping.
	revision int64
	cversion int32
}

// item is a child to read the data of.
type item struct{ folder, full, name string }

// nodeKey identifies a node among all the folders of one lock: a name in
// the lock parent, or the full user path of a node in another folder.
func nodeKey(folder, name string) string {
	if folder == "" {
		return name
	}
	return folder + "/" + name
}

func (w *Watcher) readLock(ctx context.Context, r Reader, epoch uint64, l *lock) error {
	persistent := w.persistentWatch(r, epoch, l)
	if persistent {
		if done, err := w.readFromEvents(ctx, r, epoch, l); done {
			return err
		}
		// Else the listing holds what the events told.
	}
	return w.readListing(ctx, r, epoch, l, persistent)
}

// readListing reads l from a listing of its folders: the first read, a
// read with children watches, or one the events cannot make.
func (w *Watcher) readListing(ctx context.Context, r Reader, epoch uint64, l *lock, persistent bool) error {
	if hint := l.hint; hint != nil {
		l.hint = nil
		if persistent {
			if done, err := w.readHinted(ctx, r, epoch, l, hint); done {
				return err
			}
		}
	}
	l.eventBase = false
	names, stat, err := listParent(r, l.full, persistent)
	answered := time.Now()
	if errors.Is(err, zk.ErrNoNode) {
		return w.readMissing(ctx, r, epoch, l)
	}
	if err != nil {
		return w.readFailed(l, fmt.Errorf("children of %s: %w", l.full, err))
	}
	l.mu.Lock()
	l.armed = true
	// The last read's nodes and their index: never modified, so they are
	// read without the lock from here on.
	prev, index := l.base.Nodes, l.index
	l.mu.Unlock()
	if stat.Czxid != l.parentCzxid {
		// A new incarnation of the parent restarts its sequence counter,
		// so old names may come back as different nodes. (parentCzxid
		// moves on once the read succeeds.)
		prev, index = nil, nil
	}
	if gone, err := l.readParentData(r, stat); err != nil {
		return w.readFailed(l, err)
	} else if gone {
		return nil // deleted since: the children watch fires and we read again
	}
	ls, err := w.listFolders(r, l, names, stat)
	if err != nil {
		return w.readFailed(l, err)
	}
	w.locks.setFolders(l, ls.lists[1:])

	keep, fresh := l.diff(prev, index, ls.lists)
	kept := keptBase{prev: prev, index: index, keep: keep}
	if len(fresh) > namesFirstAbove && len(ls.lists) == 1 {
		if err := w.readNamesFirst(ctx, r, epoch, l, kept, fresh, ls); err != nil {
			return err
		}
		l.eventBase = persistent
		return nil
	}
	// The new children's data is read while the kept nodes are copied:
	// the round trip and the copy of a 1,000-node queue (0.29 and 0.15 ms
	// at the median of BenchmarkChangeToFrame) were one after the other.
	read := readItemsAsync(ctx, r, fresh)
	nodes := keptNodes(prev, keep, len(fresh))
	got, err := read()
	if err != nil {
		return w.readFailed(l, err)
	}
	if index != nil {
		w.observeClock(index, fresh, got, answered)
	}
	nodes = l.addFresh(nodes, fresh, got)
	l.remember(stat, ls.lists)

	s := lockqueue.BuildNodes(l.path, nodes, lockqueue.Options{Leases: w.cfg.Leases[l.path], ParentData: l.parentData,
		CVersion: ls.cversion, Semaphore: ls.sem})
	s.Revision = ls.revision
	l.pruneSessions(s.Nodes)
	l.eventBase, l.sem = persistent && len(ls.lists) == 1, ls.sem
	w.publishRead(ctx, l, s, epoch, kept)
	return nil
}

// listParent lists a lock parent, setting a children watch on it unless
// the persistent watch tells of its changes.
func listParent(r Reader, full string, persistent bool) ([]string, *zk.Stat, error) {
	if persistent {
		return r.Children(full)
	}
	names, stat, _, err := r.ChildrenW(full)
	return names, stat, err
}

// keptBase is what a read kept of the last one: the last read's nodes
// (prev), their positions by nodeKey (index; nil when there are none to
// keep), and which of them the new read keeps (keep, one per node of prev).
type keptBase struct {
	prev  []lockqueue.Node
	index map[string]int32
	keep  []bool
}

// publishRead makes s, read at epoch, l's base and publishes it, then
// brings kept's index up to date: after the publish, as only the next read
// uses it, and updating it (a map write per node when the head of the
// queue leaves) kept every change waiting.
func (w *Watcher) publishRead(ctx context.Context, l *lock, s lockqueue.Snapshot, epoch uint64, kept keptBase) {
	index := kept.index
	if index == nil {
		index = make(map[string]int32, len(s.Nodes))
	}
	if s.Recipe == lockqueue.Mixed && l.sem != lockqueue.NoRecipe {
		w.logMixedSemaphore(l, s, len(kept.keep))
	}
	w.setBase(ctx, l, s, index, epoch)
	reindex(index, kept.prev, kept.keep, s.Nodes)
}

// logMixedSemaphore says what a semaphore's read was built from when its
// nodes came out of more than one recipe, which a semaphore's never are: each
// node's folder, name and recipe as the build saw them (kept from the last
// read or read now), and the parent data that made it a semaphore.
func (w *Watcher) logMixedSemaphore(l *lock, s lockqueue.Snapshot, kept int) {
	nodes := make([]string, 0, len(s.Nodes))
	for _, n := range s.Nodes {
		if !n.Foreign {
			nodes = append(nodes, fmt.Sprintf("%s/%s=%s", n.Folder(), n.Name, n.Recipe))
		}
	}
	w.log.Warn("a semaphore read as mixed recipes", "path", l.path, "semaphore", l.sem, "parentData", fmt.Sprintf("%q", l.parentData),
		"kept", kept, "nodes", nodes, "eventBase", l.eventBase)
}

// readParentData reads the parent's data again when it changed. It
// matters for kazoo's Semaphore: its lease limit, and what tells its path
// from other folders. gone: the parent was deleted since its listing.
func (l *lock) readParentData(r Reader, stat *zk.Stat) (gone bool, err error) {
	key := [2]int64{stat.Czxid, int64(stat.Version)}
	if l.parentData != nil && key == l.parentKey {
		return false, nil
	}
	if stat.DataLength == 0 {
		// Nothing to read: the recipes make their lock parents so, and a
		// fleet's first reads are a request fewer each.
		l.parentData, l.parentKey = []byte{}, key
		return false, nil
	}
	data, pstat, err := r.Get(l.full)
	if errors.Is(err, zk.ErrNoNode) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("data of %s: %w", l.full, err)
	}
	if data == nil {
		data = []byte{}
	}
	l.parentData, l.parentKey = data, [2]int64{pstat.Czxid, int64(pstat.Version)}
	return false, nil
}

// listFolders lists, with a children watch each, the folders besides its
// path that a semaphore keeps its nodes in: one watch per folder, however
// many clients look.
func (w *Watcher) listFolders(r Reader, l *lock, names []string, stat *zk.Stat) (listings, error) {
	sem, folders := lockqueue.SemaphoreFolders(l.path, names, l.parentData)
	out := listings{sem: sem, lists: []listing{{full: l.full, names: names, stat: stat}},
		revision: stat.Pzxid, cversion: stat.Cversion}
	if sem == lockqueue.Curator {
		out.lists[0].names = nil // "leases" and "locks" are folders, not nodes
	}
	fulls := make([]string, len(folders))
	for i, f := range folders {
		fulls[i] = w.root.full(f)
	}
	w.locks.expectFolders(l, fulls)
	for i, f := range folders {
		full := fulls[i]
		fnames, fstat, _, err := r.ChildrenW(full)
		if errors.Is(err, zk.ErrNoNode) {
			// Not made yet (kazoo's lock queue before the first acquire)
			// or deleted (Curator's empty containers): the listing left no
			// watch, and the parent's children watch tells when it comes.
			continue
		}
		if err != nil {
			return listings{}, fmt.Errorf("children of %s: %w", full, err)
		}
		out.lists = append(out.lists, listing{folder: f, full: full, names: fnames, stat: fstat})
		out.revision, out.cversion = max(out.revision, fstat.Pzxid), max(out.cversion, fstat.Cversion)
	}
	return out, nil
}

// diff tells the last read's nodes listed again (keep, by position in
// prev) from the children to read (fresh, grouped by folder).
func (l *lock) diff(prev []lockqueue.Node, index map[string]int32, lists []listing) (keep []bool, fresh []item) {
	keep = make([]bool, len(prev))
	if len(prev) == 0 {
		// A first read: every name is fresh (100,000 of them grew the
		// slice a few dozen times).
		n := 0
		for _, ls := range lists {
			n += len(ls.names)
		}
		fresh = make([]item, 0, n)
	}
	for _, ls := range lists {
		seen := l.seen[ls.folder]
		trusted := ls.folder == "" || seen.czxid == ls.stat.Czxid
		kept, nfresh := 0, 0
		for _, n := range ls.names {
			// A node listed before but not read yet (a fill cut short)
			// is read now.
			if i, ok := index[nodeKey(ls.folder, n)]; ok && trusted && !prev[i].Unread() {
				keep[i] = true
				kept++
			} else {
				fresh = append(fresh, item{ls.folder, ls.full, n})
				nfresh++
			}
		}
		had := len(index)
		if len(lists) > 1 {
			had = countFolder(prev, ls.folder)
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
			fresh = append(fresh, rereadNonSequential(prev, keep, ls)...)
		}
	}
	return keep, fresh
}

func countFolder(nodes []lockqueue.Node, folder string) int {
	n := 0
	for i := range nodes {
		if nodes[i].Folder() == folder {
			n++
		}
	}
	return n
}

// rereadNonSequential moves ls's kept non-sequential nodes from keep to
// the returned items to read again.
func rereadNonSequential(prev []lockqueue.Node, keep []bool, ls listing) []item {
	var out []item
	for i := range prev {
		if keep[i] && !sequential(prev[i].Name) && prev[i].Folder() == ls.folder {
			keep[i] = false
			out = append(out, item{ls.folder, ls.full, prev[i].Name})
		}
	}
	return out
}

// sequential tells a ZooKeeper sequential node's name as the recipes read
// it: a kazoo lease (32 hex digits) is not one even when it ends in ten
// decimal digits.
func sequential(name string) bool {
	nm, _ := lockqueue.ParseName(name)
	return nm.HasSeq
}

// readItems reads the data of fresh, by nodeKey; fresh is grouped by
// folder, and each group is read at once.
func readItems(ctx context.Context, r Reader, fresh []item) (map[string]lockqueue.Child, error) {
	got := map[string]lockqueue.Child{}
	for i := 0; i < len(fresh); {
		j := i
		var group []string
		for ; j < len(fresh) && fresh[j].folder == fresh[i].folder; j++ {
			group = append(group, fresh[j].name)
		}
		kids, err := getChildren(ctx, r, fresh[i].full, group)
		if err != nil {
			return nil, err
		}
		for n, c := range kids {
			c.Folder = fresh[i].folder
			got[nodeKey(c.Folder, n)] = c
		}
		i = j
	}
	return got, nil
}

// readItemsAsync starts readItems and returns the wait for its answer.
func readItemsAsync(ctx context.Context, r Reader, fresh []item) func() (map[string]lockqueue.Child, error) {
	if len(fresh) == 0 {
		return func() (map[string]lockqueue.Child, error) { return map[string]lockqueue.Child{}, nil }
	}
	type answer struct {
		got map[string]lockqueue.Child
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		got, err := readItems(ctx, r, fresh)
		ch <- answer{got, err}
	}()
	return func() (map[string]lockqueue.Child, error) {
		a := <-ch
		return a.got, a.err
	}
}

// observeClock: sequential nodes new since the last listing were created
// live, just before this listing was answered, so they tell ZooKeeper's
// clock. Only the parent's own listing was answered at answered; a
// folder's comes later and could show nodes made after it.
func (w *Watcher) observeClock(index map[string]int32, fresh []item, got map[string]lockqueue.Child, answered time.Time) {
	for _, it := range fresh {
		if _, ok := index[it.name]; ok || it.folder != "" {
			continue
		}
		if sequential(it.name) {
			if c, ok := got[it.name]; ok {
				w.clock.observe(c.Ctime, answered)
			}
		}
	}
}

// keptNodes and addFresh make the Build input: the nodes kept, in the
// last read's queue order, then the new ones, so that a join (the common
// change) needs no sort. A kept node's name is not parsed again nor its
// data encoded again.
func keptNodes(prev []lockqueue.Node, keep []bool, fresh int) []lockqueue.Node {
	nodes := make([]lockqueue.Node, 0, len(prev)+fresh)
	// Kept nodes come in runs (a change adds or removes one or two), and
	// a run is copied at once: node by node, the copy of a 1,000-node
	// queue was half of merge's time.
	for i := 0; i < len(prev); {
		j := i
		for j < len(prev) && keep[j] == keep[i] {
			j++
		}
		if keep[i] {
			nodes = append(nodes, prev[i:j]...)
		}
		i = j
	}
	return nodes
}

func (l *lock) addFresh(nodes []lockqueue.Node, fresh []item, got map[string]lockqueue.Child) []lockqueue.Node {
	for _, it := range fresh {
		// Absent from got: deleted between the listing and the read; its
		// deletion fires the children watch.
		if c, ok := got[nodeKey(it.folder, it.name)]; ok {
			node := lockqueue.NewNode(c)
			node.Session = l.session(node.Owner(), node.Session)
			nodes = append(nodes, node)
		}
	}
	return nodes
}

// remember keeps what the next read compares its listings with.
func (l *lock) remember(stat *zk.Stat, lists []listing) {
	l.parentCzxid = stat.Czxid
	l.seen = make(map[string]folderSeen, len(lists))
	for _, ls := range lists {
		l.seen[ls.folder] = folderSeen{czxid: ls.stat.Czxid, cversion: ls.stat.Cversion}
	}
}

// reindex updates index, the positions of prev's nodes, to those of nodes:
// prev's nodes not kept are gone, and the others may have moved. It
// updates in place: only the lock's goroutine reads index's contents.
func reindex(index map[string]int32, prev []lockqueue.Node, keep []bool, nodes []lockqueue.Node) {
	for i := range prev {
		if !keep[i] {
			delete(index, nodeKey(prev[i].Folder(), prev[i].Name))
		}
	}
	for i := range nodes {
		k := nodeKey(nodes[i].Folder(), nodes[i].Name)
		if at, ok := index[k]; !ok || at != int32(i) {
			index[k] = int32(i)
		}
	}
}

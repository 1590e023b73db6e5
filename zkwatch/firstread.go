package zkwatch

import (
	"context"
	"slices"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/third_party/zk"
)

// The first read of a lock parent that discovery found with its children
// listed, in one request: a fleet's thousands of locks each cost one
// request at start, not a listing and then a read of its nodes. A
// multiRead carries the parent's data (its Stat), its children, each
// child discovery saw, and the parent's Stat again. The server answers
// the reads in turn, not at one point in time, so the read counts only
// when both Stats are of the same incarnation at the same cversion: no
// child came or went in between, so the children listed are the parent's
// at that cversion and every one's data was read. Otherwise, and for a
// semaphore (its other folders need their own listings), the lock is
// listed as usual.

// readHinted is readListing's first read from names, the children
// discovery saw; false when the parent is to be listed instead.
func (w *Watcher) readHinted(ctx context.Context, r Reader, epoch uint64, l *lock, names []string) (bool, error) {
	if len(names) == 0 || len(names) > dataBatch || ctx.Err() != nil {
		return false, nil
	}
	ops := make([]zk.ReadOp, 0, len(names)+3)
	ops = append(ops, zk.GetDataOp(l.full), zk.GetChildrenOp(l.full))
	for _, n := range names {
		ops = append(ops, zk.GetDataOp(join(l.full, n)))
	}
	ops = append(ops, zk.GetDataOp(l.full))
	res, err := r.MultiRead(ops...)
	if err != nil {
		return false, nil // the listing says what went wrong
	}
	first, last, listed := res[0], res[len(res)-1], res[1]
	if first.Error != nil || last.Error != nil || listed.Error != nil ||
		first.Stat.Czxid != last.Stat.Czxid || first.Stat.Cversion != last.Stat.Cversion ||
		!sameNames(listed.Children, names) {
		return false, nil
	}
	stat, data := first.Stat, first.Data
	if data == nil {
		data = []byte{}
	}
	if sem, _ := lockqueue.SemaphoreFolders(l.path, names, data); sem != lockqueue.NoRecipe {
		return false, nil
	}
	got := make(map[string]lockqueue.Child, len(names))
	for i, n := range names {
		rr := res[2+i]
		if rr.Error != nil {
			return false, nil // a same cversion says it is there: list to see
		}
		got[n] = childOf(n, rr.Data, rr.Stat)
	}
	l.mu.Lock()
	l.armed = true
	l.mu.Unlock()
	l.parentData, l.parentKey = data, [2]int64{stat.Czxid, int64(stat.Version)}
	lists := []listing{{full: l.full, names: names, stat: stat}}
	w.locks.setFolders(l, nil)
	keep, fresh := l.diff(nil, nil, lists)
	nodes := l.addFresh(keptNodes(nil, keep, len(fresh)), fresh, got)
	l.remember(stat, lists)
	s := lockqueue.BuildNodes(l.path, nodes, lockqueue.Options{Leases: w.cfg.Leases[l.path], ParentData: l.parentData,
		CVersion: stat.Cversion})
	s.Revision = stat.Pzxid
	l.pruneSessions(s.Nodes)
	l.eventBase, l.sem = true, lockqueue.NoRecipe
	w.publishRead(ctx, l, s, epoch, keptBase{keep: keep})
	return true, nil
}

// sameNames: a and b hold the same names, in any order.
func sameNames(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

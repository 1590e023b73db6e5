package zkwatch

import (
	"context"
	"sync"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// A big queue, names first. A listing alone gives a queue's order, its
// holders and whom each waiter waits for by its recipe's rule: the names
// say it all. Reading every node's data and Stat is what takes a 100,000-
// node queue seconds, so such a read publishes the listing's snapshot
// first, marked Filling, then reads the data in multiRead batches, the
// holders' and the first screenful's first, and publishes the snapshot
// filled in: once after those, at most once a second while the rest come,
// and once complete, when Filling is gone.

const (
	// namesFirstAbove: a read with more new children than this publishes
	// their names before their data. Below it the data takes a few
	// round trips, and one snapshot is less work than two.
	namesFirstAbove = 4 * dataBatch
	// screenful is how many nodes at the head of the queue are read
	// with the holders, before the rest: what a lock page shows first.
	screenful = dataBatch
	// fillParallel is how many multiRead requests a fill keeps in flight
	// (go-zookeeper pipelines them on its one connection).
	fillParallel = 4
	// fillChunk is how many nodes' data a fill reads between looks at
	// whether to publish its progress.
	fillChunk = 16 * dataBatch
	// fillEvery is how often at most a fill publishes its progress: each
	// publish copies the queue.
	fillEvery = time.Second
)

// readNamesFirst is readListing's end for a read with many new children:
// it publishes the nodes kept and the new ones by name, then fills in the
// new ones' data. ls is a lock's only folder (no semaphore). Events may be
// applied to l's base only once it returns nil: its caller says so.
func (w *Watcher) readNamesFirst(ctx context.Context, r Reader, epoch uint64, l *lock, kept keptBase, fresh []item, ls listings) error {
	nodes := keptNodes(kept.prev, kept.keep, len(fresh))
	for _, it := range fresh {
		nodes = append(nodes, lockqueue.NewNamedNode(it.name, it.folder))
	}
	l.remember(ls.lists[0].stat, ls.lists)
	opt := lockqueue.Options{Leases: w.cfg.Leases[l.path], ParentData: l.parentData, CVersion: ls.cversion, Semaphore: ls.sem}
	s := lockqueue.BuildNodes(l.path, nodes, opt)
	s.Revision = ls.revision
	s.Filling = filling(s.Nodes)
	l.sem = ls.sem
	// Events may not be applied to a base with unread nodes: a fill cut
	// short is finished by the next listing, whose diff reads them.
	l.eventBase = false
	w.publishRead(ctx, l, s, epoch, kept)
	if err := w.fill(ctx, r, epoch, l, opt, ls.revision); err != nil {
		return w.readFailed(l, err)
	}
	return nil
}

// fill reads the data of l's unread nodes and publishes them read: the
// holders and the first screenful, then the rest.
func (w *Watcher) fill(ctx context.Context, r Reader, epoch uint64, l *lock, opt lockqueue.Options, revision int64) error {
	l.mu.Lock()
	base := l.base.Nodes
	l.mu.Unlock()
	var first, rest []string
	for i := range base {
		n := &base[i]
		switch {
		case !n.Unread():
		case n.Holding || i < screenful:
			first = append(first, n.Name)
		default:
			rest = append(rest, n.Name)
		}
	}
	got, err := readFill(ctx, r, l.full, first)
	if err != nil {
		return err
	}
	w.applyFill(ctx, l, epoch, opt, revision, first, got)
	published := time.Now()
	var names []string
	got = map[string]lockqueue.Child{}
	for i := 0; i < len(rest); i += fillChunk {
		chunk := rest[i:min(len(rest), i+fillChunk)]
		more, err := readFill(ctx, r, l.full, chunk)
		if err != nil {
			return err
		}
		for k, c := range more {
			got[k] = c
		}
		names = append(names, chunk...)
		if last := i+fillChunk >= len(rest); last || time.Since(published) >= fillEvery {
			w.applyFill(ctx, l, epoch, opt, revision, names, got)
			published, names, got = time.Now(), nil, map[string]lockqueue.Child{}
		}
	}
	return nil
}

// readFill reads the data of names, children of parent, fillParallel
// multiRead batches at a time. A name deleted since its listing is left
// out.
func readFill(ctx context.Context, r Reader, parent string, names []string) (map[string]lockqueue.Child, error) {
	out := make(map[string]lockqueue.Child, len(names))
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	batches := make(chan []string)
	for range min(fillParallel, (len(names)+dataBatch-1)/dataBatch) {
		wg.Go(func() {
			for b := range batches {
				got, err := getChildren(ctx, r, parent, b)
				mu.Lock()
				for k, c := range got {
					out[k] = c
				}
				if err != nil && firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		})
	}
	for i := 0; i < len(names); i += dataBatch {
		mu.Lock()
		failed := firstErr != nil
		mu.Unlock()
		if failed || ctx.Err() != nil {
			break
		}
		batches <- names[i:min(len(names), i+dataBatch)]
	}
	close(batches)
	wg.Wait()
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	return out, firstErr
}

// applyFill publishes l's base with names read as got: each node read
// replaces its unread one, and one of names that got lacks was deleted
// since the listing (its event, or the next listing, tells views).
func (w *Watcher) applyFill(ctx context.Context, l *lock, epoch uint64, opt lockqueue.Options, revision int64, names []string, got map[string]lockqueue.Child) {
	l.mu.Lock()
	prev, index := l.base.Nodes, l.index
	l.mu.Unlock()
	keep := make([]bool, len(prev))
	for i := range keep {
		keep[i] = true
	}
	for _, n := range names {
		if _, ok := got[n]; !ok {
			if i, ok := index[n]; ok && prev[i].Unread() {
				keep[i] = false
			}
		}
	}
	nodes := make([]lockqueue.Node, 0, len(prev))
	for i := range prev {
		if !keep[i] {
			continue
		}
		n := prev[i]
		if c, ok := got[n.Name]; ok && n.Unread() {
			n = lockqueue.NewNode(c)
			n.Session = l.session(n.Owner(), n.Session)
		}
		nodes = append(nodes, n)
	}
	s := lockqueue.BuildNodes(l.path, nodes, opt)
	s.Revision = revision
	s.Filling = filling(s.Nodes)
	w.publishRead(ctx, l, s, epoch, keptBase{prev: prev, index: index, keep: keep})
}

// filling says how many of nodes are read; nil when all are.
func filling(nodes []lockqueue.Node) *lockqueue.Filling {
	unread := 0
	for i := range nodes {
		if nodes[i].Unread() {
			unread++
		}
	}
	if unread == 0 {
		return nil
	}
	return &lockqueue.Filling{Read: len(nodes) - unread, Of: len(nodes)}
}

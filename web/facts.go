package web

import (
	"sync"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/views"
)

// factsCache keeps the facts of each lock's newest snapshot that the lock
// page shows beside its rows (views.QueueFacts: the counts, the oldest
// wait, where a node is), read once per snapshot: the page's HTML and
// every viewer's parts of a 100,000-node queue then cost the rows they
// show, not a pass or three over the queue each.
type factsCache struct {
	mu    sync.Mutex
	locks map[string]*lockFacts
}

type lockFacts struct {
	version snapshotVersion
	once    sync.Once
	facts   *views.QueueFacts
}

// maxFactsLocks bounds the locks whose facts are kept; past it the cache
// starts again. Only long queues are kept (factsFrom): a short one is
// read in less time than a lookup costs.
const (
	maxFactsLocks = 256
	factsFrom     = windowWholeUpTo
)

// of returns the facts of snap, lock's snapshot at version. A snapshot
// older than the one kept (a request that read it just before a change)
// is read afresh, and so is a short one.
func (c *factsCache) of(lock string, version snapshotVersion, snap lockqueue.Snapshot) *views.QueueFacts {
	if c == nil || len(snap.Nodes) <= factsFrom {
		return views.FactsOf(snap)
	}
	c.mu.Lock()
	if c.locks == nil || len(c.locks) >= maxFactsLocks {
		c.locks = map[string]*lockFacts{}
	}
	e := c.locks[lock]
	switch {
	case e == nil || e.version.revision < version.revision || (e.version.revision == version.revision && e.version != version):
		e = &lockFacts{version: version}
		c.locks[lock] = e
	case e.version != version:
		e = nil
	}
	c.mu.Unlock()
	if e == nil {
		return views.FactsOf(snap)
	}
	e.once.Do(func() { e.facts = views.FactsOf(snap) })
	return e.facts
}

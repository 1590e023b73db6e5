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
	// window are the facts its windows need (the page's first frame).
	winOnce sync.Once
	window  *windowFacts
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
	e := c.entry(lock, version, snap)
	if e == nil {
		return views.FactsOf(snap)
	}
	e.once.Do(func() { e.facts = views.FactsOf(snap) })
	return e.facts
}

// window returns the window facts of snap, as of does its facts.
func (c *factsCache) window(lock string, version snapshotVersion, snap lockqueue.Snapshot) *windowFacts {
	e := c.entry(lock, version, snap)
	if e == nil {
		return readWindowFacts(&snap)
	}
	e.winOnce.Do(func() { e.window = readWindowFacts(&snap) })
	return e.window
}

// entry is lock's entry for version, made when version is newer than the
// one kept; nil when the kept one is newer, or snap is short.
func (c *factsCache) entry(lock string, version snapshotVersion, snap lockqueue.Snapshot) *lockFacts {
	if c == nil || len(snap.Nodes) <= factsFrom {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.locks == nil || len(c.locks) >= maxFactsLocks {
		c.locks = map[string]*lockFacts{}
	}
	e := c.locks[lock]
	switch {
	case e == nil || e.version.revision < version.revision || (e.version.revision == version.revision && e.version != version):
		e = &lockFacts{version: version}
		c.locks[lock] = e
	case e.version != version:
		return nil
	}
	return e
}

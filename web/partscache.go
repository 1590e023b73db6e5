package web

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"sync"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/views"
)

// Bounds of the parts cache: how many locks it keeps parts of, and how many
// distinct views (page, filter, selection) of one lock's snapshot.
const (
	maxCachedLocks = 256
	maxCachedViews = 64
)

// partsCache keeps the rendered parts of each lock's newest snapshot. Every
// viewer of a lock fetches its parts after every change; viewers that show
// the same view of it share one render, so a hundred viewers cost one render
// per change and view, not a hundred. A lock keeps only its newest
// snapshot's parts: a newer snapshot evicts the older one's.
type partsCache struct {
	mu    sync.Mutex
	clock uint64
	locks map[string]*cachedLock
}

type cachedLock struct {
	version snapshotVersion
	used    uint64
	views   map[string]*renderedPart
}

// renderedPart is one rendered answer; done is closed once body or err is
// set, so viewers asking while it renders wait for it instead of rendering
// it again.
type renderedPart struct {
	done chan struct{}
	body []byte
	// cuts are where each section of body ends (views.LockPartSections),
	// and sums each section's hash: a socket sends the sections whose hash
	// changed since its last frame.
	cuts []int
	sums []uint64
	etag string
	err  error
}

// partsRender renders parts, with where each section ends and each
// section's hash.
type partsRender func() (body []byte, cuts []int, sums []uint64, err error)

// sections are r's sections, each a slice of r.body.
func (r *renderedPart) sections() [][]byte {
	out := make([][]byte, len(r.cuts))
	from := 0
	for i, to := range r.cuts {
		out[i] = r.body[from:to:to]
		from = to
	}
	return out
}

// snapshotVersion tells one snapshot of a lock from another. The revision
// alone would not: a re-watched lock may start counting again, and a
// connection change may keep the revision.
type snapshotVersion struct {
	revision  int64
	updatedAt int64
	known     bool
	state     string
}

func versionOf(s lockqueue.Snapshot, known bool) snapshotVersion {
	return snapshotVersion{revision: s.Revision, updatedAt: s.UpdatedAt.UnixNano(), known: known, state: string(s.Connection) + "\x00" + s.Error}
}

// viewKey is the canonical form of a table query: what tells two views of
// one snapshot apart.
func viewKey(q views.TableQuery) string {
	return fmt.Sprintf("%d\x00%d\x00%s\x00%s\x00%s", q.Page, q.Size, q.Filter, q.Selected, q.Show)
}

// get returns the parts of view of lock at version, rendering them with
// render unless they are cached or being rendered.
func (c *partsCache) get(lock string, version snapshotVersion, view string, render partsRender) *renderedPart {
	c.mu.Lock()
	if c.locks == nil {
		c.locks = map[string]*cachedLock{}
	}
	c.clock++
	e := c.locks[lock]
	switch {
	case e == nil || e.version.revision < version.revision || (e.version.revision == version.revision && e.version != version):
		e = &cachedLock{version: version, used: c.clock, views: map[string]*renderedPart{}}
		c.locks[lock] = e
		c.evictLocked()
	case e.version != version:
		// A request that read the lock just before a change: its snapshot
		// is already replaced, so it is rendered but not kept.
		e = nil
	}
	if e != nil {
		e.used = c.clock
		if r := e.views[view]; r != nil {
			c.mu.Unlock()
			<-r.done
			return r
		}
		if len(e.views) >= maxCachedViews {
			e = nil
		}
	}
	if e == nil {
		c.mu.Unlock()
		return renderPart(render)
	}
	r := &renderedPart{done: make(chan struct{})}
	e.views[view] = r
	c.mu.Unlock()

	r.fill(render)
	if r.err != nil {
		// A failed render is not kept: the next viewer tries again.
		c.mu.Lock()
		if e.views[view] == r {
			delete(e.views, view)
		}
		c.mu.Unlock()
	}
	return r
}

// renderPart renders a part that is not kept.
func renderPart(render partsRender) *renderedPart {
	r := &renderedPart{done: make(chan struct{})}
	r.fill(render)
	return r
}

// fill renders r, tags it with a hash of its body and lets its waiters go.
func (r *renderedPart) fill(render partsRender) {
	defer close(r.done)
	r.body, r.cuts, r.sums, r.err = render()
	if r.err != nil {
		return
	}
	sum := sha256.Sum256(r.body)
	r.etag = `"` + hex.EncodeToString(sum[:12]) + `"`
}

// sectionSum is the hash a section is told apart by.
func sectionSum(b []byte) uint64 {
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}

// evictLocked drops the least recently used lock beyond the bound.
func (c *partsCache) evictLocked() {
	for len(c.locks) > maxCachedLocks {
		var oldest string
		var used uint64
		first := true
		for k, e := range c.locks {
			if first || e.used < used {
				oldest, used, first = k, e.used, false
			}
		}
		delete(c.locks, oldest)
	}
}

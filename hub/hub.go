// Package hub fans lock-queue snapshots out to viewers. Each lock path is a
// topic holding its newest Snapshot; a subscriber has a mailbox of one that
// always holds the newest state it has not taken yet, so a slow viewer is
// coalesced to the present and never holds up the publisher or other viewers.
package hub

import (
	"slices"
	"strings"
	"sync"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// Hub holds the newest snapshot of every lock path and its subscribers.
// The zero value is not usable; call New.
//
// Snapshots are shared, not copied: a publisher must not modify a Snapshot
// (or the slices in it) after Publish, and readers must not modify what
// Latest, List or Sub.Next return.
type Hub struct {
	mu     sync.Mutex
	topics map[string]*topic
	// sums holds the summary of every topic with a snapshot, in no order
	// (each topic knows its index): a list of every lock copies this one
	// slice of pointers, not the topics.
	sums      []*lockqueue.Summary
	viewers   int
	published int64
	coalesced int64
}

type topic struct {
	// latest is the newest snapshot, which the summary points to too.
	latest *lockqueue.Snapshot
	seq    uint64 // latest's publish sequence number
	has    bool
	// idx is the topic's place in Hub.sums, valid while has.
	idx int
	// subs is nil until someone subscribes: most locks of a fleet are
	// never looked at.
	subs map[*Sub]struct{}
}

// New returns an empty Hub.
func New() *Hub {
	return &Hub{topics: map[string]*topic{}}
}

// Stats are counters for /metrics.
type Stats struct {
	// Topics is the number of lock paths with a snapshot.
	Topics int
	// Viewers is the number of open subscriptions.
	Viewers int
	// Published counts snapshots published since New.
	Published int64
	// Coalesced counts snapshots a subscriber never saw because a newer one
	// replaced it in its mailbox before it took it.
	Coalesced int64
	// Pending is the number of snapshots waiting in mailboxes; never more
	// than Viewers, which is what bounds the hub's memory.
	Pending int
}

// Publish makes s the newest state of its lock, its parent bar stamped
// (lockqueue.StampParent), and signals its subscribers.
// Topics are keyed by s.Key(): the path for ZooKeeper, service:name for
// another lock service.
// It never blocks on a subscriber. A snapshot without a path is dropped.
func (h *Hub) Publish(s lockqueue.Snapshot) {
	if s.Path == "" {
		return
	}
	// Stamped and summarised outside the lock: both walk the nodes.
	lockqueue.StampParent(&s)
	latest := &s
	sum := latest.Summarize()
	key := sum.Key()
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.topics[key]
	if t == nil {
		t = &topic{}
		h.topics[key] = t
	}
	if !t.has {
		t.idx = len(h.sums)
		h.sums = append(h.sums, nil)
	}
	h.sums[t.idx] = &sum
	h.published++
	t.latest, t.seq, t.has = latest, uint64(h.published), true
	for sub := range t.subs {
		if sub.offer(s, t.seq) {
			h.coalesced++
		}
	}
}

// Republish offers path's newest snapshot again, under a new sequence
// number, to its subscribers: what a viewer's frames say beside the
// snapshot (whether the history records) changed. Nothing when path has
// none.
func (h *Hub) Republish(path string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.topics[path]
	if t == nil || !t.has {
		return
	}
	h.published++
	t.seq = uint64(h.published)
	for sub := range t.subs {
		if sub.offer(*t.latest, t.seq) {
			h.coalesced++
		}
	}
}

// Latest returns the newest snapshot of path.
func (h *Hub) Latest(path string) (lockqueue.Snapshot, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.topics[path]
	if t == nil || !t.has {
		return lockqueue.Snapshot{}, false
	}
	return *t.latest, true
}

// Has reports whether path has a snapshot.
func (h *Hub) Has(path string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.topics[path]
	return t != nil && t.has
}

// List returns the newest snapshot of every path, sorted by path.
func (h *Hub) List() []lockqueue.Snapshot {
	h.mu.Lock()
	out := make([]lockqueue.Snapshot, 0, len(h.topics))
	for _, t := range h.topics {
		if t.has {
			out = append(out, *t.latest)
		}
	}
	h.mu.Unlock()
	slices.SortFunc(out, func(a, b lockqueue.Snapshot) int { return strings.Compare(a.Key(), b.Key()) })
	return out
}

// Summaries appends the summary of every lock with a snapshot to buf, in
// no particular order, and returns it. The summaries are shared and never
// change: a new snapshot gets a new one. Pass a reused buf to list 100,000
// locks without an allocation.
func (h *Hub) Summaries(buf []*lockqueue.Summary) []*lockqueue.Summary {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append(buf, h.sums...)
}

// Remove forgets path (a finished simulator run, say). Its subscribers are
// ended: their Done channels close.
func (h *Hub) Remove(path string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.topics[path]
	if t == nil {
		return
	}
	delete(h.topics, path)
	if t.has {
		h.dropSummary(t)
	}
	for sub := range t.subs {
		sub.end()
		h.viewers--
	}
}

// Subscribe opens a mailbox for path. When path already has a snapshot it is
// waiting in the mailbox at once; otherwise the first Publish fills it.
// Close the Sub when done.
func (h *Hub) Subscribe(path string) *Sub {
	sub := &Sub{hub: h, path: path, c: make(chan struct{}, 1), done: make(chan struct{})}
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.topics[path]
	if t == nil {
		// A topic without a snapshot only lives while someone waits on it.
		t = &topic{}
		h.topics[path] = t
	}
	if t.subs == nil {
		t.subs = map[*Sub]struct{}{}
	}
	t.subs[sub] = struct{}{}
	h.viewers++
	if t.has {
		sub.offer(*t.latest, t.seq)
	}
	return sub
}

// Stats returns the hub's counters.
func (h *Hub) Stats() Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := Stats{Viewers: h.viewers, Published: h.published, Coalesced: h.coalesced}
	for _, t := range h.topics {
		if t.has {
			st.Topics++
		}
		for sub := range t.subs {
			sub.mu.Lock()
			if sub.has {
				st.Pending++
			}
			sub.mu.Unlock()
		}
	}
	return st
}

// dropSummary takes t's summary out of h.sums, moving the last one into its
// place. Called with h.mu held.
func (h *Hub) dropSummary(t *topic) {
	last := len(h.sums) - 1
	if t.idx != last {
		moved := h.sums[last]
		h.sums[t.idx] = moved
		h.topics[moved.Key()].idx = t.idx
	}
	h.sums[last] = nil
	h.sums = h.sums[:last]
}

func (h *Hub) unsubscribe(sub *Sub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.topics[sub.path]
	if t == nil {
		return // removed, and counted then
	}
	if _, ok := t.subs[sub]; !ok {
		return
	}
	delete(t.subs, sub)
	h.viewers--
	if !t.has && len(t.subs) == 0 {
		delete(h.topics, sub.path)
	}
}

// Sub is one subscriber's mailbox for one path.
type Sub struct {
	hub  *Hub
	path string
	c    chan struct{} // capacity 1: "the mailbox is not empty"
	done chan struct{}

	mu      sync.Mutex
	pending lockqueue.Snapshot
	seq     uint64
	has     bool
	ended   bool
}

// C receives a signal when the mailbox holds a snapshot. One signal may stand
// for several publishes; take the newest with Next.
func (s *Sub) C() <-chan struct{} { return s.c }

// Done is closed when the subscription ends: Close was called or the path
// was removed from the hub.
func (s *Sub) Done() <-chan struct{} { return s.done }

// Next takes the newest snapshot from the mailbox; ok is false when it is
// empty.
func (s *Sub) Next() (snap lockqueue.Snapshot, ok bool) {
	snap, _, ok = s.NextSeq()
	return snap, ok
}

// NextSeq is Next with the snapshot's publish sequence number: unique per
// Publish across the hub, growing, never 0. Two subscribers taking the same
// number hold the very same snapshot, so work derived from it (an encoded
// frame) can be shared between them.
func (s *Sub) NextSeq() (snap lockqueue.Snapshot, seq uint64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap, seq, ok = s.pending, s.seq, s.has
	s.pending, s.seq, s.has = lockqueue.Snapshot{}, 0, false
	return snap, seq, ok
}

// Path is the subscribed lock path.
func (s *Sub) Path() string { return s.path }

// Close ends the subscription. It is safe to call more than once.
func (s *Sub) Close() {
	s.hub.unsubscribe(s)
	s.end()
}

// offer puts snap in the mailbox, replacing what was there; it reports
// whether an untaken snapshot was replaced. Called with the hub's lock held.
func (s *Sub) offer(snap lockqueue.Snapshot, seq uint64) (replaced bool) {
	s.mu.Lock()
	replaced = s.has
	s.pending, s.seq, s.has = snap, seq, true
	s.mu.Unlock()
	select {
	case s.c <- struct{}{}:
	default: // a signal is already pending; it covers this snapshot too
	}
	return replaced
}

func (s *Sub) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended {
		s.ended = true
		s.pending, s.seq, s.has = lockqueue.Snapshot{}, 0, false
		close(s.done)
	}
}

package web

import (
	"slices"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// Every viewer of a lock usually holds the same snapshot and gets the same
// next one, so the frame between them is the same bytes for all. A
// frameCache per lock path computes each frame once and hands it to every
// socket that needs it; a viewer coalesced past some snapshots needs
// another frame (from what it holds to the newest), which is computed and
// shared the same way.
//
// Frames are keyed by the hub's publish sequence numbers (hub.Sub.NextSeq),
// unique per snapshot, not by revision: a connection change or a watch-table
// poll republishes a lock with the same pzxid.

// maxFrameEntries bounds one path's cache: the frames to the newest
// snapshot from every base a viewer held. Past it, frames are computed per
// socket and not kept.
const maxFrameEntries = 64

// keepLimit: frames up to this size (deltas, small snapshots) are held until
// a newer snapshot comes; bigger ones only while a socket uses them.
const keepLimit = 16 << 10

type frameKey struct {
	base uint64 // the seq of the snapshot the socket holds; 0: none (a whole snapshot)
	seq  uint64 // the seq of the snapshot to send
	// view is the window the socket looks at (window.go); sockets on the
	// same window of the same snapshots share their frames too.
	view view
	// epoch, for a parts socket, is how many times the history's status
	// had changed (Server.historyEpoch): the parts say it.
	epoch uint64
}

// frameEntry is one frame, computed by the first socket that needs it.
// The others wait on done, which wakes them all at once; a sync.Once would
// queue them on its mutex, and a change to 100 viewers then waited for 99
// mutex hand-offs, one scheduling delay each: the mutex profile of
// BenchmarkChangeToFrame had nearly all its contention there.
type frameEntry struct {
	claimed atomic.Bool
	done    chan struct{} // closed once b, kind and err are set
	b       []byte
	kind    string
	err     error
	// sent is the window of the snapshot the frame takes a windowed socket
	// to, which that socket's next frame is computed against.
	sent lockqueue.Snapshot
	// partsBase are the hashes of the parts' sections the frame was
	// computed against (the socket's that computed it), partsSent those
	// of the parts a socket has once it has the frame.
	partsBase, partsSent []uint64
}

func newFrameEntry() *frameEntry { return &frameEntry{done: make(chan struct{})} }

// compute sets the entry with encode if no socket has claimed it yet, and
// otherwise waits for the socket that has.
func (e *frameEntry) compute(encode func() ([]byte, string, error)) {
	if !e.claimed.CompareAndSwap(false, true) {
		<-e.done
		return
	}
	defer close(e.done)
	e.b, e.kind, e.err = encode()
}

// frameCache holds the frames to the newest snapshot of one path that some
// socket has asked for. Each is held through a weak pointer, so a big frame
// (a whole snapshot of a big queue is hundreds of KB) lives only while some
// socket still uses it: viewers that wake together share it, an idle lock
// keeps none. Small frames (deltas) are also held strongly, until a newer
// snapshot comes, for viewers that wake later.
type frameCache struct {
	// hot is the entry handed out last, looked up without the lock: the
	// sockets of one lock wake together and ask for the same frame, and
	// queueing them on mu one by one delayed the last by a scheduling
	// delay each (the mutex profile's top entry once sync.Once was gone).
	hot atomic.Pointer[hotEntry]

	mu   sync.Mutex
	refs int // sockets using it
	// names holds the node names of the last few snapshots by seq: each
	// change's delta needs those of the snapshot before and the new one,
	// and what a delta learnt of the new one's (that none repeats, or
	// their map when it needed one) serves the next change's delta.
	names  [namesKept]seqNames
	newest uint64
	weak   map[frameKey]weak.Pointer[frameEntry]
	kept   map[frameKey]*frameEntry
	// facts are the newest long snapshot's window facts, which every
	// window of it shares.
	facts *seqFacts
}

type seqFacts struct {
	seq  uint64
	once sync.Once
	f    *windowFacts
}

// windowFacts returns the window facts of snap, published with seq: read
// once for all the windows of it the lock's sockets look at. An older
// snapshot's are read afresh.
func (fc *frameCache) windowFacts(snap *lockqueue.Snapshot, seq uint64) *windowFacts {
	fc.mu.Lock()
	e := fc.facts
	switch {
	case e == nil || seq > e.seq:
		e = &seqFacts{seq: seq}
		fc.facts = e
	case seq < e.seq:
		e = &seqFacts{seq: seq}
	}
	fc.mu.Unlock()
	e.once.Do(func() { e.f = readWindowFacts(snap) })
	return e.f
}

// namesKept: the snapshot viewers hold and the newest, and one more for a
// viewer coalesced past one publish.
const namesKept = 3

type seqNames struct {
	seq   uint64
	names *names
}

// namesOf returns the names of snap's nodes, snap published with seq.
func (fc *frameCache) namesOf(snap *lockqueue.Snapshot, seq uint64) *names {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	oldest := 0
	for i, e := range fc.names {
		if e.seq == seq && e.names != nil {
			return e.names
		}
		if e.seq < fc.names[oldest].seq {
			oldest = i
		}
	}
	n := newNames(snap.Nodes)
	if seq > fc.names[oldest].seq {
		fc.names[oldest] = seqNames{seq: seq, names: n}
	}
	return n
}

type hotEntry struct {
	key frameKey
	e   weak.Pointer[frameEntry]
}

// entry returns the shared entry for k, or a private one when k's snapshot
// is older than the newest seen (a socket that took its snapshot just
// before a publish) or the cache is full.
func (fc *frameCache) entry(k frameKey) *frameEntry {
	if h := fc.hot.Load(); h != nil && h.key == k {
		if e := h.e.Value(); e != nil {
			return e
		}
	}
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if k.seq > fc.newest {
		fc.newest = k.seq
		clear(fc.weak)
		clear(fc.kept)
	}
	if k.seq < fc.newest {
		return newFrameEntry()
	}
	if e := fc.weak[k].Value(); e != nil {
		return e
	}
	if len(fc.weak) >= maxFrameEntries {
		for old, wp := range fc.weak {
			if wp.Value() == nil {
				delete(fc.weak, old)
			}
		}
		if len(fc.weak) >= maxFrameEntries {
			return newFrameEntry()
		}
	}
	e := newFrameEntry()
	wp := weak.Make(e)
	fc.weak[k] = wp
	fc.hot.Store(&hotEntry{key: k, e: wp})
	return e
}

// keep holds e, a small frame (its caller checked the size), strongly while
// it is the newest.
func (fc *frameCache) keep(k frameKey, e *frameEntry) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if k.seq == fc.newest && fc.weak[k].Value() == e {
		fc.kept[k] = e
	}
}

// frames returns path's frame cache, counting the caller as a user until it
// calls releaseFrames.
func (s *Server) frames(path string) *frameCache {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	fc := s.caches[path]
	if fc == nil {
		fc = &frameCache{weak: map[frameKey]weak.Pointer[frameEntry]{}, kept: map[frameKey]*frameEntry{}}
		s.caches[path] = fc
	}
	fc.refs++
	return fc
}

func (s *Server) releaseFrames(path string, fc *frameCache) {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	fc.refs--
	if fc.refs == 0 && s.caches[path] == fc {
		delete(s.caches, path)
	}
}

// sockFrames is one socket's side: what it sent last. The snapshot is the
// hub's, shared, not a copy.
type sockFrames struct {
	cache *frameCache
	view  view
	// parts renders what a parts socket's frames carry beside the nodes
	// (pageframe.go); nil for a socket that did not ask. partsHad are the
	// hashes of the sections of the parts it sent last: a frame brings
	// those that changed.
	parts    partsFunc
	partsHad []uint64
	// latest, with parts, reads the other locks of a deadlock through
	// several (scene.go).
	latest  latestFunc
	epoch   func() uint64
	prev    lockqueue.Snapshot
	prevSeq uint64
	sent    bool
}

// next returns the frame that takes this socket from what it sent last to
// snap (published with sequence number seq), and records snap as sent.
func (f *sockFrames) next(snap lockqueue.Snapshot, seq uint64) ([]byte, string, error) {
	k := frameKey{seq: seq, view: f.view}
	if f.parts != nil {
		k.epoch = f.epoch()
	}
	var prev *lockqueue.Snapshot
	if f.sent && f.prev.Path == snap.Path {
		k.base, prev = f.prevSeq, &f.prev
	}
	e := f.cache.entry(k)
	e.compute(func() ([]byte, string, error) { return f.encode(e, k, prev, snap, seq) })
	if e.err == nil && f.parts != nil && !slices.Equal(e.partsBase, f.partsHad) {
		// Whoever computed the shared frame had other sections than this
		// socket (one of them came back from a private frame): this one
		// gets a frame of its own.
		e = newFrameEntry()
		e.compute(func() ([]byte, string, error) { return f.encode(e, frameKey{}, prev, snap, seq) })
	}
	if e.err != nil {
		return nil, "", e.err
	}
	if f.view.on {
		snap = e.sent
	}
	f.prev, f.prevSeq, f.sent = snap, seq, true
	f.partsHad = e.partsSent
	return e.b, e.kind, nil
}

// encode computes e, the frame from prev to snap (published with seq) for
// this socket's view, and keeps it for the others when it is small (k is
// e's key; zero for a frame of this socket's own).
func (f *sockFrames) encode(e *frameEntry, k frameKey, prev *lockqueue.Snapshot, snap lockqueue.Snapshot, seq uint64) ([]byte, string, error) {
	var b []byte
	var kind string
	var err error
	if f.view.on {
		// A window is a few hundred nodes, made for this view: its names
		// are indexed afresh, not kept by seq with the whole snapshots'.
		var win *Window
		var facts *windowFacts
		if len(snap.Nodes) > windowWholeUpTo {
			facts = f.cache.windowFacts(&snap, seq)
		}
		e.sent, win = windowOf(snap, f.view, facts)
		b, kind, err = encodeWindowFrame(prev, e.sent, win, nil)
		if err == nil && f.parts != nil {
			e.partsBase = f.partsHad
			b, e.partsSent, err = f.withPage(b, snap)
		}
	} else {
		b, kind, err = encodeFrame(prev, snap, func(ofPrev bool) *names {
			if ofPrev {
				return f.cache.namesOf(prev, k.base)
			}
			return f.cache.namesOf(&snap, seq)
		})
	}
	if err == nil && len(b) <= keepLimit && k != (frameKey{}) {
		f.cache.keep(k, e)
	}
	return b, kind, err
}

package web

import (
	"sync"
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
}

type frameEntry struct {
	once sync.Once
	b    []byte
	kind string
	err  error
}

// frameCache holds the frames to the newest snapshot of one path that some
// socket has asked for. Each is held through a weak pointer, so a big frame
// (a whole snapshot of a big queue is hundreds of KB) lives only while some
// socket still uses it: viewers that wake together share it, an idle lock
// keeps none. Small frames (deltas) are also held strongly, until a newer
// snapshot comes, for viewers that wake later.
type frameCache struct {
	mu     sync.Mutex
	refs   int // sockets using it
	newest uint64
	weak   map[frameKey]weak.Pointer[frameEntry]
	kept   map[frameKey]*frameEntry
}

// entry returns the shared entry for k, or a private one when k's snapshot
// is older than the newest seen (a socket that took its snapshot just
// before a publish) or the cache is full.
func (fc *frameCache) entry(k frameKey) *frameEntry {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if k.seq > fc.newest {
		fc.newest = k.seq
		clear(fc.weak)
		clear(fc.kept)
	}
	if k.seq < fc.newest {
		return &frameEntry{}
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
			return &frameEntry{}
		}
	}
	e := &frameEntry{}
	fc.weak[k] = weak.Make(e)
	return e
}

// keep holds a computed small frame strongly while it is the newest.
func (fc *frameCache) keep(k frameKey, e *frameEntry) {
	if len(e.b) > keepLimit {
		return
	}
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
	cache   *frameCache
	prev    lockqueue.Snapshot
	prevSeq uint64
	sent    bool
}

// next returns the frame that takes this socket from what it sent last to
// snap (published with sequence number seq), and records snap as sent.
func (f *sockFrames) next(snap lockqueue.Snapshot, seq uint64) ([]byte, string, error) {
	k := frameKey{seq: seq}
	var prev *lockqueue.Snapshot
	if f.sent && f.prev.Path == snap.Path {
		k.base, prev = f.prevSeq, &f.prev
	}
	e := f.cache.entry(k)
	e.once.Do(func() {
		e.b, e.kind, e.err = encodeFrame(prev, snap)
		if e.err == nil {
			f.cache.keep(k, e)
		}
	})
	if e.err != nil {
		return nil, "", e.err
	}
	f.prev, f.prevSeq, f.sent = snap, seq, true
	return e.b, e.kind, nil
}

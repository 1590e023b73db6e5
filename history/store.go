package history

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// Defaults of Options.
const (
	DefaultMaxAge      = 7 * 24 * time.Hour
	DefaultMaxSize     = 1 << 30
	DefaultSegmentSize = 4 << 20
	DefaultSegmentAge  = 10 * time.Minute
	// DefaultFlushEvery bounds what kill -9 loses: what was recorded but
	// not yet written. Written data survives the process (the page cache
	// has it); fsync, once a second at most, guards against the machine
	// going down.
	DefaultFlushEvery = 200 * time.Millisecond
	DefaultSyncEvery  = time.Second
	// DefaultCacheSize bounds the segments kept in memory for queries,
	// as their frames and strings (keptSegment): a segment of a
	// 100,000-node queue (its keyframe and the events after it) holds
	// about 20 MB so. One too big for the bound is read from its file at
	// each query instead, frame by frame.
	DefaultCacheSize = 64 << 20
)

// ErrNoHistory: the store has nothing of the lock at the time asked.
var ErrNoHistory = errors.New("no history")

// ErrLocked: another process (or another Store in this one) writes to the
// directory.
var ErrLocked = errors.New("history: data directory in use by another zklockviz")

// Options configure a Store.
type Options struct {
	// Dir holds the segment files; created if missing.
	Dir string
	// MaxAge and MaxSize bound what is kept; the oldest segments go first.
	MaxAge  time.Duration
	MaxSize int64
	// SegmentSize and SegmentAge: when the current segment is closed and a
	// new one started with a keyframe of every lock. Smaller segments make
	// "the queue at time T" cheaper (one segment is replayed) and cost a
	// keyframe each.
	SegmentSize int64
	SegmentAge  time.Duration
	FlushEvery  time.Duration
	SyncEvery   time.Duration
	// CacheSize bounds, in bytes, the closed segments kept in memory for
	// queries, and apart from them the part of the segment being written
	// read so far.
	CacheSize int64
	// Now is the clock; time.Now when nil.
	Now    func() time.Time
	Logger *slog.Logger
}

func (o *Options) defaults() {
	o.MaxAge = cmp.Or(o.MaxAge, DefaultMaxAge)
	o.MaxSize = cmp.Or(o.MaxSize, DefaultMaxSize)
	o.SegmentSize = cmp.Or(o.SegmentSize, DefaultSegmentSize)
	o.SegmentAge = cmp.Or(o.SegmentAge, DefaultSegmentAge)
	o.FlushEvery = cmp.Or(o.FlushEvery, DefaultFlushEvery)
	o.SyncEvery = cmp.Or(o.SyncEvery, DefaultSyncEvery)
	o.CacheSize = cmp.Or(o.CacheSize, DefaultCacheSize)
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// segment is one file of the store.
type segment struct {
	path  string
	seq   int64
	start time.Time
	size  int64
	// keyframe is the size of the segment once its keyframe is written
	// (-1 until then): what it grows by past that counts toward
	// SegmentSize, so that a keyframe bigger than SegmentSize (a queue of
	// 100,000 nodes) does not close every segment as soon as it is made.
	keyframe int64
}

// Store is the embedded history store: segment files of framed, checksummed
// records under one directory, written by one process. Every method is
// safe for concurrent use.
type Store struct {
	opts Options

	mu       sync.Mutex
	segs     []segment // oldest first; the last is being written
	cur      *os.File
	enc      *encoder
	states   map[string]*State
	lastSync time.Time
	lock     *os.File
	events   int64
	closed   bool
	// writeErr is why the last write failed (a full disk, a directory
	// made read-only); nil while writes work. See lost.
	writeErr    error
	failedSince time.Time
	lastWritten time.Time
	retrying    bool

	cacheMu sync.Mutex
	cache   map[int64]*keptSegment // closed segments in memory, by seq
	// cacheOrder is the cached segments' seqs, oldest put first: the
	// first to go when a new one needs the room.
	cacheOrder []int64
	cacheBytes int64
	// overBudget are the closed segments that hold more than CacheSize
	// in memory: read from their files, never collected for the cache.
	overBudget map[int64]bool
	// live is the segment being written, kept as far as it was read:
	// scrubbing through the last minutes reads only what is new. over:
	// it holds more than CacheSize, so queries read it from its file.
	live struct {
		seq  int64
		dec  *segmentReader
		kept keptSegment
		over bool
	}

	// reading admits one query at a time to read a segment from its
	// file: each decodes the segment's strings and frames anew (a big
	// queue's keyframe alone is 100 MB and more in flight), and a page
	// asks for its figures, density and strip at once.
	reading chan struct{}
	// querying admits as many walks and replays at once as the machine
	// has cores, less one: a lock page asks its strip, density, moments
	// and figures at once, and on two cores the next page's HTML and
	// socket waited behind them.
	querying chan struct{}

	stop chan struct{}
	done chan struct{}
}

// Open opens (or creates) the store in opts.Dir. The last segment of an
// earlier process is checked frame by frame and a torn tail truncated; the
// locks' last states are recovered from it, and a gap is recorded for each
// from its last record until now.
func Open(opts Options) (*Store, error) {
	opts.defaults()
	if opts.Dir == "" {
		return nil, errors.New("history: no data directory")
	}
	if err := os.MkdirAll(opts.Dir, 0o750); err != nil {
		return nil, fmt.Errorf("history: create %s: %w", opts.Dir, err)
	}
	s := &Store{opts: opts, states: map[string]*State{}, cache: map[int64]*keptSegment{}, overBudget: map[int64]bool{}, reading: make(chan struct{}, 1), querying: make(chan struct{}, max(1, runtime.GOMAXPROCS(0)-1)), stop: make(chan struct{}), done: make(chan struct{})}
	if err := s.takeLock(); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			s.lock.Close()
		}
	}()
	if err := s.load(); err != nil {
		return nil, err
	}
	now := opts.Now()
	last, err := s.recover()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.states {
		st.apply(Event{Time: now, Kind: Gap})
	}
	if err := s.newSegment(now); err != nil {
		return nil, err
	}
	if !last.IsZero() {
		for _, key := range s.lockKeys() {
			s.append(key, Event{Time: now, Kind: Gap, Since: last, Message: "not recording (zklockviz was not running)"})
		}
	}
	s.retain(now)
	go s.background()
	ok = true
	return s, nil
}

// takeLock holds an exclusive flock on the directory's lock file for the
// store's life: two writers would interleave segments. The kernel drops
// it when the process dies, kill -9 included.
func (s *Store) takeLock() error {
	f, err := os.OpenFile(filepath.Join(s.opts.Dir, "lock"), os.O_CREATE|os.O_RDWR, 0o640)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("%w: %s", ErrLocked, s.opts.Dir)
		}
		return fmt.Errorf("history: lock %s: %w", s.opts.Dir, err)
	}
	s.lock = f
	return nil
}

// load lists the segment files, oldest first.
func (s *Store) load() error {
	ents, err := os.ReadDir(s.opts.Dir)
	if err != nil {
		return fmt.Errorf("history: read %s: %w", s.opts.Dir, err)
	}
	for _, e := range ents {
		seq, start, ok := parseSegmentName(e.Name())
		if !ok {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return fmt.Errorf("history: %w", err)
		}
		s.segs = append(s.segs, segment{path: filepath.Join(s.opts.Dir, e.Name()), seq: seq, start: start, size: info.Size()})
	}
	slices.SortFunc(s.segs, func(a, b segment) int { return cmp.Compare(a.seq, b.seq) })
	return nil
}

func segmentName(seq int64, start time.Time) string {
	return fmt.Sprintf("%012d-%d.seg", seq, start.UnixMilli())
}

func parseSegmentName(name string) (int64, time.Time, bool) {
	base, ok := strings.CutSuffix(name, ".seg")
	if !ok {
		return 0, time.Time{}, false
	}
	a, b, ok := strings.Cut(base, "-")
	if !ok {
		return 0, time.Time{}, false
	}
	seq, err1 := strconv.ParseInt(a, 10, 64)
	ms, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil {
		return 0, time.Time{}, false
	}
	return seq, time.UnixMilli(ms), true
}

// recover reads the previous process's last segment: it truncates a torn
// tail and rebuilds each lock's last state. A last segment with nothing
// whole in it (the process died within a flush of starting it) is
// removed, and the one before it read instead: every segment that has a
// frame starts with a keyframe of every lock. It returns the last
// record's time.
func (s *Store) recover() (time.Time, error) {
	var last time.Time
	for len(s.segs) > 0 {
		i := len(s.segs) - 1
		seg := s.segs[i]
		recs, good, err := readSegment(seg)
		if err != nil && !errors.Is(err, errCorrupt) {
			return last, err
		}
		if len(recs) == 0 {
			s.opts.Logger.Warn("history: removing a segment with nothing whole in it (the process stopped as it began)", "segment", seg.path)
			if err := os.Remove(seg.path); err != nil {
				return last, fmt.Errorf("history: %w", err)
			}
			s.segs = s.segs[:i]
			continue
		}
		if good < seg.size {
			s.opts.Logger.Warn("history: truncating a torn segment tail (the process stopped mid-write)",
				"segment", seg.path, "size", seg.size, "kept", good)
			if err := os.Truncate(seg.path, good); err != nil {
				return last, fmt.Errorf("history: truncate %s: %w", seg.path, err)
			}
			s.segs[i].size = good
		}
		for _, r := range recs {
			st := s.states[r.Lock]
			if st == nil {
				st = &State{Lock: r.Lock}
				s.states[r.Lock] = st
			}
			st.apply(r.Event)
			if r.Time.After(last) {
				last = r.Time
			}
		}
		return last, nil
	}
	return last, nil
}

// readSegment decodes a whole segment file. good is the length of its
// whole frames; errCorrupt says the rest is torn or damaged.
func readSegment(seg segment) ([]record, int64, error) {
	f, err := os.Open(seg.path)
	if err != nil {
		return nil, 0, fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	d, err := newSegmentReader(f, seg.start)
	if err != nil {
		return nil, 0, fmt.Errorf("history: %s: %w", seg.path, err)
	}
	var recs []record
	for {
		recs, err = d.next(recs)
		if err == io.EOF {
			return recs, d.good, nil
		}
		if err != nil {
			return recs, d.good, err
		}
	}
}

// newSegment closes the current segment and starts one at t with a
// keyframe of every lock. Called with mu held.
func (s *Store) newSegment(t time.Time) error {
	if s.cur != nil {
		if err := s.writeFrame(true); err != nil {
			return err
		}
		if err := s.cur.Close(); err != nil {
			return fmt.Errorf("history: close segment: %w", err)
		}
	}
	if n := len(s.segs); n > 0 && !t.After(s.segs[n-1].start) {
		// Segment starts must increase: a query picks the segment by time.
		t = s.segs[n-1].start.Add(time.Millisecond)
	}
	seq := int64(1)
	if n := len(s.segs); n > 0 {
		seq = s.segs[n-1].seq + 1
	}
	seg := segment{path: filepath.Join(s.opts.Dir, segmentName(seq, t)), seq: seq, start: t.Truncate(time.Millisecond), keyframe: -1}
	f, err := os.OpenFile(seg.path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return fmt.Errorf("history: new segment: %w", err)
	}
	if _, err := f.WriteString(magic); err != nil {
		f.Close()
		os.Remove(seg.path) // a segment without its magic would stop Open
		return fmt.Errorf("history: new segment: %w", err)
	}
	seg.size = int64(len(magic))
	s.segs = append(s.segs, seg)
	s.cur, s.enc = f, newEncoder(seg.start)
	for key, st := range s.states {
		// A lock that has been empty and unchanged for the whole retention
		// is forgotten: locks named per job would otherwise fill every
		// keyframe forever. Seen again, it starts with a keyframe.
		if len(st.nodes) == 0 && len(st.Alerts) == 0 && t.Sub(st.Time) > s.opts.MaxAge {
			delete(s.states, key)
		}
	}
	for _, key := range s.lockKeys() {
		eachKeyframeEvent(s.states[key], seg.start, func(ev Event) { s.enc.event(key, ev) })
	}
	return nil
}

func (s *Store) lockKeys() []string {
	keys := make([]string, 0, len(s.states))
	for k := range s.states {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// writeFrame writes what is buffered as one frame, and fsyncs when sync
// is set or a second has passed. Called with mu held.
func (s *Store) writeFrame(sync bool) error {
	if s.writeErr != nil {
		s.enc.frame() // dropped: the segment cannot go on (lost)
		return s.writeErr
	}
	now := s.opts.Now()
	if fr := s.enc.frame(); fr != nil {
		if _, err := s.cur.Write(fr); err != nil {
			return s.lost(fmt.Errorf("history: write: %w", err))
		}
		g := &s.segs[len(s.segs)-1]
		g.size += int64(len(fr))
		if g.keyframe < 0 {
			g.keyframe = g.size
		}
		s.lastWritten = now
	}
	if sync || now.Sub(s.lastSync) >= s.opts.SyncEvery {
		if err := s.cur.Sync(); err != nil {
			return s.lost(fmt.Errorf("history: fsync: %w", err))
		}
		s.lastSync = now
	}
	return nil
}

// append encodes one event and applies it to the lock's state. Called
// with mu held.
func (s *Store) append(key string, ev Event) {
	st := s.states[key]
	if st == nil {
		st = &State{Lock: key}
		s.states[key] = st
	}
	s.enc.event(key, ev)
	st.apply(ev)
	s.events++
}

// Record stores the changes snap makes to its lock and returns them. The
// first snapshot of a lock, or of a lock after a gap, is stored as a
// keyframe: what was there before the recorder saw it is not a change it
// saw happen.
func (s *Store) Record(snap lockqueue.Snapshot) ([]Event, error) {
	var out []Event
	written, err := s.record(snap, func(ev Event) { out = append(out, ev) })
	if !written {
		return nil, err
	}
	return out, err
}

// recordCounted is Record for the recorder, whose metrics need of the
// events only how many there were and the few they time (Acquired, Left):
// a change of every node of a big queue (a watch-table verdict, a first
// sight) made a list of a thousand 384-byte events per lock only to count
// them, as all 100 locks of cmd's BenchmarkMemory changed at once.
func (s *Store) recordCounted(snap lockqueue.Snapshot) (n int, timed []Event, err error) {
	written, err := s.record(snap, func(ev Event) {
		n++
		if ev.Kind == Acquired || ev.Kind == Left {
			timed = append(timed, ev)
		}
	})
	if !written {
		return 0, nil, err
	}
	return n, timed, err
}

// record stores the changes snap makes, calling each with every one that
// is not synthetic. written is false when they were kept in memory for the
// keyframe after a write error (err), not written: Record returns none.
func (s *Store) record(snap lockqueue.Snapshot, each func(Event)) (written bool, err error) {
	key := KeyOf(snap)
	t := snap.UpdatedAt
	if t.IsZero() {
		t = s.opts.Now()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false, errClosed
	}
	if start := s.segs[len(s.segs)-1].start; t.Before(start) {
		// Taken just before the segment began: a query picks segments by
		// time, so the record must not predate its own.
		t = start
	}
	// Each event is encoded and applied as it is found: a big queue's
	// restatement is never a list of its events (changes tells them in
	// an order that allows applying them to the state it diffs against).
	reserved := false
	changes(s.states[key], snap, t, func(ev Event) {
		if ev.Kind == Queued && !reserved {
			// The nodes that left came first: the state's nodes will be
			// snap's. (A keyframe event made the state of a new lock.)
			reserved = true
			s.states[key].reserve(len(snap.Nodes))
		}
		s.append(key, ev)
		if !ev.Synthetic {
			each(ev)
		}
	})
	s.states[key].noteLeases(snap, t)
	if s.writeErr != nil {
		// Kept in memory for the keyframe that follows the gap, not written.
		return false, s.writeErr
	}
	if s.enc.buffered() > 1<<20 {
		if err := s.writeFrame(false); err != nil {
			return true, err
		}
	}
	return true, nil
}

// RecordGap stores that the recorder saw nothing of lock from since to
// now, and why.
func (s *Store) RecordGap(lock string, since time.Time, why string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	s.append(lock, Event{Time: s.opts.Now(), Kind: Gap, Since: since, Message: why})
	return nil
}

// background writes, fsyncs, rotates and applies retention.
func (s *Store) background() {
	defer close(s.done)
	tick := time.NewTicker(s.opts.FlushEvery)
	defer tick.Stop()
	lastRetain := s.opts.Now()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
		if err := s.Flush(false); err != nil && !errors.Is(err, errNotWriting) {
			s.opts.Logger.Error("history: flush", "err", err)
		}
		if now := s.opts.Now(); now.Sub(lastRetain) >= time.Minute {
			lastRetain = now
			s.mu.Lock()
			s.retain(now)
			s.mu.Unlock()
		}
	}
}

// Flush writes what is buffered; with sync, fsyncs too. It starts a new
// segment when the current one is due.
func (s *Store) Flush(sync bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	return s.flushLocked(sync)
}

func (s *Store) flushLocked(sync bool) error {
	if s.writeErr != nil {
		return s.retryWrite()
	}
	if err := s.writeFrame(sync); err != nil {
		return err
	}
	cur := s.segs[len(s.segs)-1]
	now := s.opts.Now()
	if cur.size-max(cur.keyframe, 0) >= s.opts.SegmentSize || now.Sub(cur.start) >= s.opts.SegmentAge {
		if err := s.newSegment(now); err != nil {
			return err
		}
		s.retain(now)
	}
	return nil
}

// retain deletes the oldest segments while they are older than MaxAge or
// the store is over MaxSize; never the segment being written. Called with
// mu held.
func (s *Store) retain(now time.Time) {
	var total int64
	for _, g := range s.segs {
		total += g.size
	}
	cutoff := now.Add(-s.opts.MaxAge)
	for len(s.segs) > 1 {
		old, next := s.segs[0], s.segs[1]
		if !next.start.Before(cutoff) && total <= s.opts.MaxSize {
			return
		}
		if err := os.Remove(old.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.opts.Logger.Error("history: retention", "segment", old.path, "err", err)
			return
		}
		s.opts.Logger.Debug("history: retention removed a segment", "segment", old.path, "start", old.start)
		total -= old.size
		s.cacheMu.Lock()
		s.uncache(old.seq)
		s.cacheMu.Unlock()
		s.segs = s.segs[1:]
	}
}

// Close writes and fsyncs what is buffered and closes the store.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	close(s.stop)
	s.mu.Unlock()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.cur == nil { // writes had failed: what was whole is on disk
		return s.lock.Close()
	}
	err := s.writeFrame(true)
	return errors.Join(err, s.cur.Close(), s.lock.Close())
}

// Size is the bytes the store's segments take on disk, written or not.
func (s *Store) Size() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	total := int64(s.enc.buffered())
	for _, g := range s.segs {
		total += g.size
	}
	return total
}

// Recorded is how many events (keyframes' included) this process stored.
func (s *Store) Recorded() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.events
}

// Segments lists the segment files, oldest first.
func (s *Store) Segments() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(s.segs))
	for i, g := range s.segs {
		out[i] = g.path
	}
	return out
}

// Locks lists the locks the store has a history of: every lock it
// recorded, each restated in every segment's keyframe.
func (s *Store) Locks() ([]Lock, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return locksOf(s.lockKeys()), nil
}

// view is the segments a query reads: the current segment's buffer is
// written first, so a query sees everything recorded; the decoding then
// runs without the writer's lock, so a long query never holds up Record
// (whose queue would overflow). Segments are append-only and a closed one
// never changes; one retention removes meanwhile reads as empty.
func (s *Store) view() ([]segment, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		// A store that cannot write (its disk full) is still read: what
		// it wrote is on disk, what it could not is kept for the keyframe
		// after the gap, and the recorder's status says history is off.
		// Failing the read too would only hide the past from the pages.
		_ = s.writeFrame(false)
	}
	return slices.Clone(s.segs), nil
}

// errOverBudget stops reading into memory what would not fit in
// CacheSize.
var errOverBudget = errors.New("history: segment over the cache size")

// scan calls fn with each record of segs[i], in order: from the cache, or
// the kept tail of the segment being written, or read from the file frame
// by frame, so a query holds at most one segment within CacheSize, never
// a whole big one. An error from fn stops the scan and is returned.
func (s *Store) scan(segs []segment, i int, fn func(*record) error) error {
	g := segs[i]
	last := i == len(segs)-1
	if last {
		k, ok, err := s.tail(g)
		if err != nil {
			return err
		}
		if ok {
			return k.each(fn)
		}
		return s.stream(g, true, fn, nil)
	}
	s.cacheMu.Lock()
	c, ok := s.cache[g.seq]
	over := s.overBudget[g.seq]
	s.cacheMu.Unlock()
	if ok {
		return c.each(fn)
	}
	if over {
		// Known not to fit: collecting it again, to drop it at
		// CacheSize, made every query of a 100,000-node lock copy tens
		// of MB.
		return s.stream(g, false, fn, nil)
	}
	keep := &keptSegment{start: g.start.UnixMilli()}
	err := s.stream(g, false, fn, keep)
	if keep.payloads != nil {
		s.cacheMu.Lock()
		s.cachePut(g.seq, keep)
		s.cacheMu.Unlock()
	}
	return err
}

// stream reads g from its file, calling fn with each record. With keep,
// it also keeps the frames for the cache while they fit in CacheSize, and
// reads the file to its end for them when fn stops early (the first
// change of a window is found in the keyframe's wake, and the next query
// reads the same segment); keep.payloads is nil when they did not fit, or
// the file could not be read whole.
func (s *Store) stream(g segment, last bool, fn func(*record) error, keep *keptSegment) error {
	s.reading <- struct{}{}
	defer func() { <-s.reading }()
	f, err := os.Open(g.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil // removed by retention meanwhile: read as empty
	}
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	d, err := newSegmentReader(f, g.start)
	if err != nil {
		return fmt.Errorf("history: %s: %w", g.path, err)
	}
	keeping := keep != nil
	var stopped error // what fn returned, once it stopped the walk
	visit := func(r *record) error {
		if stopped != nil {
			return nil
		}
		if err := fn(r); err != nil {
			stopped = err
			if !keeping {
				return err
			}
		}
		return nil
	}
	for err == nil {
		var payload []byte
		payload, err = d.frame(visit)
		if err != nil || !keeping {
			continue
		}
		keep.add(payload, d)
		if keep.held(d) > s.opts.CacheSize {
			keeping, keep.payloads = false, nil
			// Said at once, for the queries reading it meanwhile, and
			// whether or not this read goes to the end.
			s.markOverBudget(g.seq)
			if stopped != nil {
				return stopped
			}
		}
	}
	if keep != nil {
		keep.bytes = keep.held(d)
	}
	switch {
	case err == io.EOF:
	case errors.Is(err, errCorrupt) && last:
		// The writer may be mid-frame: what is whole is what was written.
	case errors.Is(err, errCorrupt):
		s.opts.Logger.Warn("history: damaged segment, reading what is whole", "segment", g.path, "err", err)
	default:
		if keep != nil {
			keep.payloads = nil
		}
		if stopped != nil {
			return stopped
		}
		return err
	}
	return stopped
}

// markOverBudget notes that closed segment seq decodes to more than
// CacheSize.
func (s *Store) markOverBudget(seq int64) {
	s.cacheMu.Lock()
	s.overBudget[seq] = true
	s.cacheMu.Unlock()
}

// cachePut keeps c, segment seq in memory, making room by dropping the
// segments cached first. Called with cacheMu held.
func (s *Store) cachePut(seq int64, c *keptSegment) {
	if _, ok := s.cache[seq]; ok || c.bytes > s.opts.CacheSize {
		return
	}
	for len(s.cacheOrder) > 0 && s.cacheBytes+c.bytes > s.opts.CacheSize {
		s.uncache(s.cacheOrder[0])
	}
	s.cache[seq] = c
	s.cacheOrder = append(s.cacheOrder, seq)
	s.cacheBytes += c.bytes
}

// uncache drops segment seq from the cache. Called with cacheMu held.
func (s *Store) uncache(seq int64) {
	c, ok := s.cache[seq]
	if !ok {
		return
	}
	delete(s.cache, seq)
	s.cacheBytes -= c.bytes
	s.cacheOrder = slices.DeleteFunc(s.cacheOrder, func(q int64) bool { return q == seq })
}

// tail reads the segment being written into memory, resuming where the
// last query stopped, and returns it as read so far. ok is false when the
// segment holds more than CacheSize: the caller reads it from its file.
func (s *Store) tail(g segment) (k keptSegment, ok bool, err error) {
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	if s.live.seq != g.seq || (s.live.dec == nil && !s.live.over) {
		s.live.seq, s.live.dec, s.live.kept, s.live.over = g.seq, nil, keptSegment{start: g.start.UnixMilli()}, false
	}
	if s.live.over {
		return keptSegment{}, false, nil
	}
	f, err := os.Open(g.path)
	if errors.Is(err, os.ErrNotExist) {
		return keptSegment{}, true, nil
	}
	if err != nil {
		return keptSegment{}, false, fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	d := s.live.dec
	if d == nil {
		if d, err = newSegmentReader(f, g.start); err != nil {
			return keptSegment{}, false, fmt.Errorf("history: %s: %w", g.path, err)
		}
	} else {
		if _, err := f.Seek(d.good, io.SeekStart); err != nil {
			return keptSegment{}, false, fmt.Errorf("history: %w", err)
		}
		d.r.Reset(f)
	}
	kept := s.live.kept
	for {
		// A torn frame is one being written: the next query resumes at
		// its start (the reader's offset is past whole frames only).
		var payload []byte
		if payload, err = d.frame(func(*record) error { return nil }); err != nil {
			break
		}
		kept.add(payload, d)
		if kept.held(d) > s.opts.CacheSize {
			err = errOverBudget
			break
		}
	}
	if errors.Is(err, errOverBudget) {
		s.live.dec, s.live.kept, s.live.over = nil, keptSegment{}, true
		return keptSegment{}, false, nil
	}
	if err != nil && err != io.EOF && !errors.Is(err, errCorrupt) {
		return keptSegment{}, false, err
	}
	s.live.dec, s.live.kept = d, kept
	return kept, true, nil
}

// segmentAt is the index in segs of the segment holding time t, -1 before
// the first.
func segmentAt(segs []segment, t time.Time) int {
	i, _ := slices.BinarySearchFunc(segs, t, func(g segment, t time.Time) int {
		if g.start.After(t) {
			return 1
		}
		return -1
	})
	return i - 1
}

// Walk calls fn with each of the lock's records from from to to,
// inclusive, in order, restatements (keyframes, Synthetic) included,
// without collecting them: the figures, the density and the strip of an
// hour of a big queue are computed as the segments are read. An error
// from fn stops the walk and is returned.
func (s *Store) Walk(lock string, from, to time.Time, fn func(Event) error) error {
	s.querying <- struct{}{}
	defer func() { <-s.querying }()
	segs, err := s.view()
	if err != nil {
		return err
	}
	for i := max(segmentAt(segs, from), 0); i < len(segs) && !segs[i].start.After(to); i++ {
		err := s.scan(segs, i, func(r *record) error {
			if r.Lock != lock || r.Time.Before(from) || r.Time.After(to) {
				return nil
			}
			return fn(r.Event)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// Events are the lock's recorded changes from from to to, inclusive, in
// order.
func (s *Store) Events(lock string, from, to time.Time) ([]Event, error) {
	return changesIn(s, lock, from, to)
}

// At is the lock as it was at time t: the keyframe at the start of the
// segment holding t, replayed up to t. ErrNoHistory when the store has
// nothing of the lock then.
func (s *Store) At(lock string, t time.Time) (State, error) {
	s.querying <- struct{}{}
	defer func() { <-s.querying }()
	segs, err := s.view()
	if err != nil {
		return State{}, err
	}
	i := segmentAt(segs, t)
	if i < 0 {
		return State{}, fmt.Errorf("%w of %s at %s: the oldest kept is from %s", ErrNoHistory, lock, t.UTC().Format(time.RFC3339), segs[0].start.UTC().Format(time.RFC3339))
	}
	st := State{Lock: lock}
	found := false
	err = s.scan(segs, i, func(r *record) error {
		if r.Lock != lock || r.Time.After(t) {
			return nil
		}
		if r.Kind == keyframe {
			found = true
		}
		if found {
			st.apply(r.Event)
		}
		return nil
	})
	if err != nil {
		return State{}, err
	}
	if !found {
		return State{}, fmt.Errorf("%w of %s at %s", ErrNoHistory, lock, t.UTC().Format(time.RFC3339))
	}
	return st, nil
}

// Verify reads every segment and reports the first damaged one. Only the
// segment being written can end in a torn frame, and Open truncates that.
func (s *Store) Verify() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		if err := s.writeFrame(false); err != nil {
			return err
		}
	}
	for _, g := range s.segs {
		f, err := os.Stat(g.path)
		if err != nil {
			return fmt.Errorf("history: %w", err)
		}
		_, good, err := readSegment(g)
		if err != nil {
			return fmt.Errorf("history: %s: %w", g.path, err)
		}
		if good != f.Size() {
			return fmt.Errorf("history: %s: %d bytes past the last whole frame: %w", g.path, f.Size()-good, errCorrupt)
		}
	}
	return nil
}

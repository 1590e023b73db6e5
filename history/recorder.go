package history

import (
	"log/slog"
	"sync"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// DefaultQueue is how many snapshots may wait for the recorder.
const DefaultQueue = 4096

// linger is how long the recorder waits, once woken, before it records
// what is queued: recording a change of a big queue (a diff of every
// node) ran beside the sockets writing that change and took 0.04-0.06x
// off the p50 of cmd's BenchmarkChangeToFrame/vs-naive on 2 cores. A read
// through Source does not wait for it (Sync).
const linger = 10 * time.Millisecond

// Recorder takes the snapshots the live readers publish and stores them,
// on its own goroutine: a reader never waits for the disk. Its queue is
// bounded; a snapshot that finds it full is kept aside, the newest per
// lock, and recorded after a gap saying what was missed, so the history
// never claims to have seen the changes in between.
type Recorder struct {
	store   Writer
	metrics *Metrics
	log     *slog.Logger
	ch      chan lockqueue.Snapshot
	kick    chan struct{}
	syncs   chan chan struct{}

	mu       sync.Mutex
	overflow map[string]*pending
	stopped  bool
	status   Status

	// failing are the locks whose newest snapshot the store refused, by
	// key: retried every retryEvery, and recorded after a gap once the
	// store takes them again. Only run's goroutine touches it.
	failing map[string]*pending

	done chan struct{}
}

// retryEvery is how often the recorder retries a store that refused a
// write (a database gone, a directory another process records into).
const retryEvery = 2 * time.Second

// Status says whether the recorder is recording: the last write to its
// store worked. When not, Why is the store's error and Since when the
// writes began to fail.
type Status struct {
	Recording bool      `json:"recording"`
	Why       string    `json:"why,omitempty"`
	Since     time.Time `json:"since,omitzero"`
	// Role says which replica records, when the store is shared by
	// several (a PostgreSQL history); nil otherwise.
	Role *Role `json:"role,omitempty"`
}

// Status is the recorder's current Status.
func (r *Recorder) Status() Status {
	r.mu.Lock()
	st := r.status
	r.mu.Unlock()
	if rs, ok := r.store.(interface{ Role() Role }); ok {
		role := rs.Role()
		st.Role = &role
	}
	return st
}

// SyncedStatus is Status once what was offered before it was called is
// recorded, or once within has passed: a page drawn after a change says
// whether that change was recorded, and a store slow to answer does not
// hold the page up longer than within.
func (r *Recorder) SyncedStatus(within time.Duration) Status {
	// A recorder with a backlog (thousands of locks read at start) is not
	// waited for: the page would wait for all of it.
	if len(r.ch) > statusBacklog {
		return r.Status()
	}
	t := time.NewTimer(within)
	defer t.Stop()
	reply := make(chan struct{})
	select {
	case r.syncs <- reply:
		select {
		case <-reply:
		case <-t.C:
		}
	case <-r.done:
	case <-t.C:
	}
	return r.Status()
}

// statusBacklog is the most snapshots queued that SyncedStatus waits for.
const statusBacklog = 32

type pending struct {
	since time.Time
	snap  lockqueue.Snapshot
	why   string // why it was not recorded, for a refused write
}

// NewRecorder starts a recorder into store; metrics may be nil, queue 0
// means DefaultQueue.
func NewRecorder(store Writer, metrics *Metrics, queue int, log *slog.Logger) *Recorder {
	if queue <= 0 {
		queue = DefaultQueue
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Recorder{
		store: store, metrics: metrics, log: log, ch: make(chan lockqueue.Snapshot, queue),
		kick: make(chan struct{}, 1), syncs: make(chan chan struct{}), overflow: map[string]*pending{}, done: make(chan struct{}),
		failing: map[string]*pending{}, status: Status{Recording: true},
	}
	go r.run()
	return r
}

// Sync returns once everything offered before it was called is recorded.
func (r *Recorder) Sync() {
	reply := make(chan struct{})
	select {
	case r.syncs <- reply:
		<-reply
	case <-r.done:
	}
}

// Source returns src, read only after Sync: the history a reader gets is
// never behind what the live views have shown, however long the recorder
// lingers.
func (r *Recorder) Source(src Source) Source { return syncedSource{src: src, sync: r.Sync} }

type syncedSource struct {
	src  Source
	sync func()
}

func (s syncedSource) Events(lock string, from, to time.Time) ([]Event, error) {
	s.sync()
	return s.src.Events(lock, from, to)
}

func (s syncedSource) Walk(lock string, from, to time.Time, fn func(Event) error) error {
	s.sync()
	return s.src.Walk(lock, from, to, fn)
}

func (s syncedSource) At(lock string, t time.Time) (State, error) {
	s.sync()
	return s.src.At(lock, t)
}

func (s syncedSource) Stats(lock string, from, to time.Time) (Stats, error) {
	s.sync()
	return s.src.Stats(lock, from, to)
}

func (s syncedSource) Locks() ([]Lock, error) {
	s.sync()
	return s.src.Locks()
}

// Offer queues s for recording; it never blocks. A snapshot still
// filling in its nodes' data (Snapshot.Filling) is not recorded: its
// nodes would go into the history without their owners and data, which
// the history records once, when a node is queued. The filled snapshot
// that follows is.
func (r *Recorder) Offer(s lockqueue.Snapshot) {
	if s.Filling != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return
	}
	key := KeyOf(s)
	// Once a lock's snapshot was set aside, the lock's later ones are too,
	// until the recorder catches up: it must not record an older one after
	// a newer one.
	if p, ok := r.overflow[key]; ok {
		p.snap = s
		r.countOverflow()
		return
	}
	select {
	case r.ch <- s:
		return
	default:
	}
	r.overflow[key] = &pending{since: time.Now(), snap: s}
	r.countOverflow()
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

func (r *Recorder) countOverflow() {
	if r.metrics != nil {
		r.metrics.overflows.Inc()
	}
}

func (r *Recorder) run() {
	defer close(r.done)
	retry := time.NewTicker(retryEvery)
	defer retry.Stop()
	for {
		select {
		case <-retry.C:
			for _, p := range r.failing {
				// The newest snapshot is the lock as it is now.
				s := p.snap
				s.UpdatedAt = time.Now()
				r.record(s)
			}
		case s, ok := <-r.ch:
			if !ok {
				r.catchUp()
				return
			}
			r.lingerThenRecord(s)
		case <-r.kick:
			// What is queued was offered before what was set aside.
			r.drain()
			r.catchUp()
		case reply := <-r.syncs:
			r.syncNow(reply)
		}
	}
}

// lingerThenRecord records s and all queued after it, linger from now or
// at once when a reader asks (Sync).
func (r *Recorder) lingerThenRecord(s lockqueue.Snapshot) {
	t := time.NewTimer(linger)
	defer t.Stop()
	var reply chan struct{}
	select {
	case <-t.C:
	case reply = <-r.syncs:
	}
	r.record(s)
	if reply != nil {
		r.syncNow(reply)
		return
	}
	r.drain()
}

// syncNow records all that is queued or set aside, then answers a Sync.
func (r *Recorder) syncNow(reply chan struct{}) {
	r.drain()
	r.catchUp()
	close(reply)
}

func (r *Recorder) drain() {
	for {
		select {
		case s, ok := <-r.ch:
			if !ok {
				return
			}
			r.record(s)
		default:
			return
		}
	}
}

func (r *Recorder) catchUp() {
	r.mu.Lock()
	set := r.overflow
	r.overflow = map[string]*pending{}
	r.mu.Unlock()
	for key, p := range set {
		if err := r.store.RecordGap(key, p.since, "recorder queue overflowed; changes in between were not recorded"); err != nil {
			r.log.Error("history: record gap", "lock", key, "err", err)
		}
		r.record(p.snap)
	}
}

// record stores s. A lock whose earlier snapshots the store refused gets a
// gap first, from the first refused one: what happened meanwhile is not
// recorded, and its history must not claim it saw it.
func (r *Recorder) record(s lockqueue.Snapshot) {
	key := KeyOf(s)
	if f, ok := r.failing[key]; ok {
		if err := r.store.RecordGap(key, f.since, "not recording: "+f.why); err != nil {
			f.snap = s
			r.failed(err)
			return
		}
		delete(r.failing, key)
		if now := time.Now(); s.UpdatedAt.Before(now) {
			s.UpdatedAt = now // not before the gap it follows
		}
	}
	n, evs, err := r.write(s)
	if err != nil {
		if f, ok := r.failing[key]; ok {
			f.snap = s // still failing: the gap begins where it began
		} else {
			since := s.UpdatedAt
			if since.IsZero() {
				since = time.Now()
			}
			r.failing[key] = &pending{since: since, snap: s, why: err.Error()}
		}
		r.failed(err)
		return
	}
	r.recorded()
	if r.metrics != nil {
		r.metrics.observe(s.Lock(), n, evs)
	}
}

// counted is a Writer that records a snapshot without listing all its
// events (Store.recordCounted).
type counted interface {
	recordCounted(snap lockqueue.Snapshot) (n int, timed []Event, err error)
}

// write records s into the store: how many events it made, and those the
// metrics time (with a store that lists them all, all of them).
func (r *Recorder) write(s lockqueue.Snapshot) (int, []Event, error) {
	if c, ok := r.store.(counted); ok {
		return c.recordCounted(s)
	}
	evs, err := r.store.Record(s)
	return len(evs), evs, err
}

// failed marks the recorder not recording because of err; logged when
// that is news, not for every snapshot refused.
func (r *Recorder) failed(err error) {
	r.mu.Lock()
	was := r.status
	if was.Recording {
		r.status = Status{Why: err.Error(), Since: time.Now()}
	} else {
		r.status.Why = err.Error()
	}
	r.mu.Unlock()
	if was.Recording || was.Why != err.Error() {
		r.log.Error("history: not recording; retrying", "err", err)
	}
}

// recorded marks the recorder recording again once the store took a write
// and no lock waits for a retry.
func (r *Recorder) recorded() {
	if len(r.failing) > 0 {
		return
	}
	r.mu.Lock()
	was := r.status
	r.status = Status{Recording: true}
	r.mu.Unlock()
	if !was.Recording {
		r.log.Info("history: recording again", "offSince", was.Since)
	}
}

// Close records what is queued and stops; it does not close the store.
func (r *Recorder) Close() {
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return
	}
	r.stopped = true
	close(r.ch)
	r.mu.Unlock()
	<-r.done
}

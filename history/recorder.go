package history

import (
	"log/slog"
	"sync"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// DefaultQueue is how many snapshots may wait for the recorder.
const DefaultQueue = 4096

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

	mu       sync.Mutex
	overflow map[string]*pending
	stopped  bool

	done chan struct{}
}

type pending struct {
	since time.Time
	snap  lockqueue.Snapshot
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
		kick: make(chan struct{}, 1), overflow: map[string]*pending{}, done: make(chan struct{}),
	}
	go r.run()
	return r
}

// Wrap returns a sink that gives each snapshot to next, then offers it to
// the recorder.
func (r *Recorder) Wrap(next func(lockqueue.Snapshot)) func(lockqueue.Snapshot) {
	return func(s lockqueue.Snapshot) {
		next(s)
		r.Offer(s)
	}
}

// Offer queues s for recording; it never blocks.
func (r *Recorder) Offer(s lockqueue.Snapshot) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return
	}
	key := s.Key()
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
	for {
		select {
		case s, ok := <-r.ch:
			if !ok {
				r.catchUp()
				return
			}
			r.record(s)
		case <-r.kick:
			// What is queued was offered before what was set aside.
			r.drain()
			r.catchUp()
		}
	}
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

func (r *Recorder) record(s lockqueue.Snapshot) {
	evs, err := r.store.Record(s)
	if err != nil {
		r.log.Error("history: record", "lock", s.Key(), "err", err)
		return
	}
	if r.metrics != nil {
		r.metrics.observe(s.Lock(), evs)
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

package redislock

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/lockservice"
)

// DefaultPoll is how often a lock is read when keyspace notifications are
// off: the reader's whole load on each master is one pipeline of three or
// four read commands per lock per poll.
const DefaultPoll = time.Second

// resyncPolls: with keyspace notifications on, a lock is read on each of
// its events, at its next deadline, and every resyncPolls polls anyway, for
// what no event reports (a Redisson waiter's subscription).
const resyncPolls = 10

// Config configures a Reader.
type Config struct {
	// Addrs are the masters, HOST:PORT. Several are one Redlock: the
	// lock is held by whoever holds it on a majority.
	Addrs []string
	// Username and Password authenticate (AUTH [user] password); empty
	// for none. An ACL user needs only the read commands listed in
	// docs/services.md.
	Username, Password string
	// TLS, when set, connects with TLS.
	TLS *tls.Config
	// DB is the database the locks are keys of (SELECT DB), 0 by default.
	// Keys, SCAN and keyspace events are the database's; pub/sub
	// channels (Redisson's waiters) are the server's.
	DB int
	// Poll is how often each lock is read without keyspace notifications
	// (default DefaultPoll).
	Poll time.Duration
	// Names are locks to follow from the start.
	Names []string
	// Patterns find lock keys by SCAN MATCH glob, and by keyspace events
	// where the masters send them (reader_discover.go); ScanCount is
	// SCAN's COUNT (default DefaultScanCount), DiscoverLimit how many
	// keys found are followed at most (default DefaultDiscoverLimit).
	Patterns      []string
	ScanCount     int
	DiscoverLimit int
	// Forget, when set, is told the hub key of a key found that no master
	// holds as a lock any more.
	Forget func(key string)
	// Publish receives every changed snapshot; it must not block.
	Publish lockservice.Sink
	// Logger receives connection changes; slog.Default when nil.
	Logger *slog.Logger
}

// Reader follows Redis locks read-only: it never writes, never takes a
// lock, never changes the server's configuration. One loop per lock reads
// every master; however many viewers look, the load is the same.
type Reader struct {
	cfg     Config
	log     *slog.Logger
	masters []*liveMaster
	quorum  int

	mu     sync.Mutex
	locks  map[string]*follow
	order  []string
	runCtx context.Context // nil until Run
	// discovered counts the locks discovery follows; walks are each
	// master's walks of its keyspace, one per pattern.
	discovered int
	walks      [][]*walk
	running    sync.WaitGroup

	done      chan struct{} // closed by Close
	stopped   chan struct{} // closed when Run returns
	closeOnce sync.Once
}

var _ lockservice.Reader = (*Reader)(nil)

// NewReader checks cfg and builds the reader's clients; it does not
// connect (Run does).
func NewReader(cfg Config) (*Reader, error) {
	if len(cfg.Addrs) == 0 {
		return nil, errors.New("redis: no master address (--redis HOST:PORT)")
	}
	if cfg.DB < 0 {
		return nil, fmt.Errorf("redis: database %d: want 0 or more (--redis-db)", cfg.DB)
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.Publish == nil {
		cfg.Publish = func(lockqueue.Snapshot) {}
	}
	if cfg.ScanCount <= 0 {
		cfg.ScanCount = DefaultScanCount
	}
	if cfg.DiscoverLimit <= 0 {
		cfg.DiscoverLimit = DefaultDiscoverLimit
	}
	for _, p := range cfg.Patterns {
		if err := CheckPattern(p); err != nil {
			return nil, fmt.Errorf("redis: --watch-under redis:%s: %w", p, err)
		}
	}
	log := cmp.Or(cfg.Logger, slog.Default())
	r := &Reader{
		cfg: cfg, log: log.With("service", Name), quorum: len(cfg.Addrs)/2 + 1,
		locks: map[string]*follow{}, done: make(chan struct{}), stopped: make(chan struct{}),
	}
	seen := map[string]bool{}
	for _, a := range cfg.Addrs {
		if seen[a] {
			return nil, fmt.Errorf("redis: master %s given twice", a)
		}
		seen[a] = true
		r.masters = append(r.masters, newLiveMaster(a, cfg))
		var ws []*walk
		for _, p := range cfg.Patterns {
			ws = append(ws, &walk{pattern: p, size: -1})
		}
		r.walks = append(r.walks, ws)
	}
	for _, n := range cfg.Names {
		if err := r.Watch(n); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func newLiveMaster(addr string, cfg Config) *liveMaster {
	m := &liveMaster{addr: addr, errs: map[string]error{}, keyspace: keyspacePrefix(cfg.DB)}
	m.client = redis.NewClient(&redis.Options{
		Addr: addr, Username: cfg.Username, Password: cfg.Password, TLSConfig: cfg.TLS, DB: cfg.DB,
		// RESP2 and no identity or maintenance handshake: a connection
		// sends AUTH and nothing else a least-privilege user would need.
		Protocol: 2, DisableIdentity: true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
		DialTimeout:              3 * time.Second, ReadTimeout: 3 * time.Second, WriteTimeout: 3 * time.Second,
		MaxRetries: 1, PoolSize: 4,
		// One dial per attempt, not go-redis's five 100 ms apart: a
		// server down must fail the poll's read within the poll, so the
		// history shows the outage as a gap (its reads, not its retries,
		// are the reader's resolution).
		DialerRetries: 1,
		// A new connection may be to a restarted server, even when the
		// retry on it hid the old one's failure: read the run id again.
		OnConnect: func(context.Context, *redis.Conn) error { m.runIDMayChange(); return nil },
	})
	return m
}

// Watch starts following the lock named name (its key).
func (r *Reader) Watch(name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if f, ok := r.locks[name]; ok {
		if f.discovered { // named now: it stays when it is no lock
			f.discovered = false
			r.discovered--
		}
		return nil
	}
	f := newFollow(name, len(r.masters))
	r.locks[name] = f
	r.order = append(r.order, name)
	if r.runCtx != nil {
		r.start(f)
	}
	return nil
}

// Unwatch stops following name; its last snapshot stays in the hub.
func (r *Reader) Unwatch(name string) error {
	r.mu.Lock()
	f, ok := r.locks[name]
	if ok && f.discovered {
		r.mu.Unlock()
		return fmt.Errorf("redis: %q was found by --watch-under and is followed while it is a lock", name)
	}
	if ok {
		delete(r.locks, name)
		r.order = slices.DeleteFunc(r.order, func(n string) bool { return n == name })
	}
	r.mu.Unlock()
	if !ok {
		return fmt.Errorf("redis: %q is not watched", name)
	}
	if f.cancel != nil {
		f.cancel()
	}
	for _, m := range r.masters {
		m.unsubscribe(name)
		m.forget(name)
	}
	return nil
}

// Watched lists the followed locks in the order they were added.
func (r *Reader) Watched() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.order)
}

// Connection is Connected while every master answers.
func (r *Reader) Connection() lockqueue.Connection {
	for _, m := range r.masters {
		if m.error() != nil {
			return lockqueue.Reconnecting
		}
	}
	return lockqueue.Connected
}

// Err names each master the reader cannot read now, and what to check.
func (r *Reader) Err() error {
	var errs []error
	for _, m := range r.masters {
		if err := m.error(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Run connects to every master and follows the watched locks until ctx
// ends or Close. A master that cannot be reached is no reason to stop:
// Err says what is wrong while the reader retries at --poll.
func (r *Reader) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-r.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	r.mu.Lock()
	if r.runCtx != nil {
		r.mu.Unlock()
		return errors.New("redis: reader already running")
	}
	r.runCtx = ctx
	defer close(r.stopped)
	for _, n := range r.order {
		r.start(r.locks[n])
	}
	r.mu.Unlock()
	for i, m := range r.masters {
		r.running.Go(func() { r.health(ctx, m) })
		r.running.Go(func() { r.keyspaceEvents(ctx, m, len(r.walks[i]) > 0) })
		if len(r.walks[i]) > 0 {
			r.running.Go(func() { r.discover(ctx, m, r.walks[i]) })
		}
	}
	<-ctx.Done()
	r.running.Wait()
	return nil
}

// Close stops Run and closes the connections.
func (r *Reader) Close() {
	r.closeOnce.Do(func() {
		close(r.done)
		r.mu.Lock()
		started := r.runCtx != nil
		r.mu.Unlock()
		if started {
			<-r.stopped
		}
		for _, m := range r.masters {
			m.client.Close()
		}
	})
}

// start runs f's loop; r.mu is held.
func (r *Reader) start(f *follow) {
	ctx, cancel := context.WithCancel(r.runCtx)
	f.cancel = cancel
	for _, m := range r.masters {
		m.subscribe(ctx, f.name)
	}
	r.running.Go(func() { r.loop(ctx, f) })
}

// healthSource is the health ping's source of a master's error; no lock
// name is empty, so it is no lock's.
const healthSource = ""

// health pings a master at startup, so Err names a bad address or
// password within seconds, and then whenever no lock's reads would notice.
func (r *Reader) health(ctx context.Context, m *liveMaster) {
	for {
		r.mu.Lock()
		idle := len(r.locks) == 0
		r.mu.Unlock()
		if idle || !m.checked() {
			m.note(ctx, r.log, healthSource, m.client.Ping(ctx).Err())
		} else {
			m.forget(healthSource) // the locks' reads speak for the master now
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(r.cfg.Poll):
		}
	}
}

// loop reads one lock on every master and publishes what changed, then
// waits for the next poll, or with keyspace notifications for an event,
// the lock's next deadline or a resync. Each wait counts from when the
// read began, as PostgreSQL's ticker does: a slow read (a loaded machine,
// a busy master) must not push every next one back by its own length,
// or a change would be recorded up to two reads' length later than a
// poll after it.
func (r *Reader) loop(ctx context.Context, f *follow) {
	for {
		began := time.Now()
		reads := r.readAll(ctx, f)
		if ctx.Err() != nil {
			return
		}
		notifying := r.notifying()
		source := "poll"
		if notifying {
			source = "keyspace"
		}
		snap, deadline := f.build(reads, r.quorum, source, time.Now())
		r.publish(f, snap)
		r.mu.Lock()
		discovered := f.discovered
		r.mu.Unlock()
		// A key lost in a restart stays, with its alert, until its lease
		// would have run out: its owner may still believe it holds.
		if discovered && noLock(reads) && !slices.ContainsFunc(snap.Alerts, isLost) {
			r.leave(f)
			return
		}
		wait := r.cfg.Poll
		if notifying {
			wait = resyncPolls * r.cfg.Poll
			if deadline > 0 && deadline < wait {
				wait = deadline
			}
		}
		timer := time.NewTimer(wait - time.Since(began))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-f.kick:
		case <-timer.C:
		}
		timer.Stop()
	}
}

func isLost(a lockqueue.Alert) bool { return a.Kind == AlertLostInRestart }

// readAll reads the lock on every master at once, so a Redlock's masters
// are compared at nearly the same instant.
func (r *Reader) readAll(ctx context.Context, f *follow) []keyRead {
	reads := make([]keyRead, len(r.masters))
	var wg sync.WaitGroup
	for i, m := range r.masters {
		wg.Go(func() {
			kr, err := m.read(ctx, f.name, f.guess(i))
			if ctx.Err() != nil {
				return
			}
			kr.addr, kr.err = m.addr, m.note(ctx, r.log, f.name, err)
			reads[i] = kr
			f.setGuess(i, kr.typ)
		})
	}
	wg.Wait()
	return reads
}

// publish sends snap unless it shows what the last one did.
func (r *Reader) publish(f *follow, snap lockqueue.Snapshot) {
	var last *lockqueue.Snapshot
	if f.published {
		last = &f.last
	}
	lockqueue.CarryHolds(last, &snap, snap.UpdatedAt)
	if f.published && lockqueue.SameShown(snap, f.last) {
		return
	}
	f.rev++
	snap.Revision = f.rev
	f.last, f.published = snap, true
	r.cfg.Publish(snap)
}

// notifying reports whether every master sends this reader keyspace
// events; one that does not makes every lock poll.
func (r *Reader) notifying() bool {
	for _, m := range r.masters {
		if !m.notifyOn() {
			return false
		}
	}
	return true
}

// kick asks name's loop for an early read.
func (r *Reader) kick(name string) {
	r.mu.Lock()
	f := r.locks[name]
	r.mu.Unlock()
	if f == nil {
		return
	}
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

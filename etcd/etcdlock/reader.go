package etcdlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/connectivity"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/lockservice"
)

// discoverEvery is how many polls pass between two discoveries under
// Config.Under: a keys-only range read is not free on a big prefix.
const discoverEvery = 30

// Reader follows etcd lock prefixes and publishes their snapshots.
type Reader struct {
	cfg Config
	log *slog.Logger

	// poke wakes the poller early: a lease it has not read yet appeared.
	poke chan struct{}
	done chan struct{} // closed by Close

	mu      sync.Mutex
	cli     *clientv3.Client
	runCtx  context.Context // set by Run; nil before
	locks   map[string]*lock
	order   []string
	leases  map[int64]leaseFacts
	revs    revClock
	connErr error // what keeps the reader from etcd; nil when connected
	// tried: etcd has answered or failed once; until then connErr only
	// says "connecting" and nothing is published.
	tried bool
	// connVague: all connErr knows is that gRPC's connection is down; a
	// lock's own failed read then says better why (TLS, refused…).
	connVague bool
	// failedAt is when connErr was last set: an answer to a request sent
	// before then (in flight as etcd went away) does not say it is back.
	failedAt time.Time
	// cluster is the etcd cluster's id (hex) from the last response
	// header: the history keeps each cluster's locks apart by it.
	cluster   string
	closeOnce sync.Once
}

var _ lockservice.Reader = (*Reader)(nil)

// lock is one watched prefix's state. Its fields are guarded by Reader.mu.
type lock struct {
	name string
	keys map[string]lockqueue.EtcdKey // by name below "<prefix>/"
	read bool                         // a Get has landed since the last (re)connect
	err  error                        // the last read of this prefix failed
	// stale: read before etcd was last lost, not since; its keys may be
	// gone, its watch resumed silently or waiting on a new server.
	stale  bool
	rev    int64 // the snapshots' Revision
	last   lockqueue.Snapshot
	cancel context.CancelFunc // stops its follow goroutine; nil when none
	// expired is the last holder whose key went while its lease was
	// running out, until the lock passes on again.
	expired *lockqueue.ExpiredHolder
}

// expiring reports whether s showed name as a holder whose lease runs out.
func expiring(s lockqueue.Snapshot, name string) bool {
	return slices.ContainsFunc(s.Alerts, func(a lockqueue.Alert) bool {
		return a.Kind == lockqueue.AlertLeaseExpiring && slices.Contains(a.Nodes, name)
	})
}

// leaseFacts are what the last LeaseTimeToLive said of a lease.
type leaseFacts struct {
	ttl, left time.Duration
	// goneFor counts the polls in a row that found it expired: the
	// server deletes a lease's keys as it revokes it, so the first such
	// answer may race the DELETE still on its way down the watch.
	goneFor int
}

// New returns a reader of cfg's endpoints; Run connects.
func New(cfg Config) (*Reader, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	r := &Reader{
		cfg: cfg, log: cfg.Logger.With("service", Name, "etcd", AddrOf(cfg.Endpoints)),
		poke: make(chan struct{}, 1), done: make(chan struct{}),
		locks: map[string]*lock{}, leases: map[int64]leaseFacts{},
		connErr: fmt.Errorf("etcd %s: connecting", AddrOf(cfg.Endpoints)),
	}
	for _, p := range cfg.Prefixes {
		r.addLock(p)
	}
	return r, nil
}

// Watch starts following the lock prefix name.
func (r *Reader) Watch(name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if l := r.addLock(name); l != nil && r.cli != nil {
		r.startLocked(l)
	}
	return nil
}

// addLock adds a prefix; nil when it is followed already. r.mu held or
// not yet shared.
func (r *Reader) addLock(name string) *lock {
	if _, ok := r.locks[name]; ok {
		return nil
	}
	l := &lock{name: name, keys: map[string]lockqueue.EtcdKey{}}
	r.locks[name] = l
	r.order = append(r.order, name)
	return l
}

// Unwatch stops following name and drops its watch.
func (r *Reader) Unwatch(name string) error {
	r.mu.Lock()
	l, ok := r.locks[name]
	if ok {
		if l.cancel != nil {
			l.cancel()
		}
		delete(r.locks, name)
		r.order = slices.DeleteFunc(r.order, func(n string) bool { return n == name })
	}
	r.mu.Unlock()
	if ok && r.cfg.Forget != nil {
		r.cfg.Forget(LockID(name).Key())
	}
	return nil
}

// Watched lists the followed prefixes in the order they were added.
func (r *Reader) Watched() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.order)
}

// Connection is Connected while etcd answers.
func (r *Reader) Connection() lockqueue.Connection {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.connectionLocked()
}

func (r *Reader) connectionLocked() lockqueue.Connection {
	if r.connErr != nil {
		return lockqueue.Reconnecting
	}
	return lockqueue.Connected
}

// Err is what keeps the reader from etcd, or else from one of its locks.
func (r *Reader) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, name := range r.order {
		if err := r.errorForLocked(r.locks[name]); err != nil {
			return err
		}
	}
	return r.errorForLocked(nil)
}

// errorForLocked is what keeps l (nil: any lock) from being shown live:
// the connection's failure, unless all that is known of it is that the
// connection is down and l's own read failed saying why; then l's
// failure; last, that the reader is still connecting. r.mu held.
func (r *Reader) errorForLocked(l *lock) error {
	lockErr := error(nil)
	if l != nil {
		lockErr = l.err
	}
	switch {
	case r.connErr != nil && r.tried && !(r.connVague && lockErr != nil):
		return r.connErr
	case lockErr != nil:
		return lockErr
	}
	return r.connErr
}

// Close stops Run and closes the connection.
func (r *Reader) Close() {
	r.closeOnce.Do(func() { close(r.done) })
}

// Run connects (retrying until etcd takes it), follows every lock and
// polls the leases until ctx ends or Close. An unreachable etcd or a
// refused login is no reason to return: the other services keep working,
// Err and every snapshot say what is wrong, and the reader keeps trying.
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
	cli, err := r.connect(ctx)
	if err != nil {
		return nil // ctx ended while connecting
	}
	defer cli.Close()
	r.mu.Lock()
	r.cli, r.runCtx = cli, ctx
	for _, name := range r.order {
		r.startLocked(r.locks[name])
	}
	r.mu.Unlock()
	go r.watchConn(ctx, cli)
	r.poll(ctx, cli)
	r.mu.Lock()
	for _, l := range r.locks {
		if l.cancel != nil {
			l.cancel()
		}
	}
	r.mu.Unlock()
	return nil
}

// connect makes the client. With credentials, clientv3.New logs in at
// once, so a wrong password or an unreachable server fails it; without,
// it connects lazily and the first Get tells.
func (r *Reader) connect(ctx context.Context) (*clientv3.Client, error) {
	for attempt := 0; ; attempt++ {
		cli, err := clientv3.New(clientv3.Config{
			Endpoints: r.cfg.Endpoints, Username: r.cfg.Username, Password: r.cfg.Password, TLS: r.cfg.TLS,
			DialTimeout: r.cfg.Timeout, DialKeepAliveTime: 5 * time.Second, DialKeepAliveTimeout: r.cfg.Timeout,
			Context: ctx, Logger: zap.NewNop(),
		})
		if err == nil {
			return cli, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if unanswered(err) {
			if derr := diagnose(ctx, r.cfg.Endpoints, r.cfg.TLS, r.cfg.Timeout); derr != nil {
				err = derr
			}
		}
		r.failConn(describe(err, r.cfg.Endpoints, "", r.cfg.Timeout), false)
		if !sleep(ctx, r.backoff(attempt)) {
			return nil, ctx.Err()
		}
	}
}

// maxBackoff bounds the wait between two tries: a reader left with a
// wrong password should not log in every second for days.
const maxBackoff = 30 * time.Second

// backoff is the wait after the attempt-th failure in a row (from 0):
// a poll (at least a second), doubling up to maxBackoff.
func (r *Reader) backoff(attempt int) time.Duration {
	d := max(r.cfg.Poll, time.Second)
	for range min(attempt, 8) {
		d *= 2
	}
	return min(d, maxBackoff)
}

// sleep waits d; false when ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// failConn records a connection failure, logs it when it is news, and
// republishes every lock as not live.
func (r *Reader) failConn(err error, vague bool) {
	r.mu.Lock()
	news := r.connErr == nil || r.connErr.Error() != err.Error()
	r.connErr, r.tried, r.connVague, r.failedAt = err, true, vague, time.Now()
	for _, l := range r.locks {
		// The watch may resume silently when etcd is back, and until it
		// has caught up the keys are those from before: a lock is live
		// again only once read again (okConn).
		l.stale = l.stale || l.read
	}
	r.publishAllLocked()
	r.mu.Unlock()
	if news {
		r.log.Warn("etcd not usable; its locks are not live", "err", err)
	}
}

// errRereading keeps a lock from being shown live after etcd came back,
// until it is read again: its keys are those from before the outage.
var errRereading = errors.New("etcd is back; reading the lock again")

// okConn records that etcd answered a request sent at asked. Back from a
// failure, each lock not read since is read again at once, its watch begun
// anew, and shown as not live until that read lands. An answer to a
// request sent before the failure was noted says nothing of now.
func (r *Reader) okConn(asked time.Time) {
	r.mu.Lock()
	if asked.Before(r.failedAt) {
		r.mu.Unlock()
		return
	}
	was := r.connErr
	r.connErr, r.tried = nil, true
	if was != nil {
		for _, name := range r.order {
			if l := r.locks[name]; l.stale && l.cancel != nil {
				l.err = errRereading
				l.cancel()
				r.startLocked(l)
			}
		}
		r.publishAllLocked()
	}
	r.mu.Unlock()
	if was != nil {
		r.log.Info("etcd connected")
	}
}

// startLocked starts following l. r.mu held, r.cli set.
func (r *Reader) startLocked(l *lock) {
	ctx, cancel := context.WithCancel(r.runCtx)
	l.cancel = cancel
	go r.follow(ctx, r.cli, l)
}

// follow reads l and keeps it current until ctx ends: a sorted Get, then
// one watch from the Get's revision; again after the watch fails or is
// compacted away.
func (r *Reader) follow(ctx context.Context, cli *clientv3.Client, l *lock) {
	failures := 0
	for {
		read, err := r.readAndWatch(ctx, cli, l)
		if ctx.Err() != nil {
			return
		}
		if read {
			failures = 0
		}
		if err == nil {
			continue
		}
		r.failLock(l, describe(err, r.cfg.Endpoints, l.name, r.cfg.Timeout))
		if !sleep(ctx, r.backoff(failures)) {
			return
		}
		failures++
	}
}

// readAndWatch returns nil when the watch ended in a way a fresh read
// mends at once (compaction), an error otherwise; read tells whether the
// prefix was read before it ended.
func (r *Reader) readAndWatch(ctx context.Context, cli *clientv3.Client, l *lock) (read bool, err error) {
	pfx := l.name + "/"
	gctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	asked := time.Now()
	resp, err := cli.Get(gctx, pfx, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	cancel()
	if err != nil {
		return false, err
	}
	// Resynced before okConn, so that a lock's own read bringing the
	// connection back is not read again.
	r.resync(l, resp, time.Now())
	r.okConn(asked)

	// WithRequireLeader: a member cut off from its cluster cancels the
	// watch instead of leaving it silent, so a stale queue is not live.
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	wch := cli.Watch(wctx, pfx, clientv3.WithPrefix(), clientv3.WithPrevKV(), clientv3.WithRev(resp.Header.Revision+1))
	for wr := range wch {
		if wr.CompactRevision != 0 {
			r.log.Info("etcd compacted past the watch; reading the lock again", "lock", l.name, "compactRevision", wr.CompactRevision)
			return true, nil
		}
		if err := wr.Err(); err != nil {
			return true, err
		}
		r.apply(l, pfx, wr.Header.Revision, wr.Events)
	}
	if err := ctx.Err(); err != nil {
		return true, err
	}
	return true, errors.New("watch closed by the server")
}

// resync replaces l's keys with a fresh read, answered at at. A key seen
// before keeps the time its creation was seen; one met here for the first
// time was made by the first moment the reader saw its create revision
// (etcd keeps no creation time), which times its wait from then on.
func (r *Reader) resync(l *lock, resp *clientv3.GetResponse, at time.Time) {
	pfx := l.name + "/"
	r.mu.Lock()
	defer r.mu.Unlock()
	r.revs.note(resp.Header.Revision, at)
	keys := make(map[string]lockqueue.EtcdKey, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		name := string(kv.Key[len(pfx):])
		k := lockqueue.EtcdKey{Name: name, CreateRevision: kv.CreateRevision, Value: kv.Value, Lease: kv.Lease}
		if old, ok := l.keys[name]; ok && old.CreateRevision == kv.CreateRevision {
			k.Seen, k.SeenLate = old.Seen, old.SeenLate
		} else {
			k.Seen, k.SeenLate = r.revs.by(kv.CreateRevision, at), true
		}
		keys[name] = k
	}
	l.keys, l.read, l.err, l.stale = keys, true, nil, false
	if resp.Header != nil && resp.Header.ClusterId != 0 {
		r.cluster = strconv.FormatUint(resp.Header.ClusterId, 16)
	}
	r.publishLocked(l)
	r.pokeIfNewLease(l)
}

// apply applies watch events to l, of a response at revision rev.
func (r *Reader) apply(l *lock, pfx string, rev int64, events []*clientv3.Event) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.revs.note(rev, now)
	for _, ev := range events {
		name := string(ev.Kv.Key[len(pfx):])
		if ev.Type == clientv3.EventTypeDelete {
			if expiring(l.last, name) {
				l.expired = &lockqueue.ExpiredHolder{Name: name, LeaseID: lockqueue.LeaseHex(l.keys[name].Lease)}
			}
			delete(l.keys, name)
			continue
		}
		k := lockqueue.EtcdKey{Name: name, CreateRevision: ev.Kv.CreateRevision, Value: ev.Kv.Value, Lease: ev.Kv.Lease}
		if ev.IsCreate() {
			k.Seen = now
		} else if old, ok := l.keys[name]; ok {
			k.Seen, k.SeenLate = old.Seen, old.SeenLate
		}
		l.keys[name] = k
	}
	l.err = nil
	r.publishLocked(l)
	r.pokeIfNewLease(l)
}

func (r *Reader) pokeIfNewLease(l *lock) {
	for _, k := range l.keys {
		if _, ok := r.leases[k.Lease]; k.Lease != 0 && !ok {
			select {
			case r.poke <- struct{}{}:
			default:
			}
			return
		}
	}
}

// failLock records that l could not be read and publishes it as not live.
func (r *Reader) failLock(l *lock, err error) {
	r.mu.Lock()
	news := l.err == nil || l.err.Error() != err.Error()
	l.err = err
	r.publishLocked(l)
	r.mu.Unlock()
	if news {
		r.log.Warn("etcd lock not readable", "lock", l.name, "err", err)
	}
}

// poll reads the leases' time left every Poll (at once when poked), and
// finds locks under Config.Under every discoverEvery polls.
func (r *Reader) poll(ctx context.Context, cli *clientv3.Client) {
	t := time.NewTicker(r.cfg.Poll)
	defer t.Stop()
	for n := 0; ; n++ {
		if n%discoverEvery == 0 && len(r.cfg.Under) > 0 {
			r.discover(ctx, cli)
		}
		r.readLeases(ctx, cli)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-r.poke:
		}
	}
}

// readLeases asks LeaseTimeToLive once per distinct lease of every
// followed lock, then republishes the locks. A failure that is etcd's
// (unreachable) marks the connection; a lease the user may not read stays
// unread.
func (r *Reader) readLeases(ctx context.Context, cli *clientv3.Client) {
	r.mu.Lock()
	ids := map[int64]bool{}
	for _, l := range r.locks {
		for _, k := range l.keys {
			if k.Lease != 0 {
				ids[k.Lease] = true
			}
		}
	}
	old := r.leases
	r.mu.Unlock()
	asked := time.Now()

	facts := make(map[int64]leaseFacts, len(ids))
	var failed error
	for _, id := range slices.Sorted(maps.Keys(ids)) {
		lctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
		resp, err := cli.TimeToLive(lctx, clientv3.LeaseID(id))
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			failed = err
			if isPermission(err) {
				continue
			}
			break // etcd's own failure: the other leases would wait their timeout too
		}
		f := leaseFacts{ttl: time.Duration(resp.GrantedTTL) * time.Second, left: time.Duration(resp.TTL) * time.Second}
		if resp.TTL < 0 {
			f.goneFor = old[id].goneFor + 1
		}
		facts[id] = f
	}
	if failed != nil {
		r.log.Debug("etcd lease read failed", "err", failed)
	}
	r.judgeConn(ctx, cli, asked, len(ids) > 0, failed)
	r.mu.Lock()
	r.leases = facts
	r.publishAllLocked()
	r.mu.Unlock()
}

// judgeConn decides, once per poll, whether etcd is usable: a lease read
// failing for a reason of etcd's own (not a missing privilege) says no, so
// does a gRPC connection down with nothing read; a read that worked, or a
// connection up, says yes. A watch alone never tells: the client retries
// it silently while the server is gone. The reads were sent from asked on.
func (r *Reader) judgeConn(ctx context.Context, cli *clientv3.Client, asked time.Time, read bool, failed error) {
	seen := time.Now()
	state := cli.ActiveConnection().GetState()
	switch {
	case failed != nil && !isPermission(failed):
		r.failConn(describe(failed, r.cfg.Endpoints, "", r.cfg.Timeout), false)
	case state == connectivity.Ready:
		r.okConn(seen)
	case read && failed == nil:
		r.okConn(asked)
	case state == connectivity.TransientFailure, state == connectivity.Connecting:
		if err := diagnose(ctx, r.cfg.Endpoints, r.cfg.TLS, r.cfg.Timeout); err != nil {
			r.failConn(describe(err, r.cfg.Endpoints, "", r.cfg.Timeout), false)
			return
		}
		r.failConn(describe(errConnDown, r.cfg.Endpoints, "", r.cfg.Timeout), true)
	}
}

// watchConn marks the connection down the moment gRPC's leaves Ready
// after it had been up: the client retries a watch silently and a lease
// read waits up to Timeout for the server to come back, so a poll alone
// may sleep through an outage of a few seconds, and the history must show
// one as a gap. Being up again is the polls' and reads' to say, once etcd
// answers (judgeConn, okConn).
func (r *Reader) watchConn(ctx context.Context, cli *clientv3.Client) {
	conn := cli.ActiveConnection()
	wasUp := false
	for {
		state := conn.GetState()
		switch state {
		case connectivity.Ready:
			wasUp = true
		case connectivity.Idle, connectivity.Connecting, connectivity.TransientFailure:
			if wasUp {
				r.failConn(describe(errConnDown, r.cfg.Endpoints, "", r.cfg.Timeout), true)
			}
		case connectivity.Shutdown:
			return
		}
		if !conn.WaitForStateChange(ctx, state) {
			return
		}
	}
}

// discover finds the lock prefixes under each Config.Under prefix and
// follows the new ones.
func (r *Reader) discover(ctx context.Context, cli *clientv3.Client) {
	for _, under := range r.cfg.Under {
		dctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
		resp, err := cli.Get(dctx, under+"/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				r.log.Warn("etcd lock discovery failed", "under", under, "err", describe(err, r.cfg.Endpoints, under, r.cfg.Timeout))
			}
			continue
		}
		found := map[string]bool{}
		for _, kv := range resp.Kvs {
			if p, ok := lockqueue.EtcdLockOf(string(kv.Key)); ok && !found[p] {
				found[p] = true
				if err := r.Watch(p); err != nil {
					r.log.Debug("etcd lock found but not followed", "lock", p, "err", err)
				}
			}
		}
	}
}

// publishAllLocked republishes every lock. r.mu held.
func (r *Reader) publishAllLocked() {
	for _, name := range r.order {
		r.publishLocked(r.locks[name])
	}
}

// publishLocked builds l's snapshot from its keys, the leases' facts and
// the connection's state, and publishes it when anything shows
// differently. A lock never read has nothing to show yet; one unwatched
// (its goroutine not yet stopped) nothing any more. r.mu held.
func (r *Reader) publishLocked(l *lock) {
	// Before its first read a lock has nothing to show, unless the
	// reader failed and can say why: published connected, it would read
	// as free, and its holder's first read as a new acquisition.
	if r.locks[l.name] != l || (!l.read && l.err == nil && (!r.tried || r.connErr == nil)) {
		return // unwatched, or nothing to show yet
	}
	keys := make([]lockqueue.EtcdKey, 0, len(l.keys))
	for _, k := range l.keys {
		if f, ok := r.leases[k.Lease]; ok && k.Lease != 0 {
			k.LeaseTTL, k.LeaseLeft, k.LeaseGone = f.ttl, f.left, f.goneFor >= 2
		}
		keys = append(keys, k)
	}
	s := lockqueue.BuildEtcd(l.name, keys)
	if l.expired != nil && !l.expired.Apply(&s) {
		l.expired = nil
	}
	s.Connection, s.Cluster = r.connectionLocked(), r.cluster
	if err := r.errorForLocked(l); err != nil {
		s.Error = err.Error()
	}
	now := time.Now()
	var last *lockqueue.Snapshot
	if l.rev > 0 {
		last = &l.last
	}
	if !s.Live() {
		// Keys and leases not read now are not gone: the last known
		// state, marked not live.
		s.UpdatedAt = now
		s = lockqueue.LastKnown(last, s)
	}
	lockqueue.CarryHolds(last, &s, now)
	if last != nil && lockqueue.SameShown(s, *last) {
		return
	}
	l.rev++
	s.Revision = l.rev
	s.UpdatedAt = now
	l.last = s
	r.cfg.Publish(s)
}

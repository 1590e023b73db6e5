package pglock

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/lockservice"
)

// Defaults of Config.
const (
	DefaultPoll      = time.Second
	DefaultLongWait  = 30 * time.Second
	DefaultIdleGrace = 10 * time.Second
	// DefaultTimeout bounds a connection attempt and a poll's query.
	DefaultTimeout = 5 * time.Second
)

// AlertReleasedInRestart: the server restarted (its start time changed)
// while sessions held or waited for the lock: every session ended, and
// its advisory and row locks were released with it, by the restart and
// not by their clients.
const AlertReleasedInRestart = "released-in-restart"

// restartAlertFor is how long a lock's queue says it went in a restart.
const restartAlertFor = 10 * time.Minute

// Config configures a Reader.
type Config struct {
	// DSN is a libpq connection string or URL. TLS is set in it
	// (sslmode, sslrootcert, sslcert, sslkey), as are the password and
	// the database; libpq's environment (PGPASSWORD, PGSSLMODE…) fills
	// what it leaves out.
	DSN string
	// Password, when set, replaces the DSN's (so it need not show in a
	// process list).
	Password string
	// Publish receives each lock's snapshot when it changes. Required.
	Publish lockservice.Sink
	// Forget, when set, is told the hub key of a lock no longer watched.
	Forget func(key string)
	// Poll is how often the locks are read. Default DefaultPoll.
	Poll time.Duration
	// LongWait: a wait longer than this raises a long-wait alert;
	// IdleGrace: a holder idle in a transaction longer than this raises an
	// idle-in-transaction alert. Defaults DefaultLongWait and
	// DefaultIdleGrace; negative turns the alert off.
	LongWait, IdleGrace time.Duration
	// Timeout bounds each connection attempt and each poll. Default
	// DefaultTimeout.
	Timeout time.Duration
	Logger  *slog.Logger
	// Watch are the locks to follow from the start.
	Watch []string
	// Discover are what to find without naming it (DiscoverAdvisory,
	// DiscoverRows): each lock found is followed while it is held or
	// waited on, read by the same one query per poll.
	Discover []string
}

// Reader follows PostgreSQL locks, read-only, on one connection: every
// poll is one query in a read-only transaction (the session's
// default_transaction_read_only is on), and needs only pg_monitor.
type Reader struct {
	cfg    Config
	conn   *pgx.ConnConfig
	addr   string
	log    *slog.Logger
	wake   chan struct{}
	closed chan struct{}
	once   sync.Once

	mu      sync.Mutex
	watched []string
	// found are the locks discovery follows now, not in watched.
	found map[string]bool
	last  map[string]lockqueue.Snapshot
	// readAt is when each lock was last read live, published or not.
	readAt map[string]time.Time
	err    error
	live   bool

	// Only Run's goroutine uses these.
	db    *pgx.Conn
	query string
	// cluster identifies the server (clusterOf); empty until the first
	// connection.
	cluster string
	// started is the server's start time at the last poll: another one
	// is a restart (restarted).
	started time.Time
	// restarts are the alerts of the locks whose queues went in a
	// restart, by lock, until they are due to go.
	restarts map[string]restartAlert
}

type restartAlert struct {
	alert lockqueue.Alert
	until time.Time
}

var _ lockservice.Reader = (*Reader)(nil)

// New checks cfg and returns a Reader; it connects when Run starts.
func New(cfg Config) (*Reader, error) {
	if cfg.Publish == nil {
		return nil, errors.New("postgres: Config.Publish is required")
	}
	cc, err := ConnConfig(cfg.DSN, cfg.Password)
	if err != nil {
		return nil, err
	}
	cfg.Poll = cmp.Or(cfg.Poll, DefaultPoll)
	if cfg.Poll < 0 {
		return nil, fmt.Errorf("postgres: poll %v: want a positive duration", cfg.Poll)
	}
	cfg.LongWait = orDefault(cfg.LongWait, DefaultLongWait)
	cfg.IdleGrace = orDefault(cfg.IdleGrace, DefaultIdleGrace)
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cc.ConnectTimeout == 0 || cc.ConnectTimeout > cfg.Timeout {
		cc.ConnectTimeout = cfg.Timeout
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	r := &Reader{
		cfg: cfg, conn: cc, addr: address(cc), log: cfg.Logger.With("service", Name),
		wake: make(chan struct{}, 1), closed: make(chan struct{}), last: map[string]lockqueue.Snapshot{}, readAt: map[string]time.Time{},
		err: fmt.Errorf("postgres %s: not connected yet", address(cc)),
	}
	for _, name := range cfg.Watch {
		if err := r.Watch(name); err != nil {
			return nil, err
		}
	}
	for _, kind := range cfg.Discover {
		if err := CheckDiscover(kind); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func orDefault(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}

// ConnConfig parses a DSN the way the reader connects with it: read-only
// transactions by default, application_name zklockviz unless the DSN names
// one, a statement timeout so a poll never lingers on the server.
func ConnConfig(dsn, password string) (*pgx.ConnConfig, error) {
	cc, err := pgx.ParseConfig(dsn)
	if err != nil {
		// pgx quotes the DSN first, masking its password only as best it
		// can: keep what follows, which says what is wrong.
		why := err.Error()
		if i := strings.LastIndex(why, "`: "); i >= 0 {
			why = why[i+3:]
		} else {
			why = "cannot parse it"
		}
		return nil, fmt.Errorf("--postgres: not a valid PostgreSQL connection string or URL: %s "+
			"(want postgres://USER@HOST:PORT/DB?sslmode=… or host=… user=… dbname=…)", why)
	}
	if password != "" {
		cc.Password = password
	}
	cc.RuntimeParams["default_transaction_read_only"] = "on"
	if cc.RuntimeParams["application_name"] == "" {
		cc.RuntimeParams["application_name"] = "zklockviz"
	}
	if cc.RuntimeParams["statement_timeout"] == "" {
		cc.RuntimeParams["statement_timeout"] = strconv.Itoa(int(DefaultTimeout.Milliseconds()))
	}
	return cc, nil
}

// address names the server as errors and logs show it.
func address(cc *pgx.ConnConfig) string {
	if len(cc.Host) > 0 && cc.Host[0] == '/' {
		return cc.Host + "/.s.PGSQL." + strconv.Itoa(int(cc.Port))
	}
	return net.JoinHostPort(cc.Host, strconv.Itoa(int(cc.Port)))
}

// Addr is the server's address as the reader names it.
func (r *Reader) Addr() string { return r.addr }

// Watch starts following a lock; the next poll reads it at once.
func (r *Reader) Watch(name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	r.mu.Lock()
	if !slices.Contains(r.watched, name) {
		r.watched = append(r.watched, name)
	}
	r.mu.Unlock()
	r.poke()
	return nil
}

// Unwatch stops following a lock.
func (r *Reader) Unwatch(name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	r.mu.Lock()
	i := slices.Index(r.watched, name)
	if i < 0 && r.found[name] {
		r.mu.Unlock()
		return fmt.Errorf("postgres %s: found by --watch-under postgres:%s, shown while it is held or waited on", name, discoveredBy(name))
	}
	if i >= 0 {
		r.watched = slices.Delete(r.watched, i, i+1)
		delete(r.last, name)
	}
	r.mu.Unlock()
	if i >= 0 && r.cfg.Forget != nil {
		r.cfg.Forget(lockqueue.LockID{Service: Name, Name: name}.Key())
	}
	return nil
}

func (r *Reader) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Watched lists the followed locks: those named, then those discovery
// found.
func (r *Reader) Watched() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Concat(r.watched, slices.Sorted(maps.Keys(r.found)))
}

// named lists the locks named by Watch.
func (r *Reader) named() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.watched)
}

// discovers reports whether discovery finds kind.
func (r *Reader) discovers(kind string) bool { return slices.Contains(r.cfg.Discover, kind) }

// discoveredBy is the discovery kind that finds a lock of name's recipe.
func discoveredBy(name string) string {
	if n, _ := parseName(name); n.recipe == RowLock {
		return DiscoverRows
	}
	return DiscoverAdvisory
}

// Connection is Connected while the last poll succeeded.
func (r *Reader) Connection() lockqueue.Connection {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.live {
		return lockqueue.Connected
	}
	return lockqueue.Reconnecting
}

// Err is why the last poll failed, naming the server and what to check.
func (r *Reader) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Run polls until ctx ends or Close. A failure is reported through Err,
// the log and the snapshots' Error, and the next poll tries again: the
// reader never gives up on its server.
func (r *Reader) Run(ctx context.Context) error {
	defer r.disconnect()
	t := time.NewTicker(r.cfg.Poll)
	defer t.Stop()
	for {
		r.poll(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-r.closed:
			return nil
		case <-t.C:
		case <-r.wake:
		}
	}
}

// Close stops Run, which closes the connection.
func (r *Reader) Close() { r.once.Do(func() { close(r.closed) }) }

func (r *Reader) disconnect() {
	if r.db != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		r.db.Close(ctx)
		r.db = nil
	}
}

// poll reads every watched lock with one query and publishes those that
// changed.
func (r *Reader) poll(parent context.Context) {
	ctx, cancel := context.WithTimeout(parent, r.cfg.Timeout)
	defer cancel()
	// A poll cut short by shutdown is no failure of the server.
	fail := func(err error) {
		if parent.Err() == nil {
			r.fail(err)
		}
	}
	if r.db == nil {
		if err := r.connect(ctx); err != nil {
			fail(err)
			return
		}
	}
	watched := r.named()
	advisory, rows := r.discovers(DiscoverAdvisory), r.discovers(DiscoverRows)
	if len(watched) == 0 && !advisory && !rows {
		// Nothing to read: only check that the server still answers,
		// so its errors show before the first watch.
		if err := r.db.Ping(ctx); err != nil {
			r.disconnect()
			fail(describe(r.addr, r.conn.User, err))
			return
		}
		r.ok()
		return
	}
	names := r.namesOf(watched)
	var raw []byte
	if err := r.db.QueryRow(ctx, r.query, queryArgs(names, advisory, rows)...).Scan(&raw); err != nil {
		r.disconnect()
		fail(describe(r.addr, r.conn.User, err))
		return
	}
	res, err := decodeResult(raw)
	if err != nil {
		fail(fmt.Errorf("postgres %s: %w", r.addr, err))
		return
	}
	r.ok()
	found, gone := r.refound(res.discovered(names, advisory, rows))
	if !r.started.IsZero() && !res.Started.Equal(r.started) {
		// Found locks too: one held before the restart is published once
		// more (in gone) with the alert, then dropped.
		r.restarted(slices.Concat(watched, found, gone), res)
	}
	r.started = res.Started
	waits := res.graph()
	for i, name := range slices.Concat(watched, found, gone) {
		var n lockName
		if i < len(names) {
			n = names[i]
		} else {
			n, _ = parseName(name) // made by discovered
		}
		parts, exists := res.parts(n)
		nodes, alerts := lockqueue.BuildServerQueue(lockqueue.ServerQueue{
			Recipe: n.recipe, Sessions: res.sessions(n, parts), Waits: waits, Now: res.Now,
			LongWait: r.cfg.LongWait, IdleGrace: r.cfg.IdleGrace,
		})
		if a, ok := r.restarts[name]; ok {
			if res.Now.Before(a.until) {
				alerts = append(alerts, a.alert)
			} else {
				delete(r.restarts, name)
			}
		}
		r.publish(lockqueue.Snapshot{
			Service: Name, Path: name, Recipe: n.recipe, Connection: lockqueue.Connected,
			// A lock found exists while found; one just gone is free.
			WatchSource: "pg_locks", Exists: exists || i >= len(names), Nodes: nodes, Alerts: alerts, UpdatedAt: res.Now,
		})
	}
	r.drop(gone)
}

// refound makes found the locks discovery follows, and returns them with
// those it followed before and found no more (gone): those are published
// once more, free, then dropped.
func (r *Reader) refound(found []string) (now, gone []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	next := make(map[string]bool, len(found))
	for _, name := range found {
		next[name] = true
		if !r.found[name] {
			r.log.Debug("postgres: lock found", "lock", name)
		}
	}
	for name := range r.found {
		if !next[name] && !slices.Contains(r.watched, name) {
			gone = append(gone, name)
			next[name] = true // published once more, then dropped
		}
	}
	slices.Sort(gone)
	r.found = next
	return found, gone
}

// drop stops following locks discovery found no more, and has the hub
// forget them: a lock nobody holds or waits on is no lock in pg_locks.
func (r *Reader) drop(gone []string) {
	if len(gone) == 0 {
		return
	}
	r.mu.Lock()
	var forget []string
	for _, name := range gone {
		delete(r.found, name)
		if !slices.Contains(r.watched, name) { // named meanwhile: it stays
			delete(r.last, name)
			forget = append(forget, name)
		}
	}
	r.mu.Unlock()
	for _, name := range forget {
		r.log.Debug("postgres: lock gone", "lock", name)
		if r.cfg.Forget != nil {
			r.cfg.Forget(lockqueue.LockID{Service: Name, Name: name}.Key())
		}
	}
}

// restarted tells, for each watched lock whose last snapshot had sessions
// queued, that the server restarted since: those sessions ended and their
// locks were released with them, which the queue read now (empty, or
// other sessions) would otherwise show as ordinary releases.
func (r *Reader) restarted(watched []string, res pollResult) {
	r.log.Warn("postgres: the server restarted; every session's locks went with it", "addr", r.addr,
		"startedBefore", r.started, "startedNow", res.Started)
	if r.restarts == nil {
		r.restarts = map[string]restartAlert{}
	}
	for _, name := range watched {
		r.mu.Lock()
		last, ok := r.last[name]
		r.mu.Unlock()
		if !ok || len(last.Nodes) == 0 {
			continue
		}
		var nodes, held, waited []string
		for _, n := range last.Nodes {
			nodes = append(nodes, n.Name)
			who := n.Name
			if n.Label() != "" {
				who += " (" + n.Label() + ")"
			}
			if n.Holding {
				held = append(held, who)
			} else {
				waited = append(waited, who)
			}
		}
		var was []string
		if len(held) > 0 {
			was = append(was, "held by "+strings.Join(held, ", "))
		}
		if len(waited) > 0 {
			was = append(was, "waited for by "+strings.Join(waited, ", "))
		}
		r.restarts[name] = restartAlert{until: res.Now.Add(restartAlertFor), alert: lockqueue.Alert{
			Kind: AlertReleasedInRestart, Nodes: nodes, Message: fmt.Sprintf(
				"PostgreSQL at %s restarted at %s: every session ended, and the lock (%s) was released with them, "+
					"not by their clients, which lost their connections",
				r.addr, res.Started.Local().Format(time.TimeOnly), strings.Join(was, "; "))}}
	}
}

func (r *Reader) namesOf(watched []string) []lockName {
	names := make([]lockName, 0, len(watched))
	for _, w := range watched {
		n, _ := parseName(w) // checked by Watch
		names = append(names, n)
	}
	return names
}

// connect opens the session and checks what the reader needs of it.
func (r *Reader) connect(ctx context.Context) error {
	db, err := pgx.ConnectConfig(ctx, r.conn)
	if err != nil {
		return describe(r.addr, r.conn.User, err)
	}
	var user string
	var monitor bool
	var version int
	err = db.QueryRow(ctx, `SELECT current_user, pg_has_role(current_user, 'pg_monitor', 'USAGE'),
		current_setting('server_version_num')::int`).Scan(&user, &monitor, &version)
	if err == nil && !monitor {
		err = fmt.Errorf("postgres %s: role %s lacks pg_monitor, without which other sessions' "+
			"application, client, state and query are hidden: GRANT pg_monitor TO %s", r.addr, user, user)
	} else if err != nil {
		err = describe(r.addr, r.conn.User, err)
	}
	if err != nil {
		db.Close(context.WithoutCancel(ctx))
		return err
	}
	cluster, err := r.clusterOf(ctx, db)
	if err != nil {
		db.Close(context.WithoutCancel(ctx))
		return err
	}
	r.db, r.query, r.cluster = db, queryFor(version), cluster
	return nil
}

// clusterOf identifies the server's cluster: its system identifier, the
// same on a primary and its physical replicas (and on any copy of its data
// directory), when the role may read it (any role may, on the versions
// tested, unless an administrator revoked it); else its host, port and
// database, as the reader was given them. Any other failure (the server
// gone between the connect and this query) is the connect's: named by its
// address for a moment, the lock would be recorded as another cluster's.
func (r *Reader) clusterOf(ctx context.Context, db *pgx.Conn) (string, error) {
	var id string
	err := db.QueryRow(ctx, `SELECT system_identifier::text FROM pg_control_system()`).Scan(&id)
	if err == nil && id != "" {
		return id, nil
	}
	var pg *pgconn.PgError
	if err != nil && !(errors.As(err, &pg) && (pg.Code == "42501" || pg.Code == "42883")) {
		return "", describe(r.addr, r.conn.User, err)
	}
	r.log.Debug("postgres: no system identifier; the cluster is named by its address", "addr", r.addr, "err", err)
	return r.addr + "/" + r.conn.Database, nil
}

func (r *Reader) ok() {
	r.mu.Lock()
	was := r.err
	r.err, r.live = nil, true
	r.mu.Unlock()
	if was != nil {
		r.log.Info("postgres: reading locks", "addr", r.addr)
	}
}

// fail records err and marks every watched lock's snapshot with it: the
// last known nodes stay, shown as not live.
func (r *Reader) fail(err error) {
	r.mu.Lock()
	was := r.err
	r.err, r.live = err, false
	watched := slices.Concat(r.watched, slices.Sorted(maps.Keys(r.found)))
	r.mu.Unlock()
	if was == nil || was.Error() != err.Error() {
		r.log.Warn("postgres: cannot read locks", "addr", r.addr, "err", err)
	}
	for _, name := range watched {
		r.mu.Lock()
		s, ok := r.last[name]
		r.mu.Unlock()
		n, _ := parseName(name)
		now := lockqueue.Snapshot{Service: Name, Path: name, Recipe: n.recipe, WatchSource: "pg_locks",
			Connection: lockqueue.Reconnecting, Error: err.Error(), UpdatedAt: time.Now()}
		var last *lockqueue.Snapshot
		if ok {
			last = &s
		}
		r.publish(lockqueue.LastKnown(last, now))
	}
}

// publish sends s when it differs from the lock's last snapshot in
// anything but its time, with the next revision.
func (r *Reader) publish(s lockqueue.Snapshot) {
	s.Cluster = r.cluster
	r.mu.Lock()
	prev, seen := r.last[s.Path]
	var last *lockqueue.Snapshot
	if seen {
		last = &prev
		sinceLastRead(&s, prev, r.readAt[s.Path])
	}
	if s.Live() {
		r.readAt[s.Path] = s.UpdatedAt
	}
	lockqueue.CarryHolds(last, &s, s.UpdatedAt)
	followed := r.found[s.Path] || slices.Contains(r.watched, s.Path)
	if !followed || (seen && lockqueue.SameShown(prev, s)) {
		r.mu.Unlock()
		return
	}
	s.Revision = prev.Revision + 1
	r.last[s.Path] = s
	r.mu.Unlock()
	r.cfg.Publish(s)
}

// sinceLastRead bounds when each session new to the lock since the last
// read (at, when prev was shown) queued or took it: after that read. A
// holder's Ctime is its backend's start, the only bound pg_locks gives of
// an advisory lock taken in any earlier transaction; but a session that
// was not in the lock at the last read asked after it, and a holder it
// did not see waiting would otherwise be recorded as having waited since
// its backend connected (the lab's word check found a 30 s wait recorded
// for a backend that asked 90 ms before it held).
func sinceLastRead(s *lockqueue.Snapshot, prev lockqueue.Snapshot, at time.Time) {
	if at.IsZero() || !prev.Live() {
		return
	}
	for i := range s.Nodes {
		n := &s.Nodes[i]
		if n.Ctime.Before(at) && !slices.ContainsFunc(prev.Nodes, func(m lockqueue.Node) bool { return m.Name == n.Name }) {
			n.Ctime = at
		}
	}
}

// Service is PostgreSQL for the registry; r may be nil (not connected).
func Service(r *Reader) lockservice.Service {
	s := lockservice.Service{Name: Name, Title: "PostgreSQL", CheckName: CheckName, Words: Words()}
	if r != nil {
		s.Reader = r
	}
	return s
}

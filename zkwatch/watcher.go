// Package zkwatch is the read-only live watcher: it keeps one children watch
// per lock parent (and per other folder a semaphore keeps nodes in), re-reads a parent after every change, asks every ensemble
// member which sessions really watch which nodes, and publishes whole
// lockqueue.Snapshots. It never writes to ZooKeeper.
package zkwatch

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklockviz/zklockviz/lockqueue"
)

// Defaults and bounds.
const (
	DefaultSessionTimeout = 10 * time.Second
	DefaultPoll           = time.Second
	// MaxDiscoverDepth bounds how far below a --watch-under prefix lock
	// parents are looked for: discovery keeps a children watch on every
	// level above them, and must never amount to watching the whole tree.
	MaxDiscoverDepth = 4
	// maxLevels caps the non-lock nodes discovery keeps watches on.
	maxLevels = 2000
	// settle is the least time between two reads of one parent. A burst of
	// creates then costs one read per settle, not one per create; the watch
	// re-armed by each read guarantees a final read after the burst.
	settle = 10 * time.Millisecond
	// readParallel bounds concurrent getData calls for new children.
	readParallel = 32
	retryDelay   = time.Second
	// youngMargin: a session newer than the last watch-table poll cannot be
	// in its cons list; it is not a zombie for being absent.
	youngMargin = time.Second
)

// Config configures a Watcher.
type Config struct {
	// Servers are the ensemble's client addresses, "host:port" (port 2181
	// when left out).
	Servers []string
	// Chroot, when set, is prefixed to every path; paths in snapshots are
	// relative to it.
	Chroot         string
	SessionTimeout time.Duration
	// Paths are lock parents to watch (--watch).
	Paths []string
	// Prefixes are folders below which lock parents are discovered
	// (--watch-under), at most MaxDiscoverDepth levels deep.
	Prefixes []string
	// Leases gives the lease limit of N-holder queues by path (--leases).
	Leases map[string]int
	// Publish receives every changed snapshot, whole. It is called from the
	// watcher's goroutines, one call at a time, and must not block long
	// (a hub behind it coalesces) nor call AddPath.
	Publish func(lockqueue.Snapshot)
	// Forget, when set, is called with a lock parent's path once the watcher
	// stops watching it (a discovered parent that went away), after its last
	// snapshot (Exists:false) was published: a hub behind Publish should drop
	// the path, or it keeps serving it as if it were watched. Called like
	// Publish, one call at a time, and never for a path watched again since.
	Forget func(path string)
	// Poll is how often the server's watch table is read. Default 1s.
	Poll time.Duration
	// StallGrace is how long a holder's session may keep watching another
	// node of its lock before the holder counts as stalled (its client
	// missed the wake-up). Default two polls: the table can be a poll
	// older than the listing, so a new holder may seem for a poll to still
	// watch its old predecessor.
	StallGrace time.Duration
	// AdminURLs are AdminServer base URLs, one per member (--zk-admin);
	// when empty the four-letter words on each member's client port are used.
	AdminURLs []string
	// Auth are credentials sent on every session (go-zookeeper's AddAuth,
	// which it sends again after each reconnect), e.g. {Scheme: "digest",
	// Credential: "user:password"}, for lock parents whose ACL needs them.
	Auth []Auth
	// TLS, when set, is used for every connection to the members: the
	// ZooKeeper sessions (through zk.WithDialer) and the four-letter words,
	// which the members answer on their TLS client port as well. --zk must
	// then name each member's secureClientPort. AdminServer URLs are
	// fetched with https when they say so, trusting TLS.RootCAs.
	TLS    *tls.Config
	Logger *slog.Logger
}

// Auth is one credential for ZooKeeper's auth providers.
type Auth struct {
	Scheme     string // "digest"
	Credential string // for digest, "user:password"
}

// Watcher watches lock parents. Create it with New, start it with Run.
type Watcher struct {
	cfg     Config
	root    chroot
	log     *slog.Logger
	servers []string
	http    *http.Client

	reads atomic.Int64
	// clock is the measured offset to ZooKeeper's clock, which ctimes are
	// corrected by before they are published.
	clock serverClock

	// pubMu orders publishes, so a snapshot taken before a state change
	// can never be published after it.
	pubMu sync.Mutex

	mu          sync.Mutex
	reader      Reader // nil until Run connects
	state       lockqueue.Connection
	epoch       uint64 // bumped on every new session connection
	hasSession  bool
	authed      bool // credentials sent (or none to send)
	ownSessions map[int64]bool
	locks       map[string]*lock // by user path
	byFull      map[string]*lock // by server path
	folders     map[string]*lock // a semaphore's other folders, by server path
	levels      map[string]*level
	table       lockqueue.WatchTable
	tableAt     time.Time
	tableNote   string // why the table is empty, when it is
	partialNote string // why the table covers only some members, when it does
	levelCapLog bool
	running     bool
	stopping    bool
	closed      bool
	runCtx      context.Context
	cancel      context.CancelFunc
	done        chan struct{}
	wg          sync.WaitGroup

	stateCh     chan struct{}
	stateSeq    uint64       // bumped on every connection state change
	transitions []transition // not yet published by stateLoop
	discoverCh  chan struct{}
}

// New validates cfg and returns a Watcher that has not connected yet.
func New(cfg Config) (*Watcher, error) {
	if len(cfg.Servers) == 0 {
		return nil, errors.New("zkwatch: no ZooKeeper servers given")
	}
	var servers []string
	for _, s := range cfg.Servers {
		s = strings.TrimSpace(s)
		if s == "" || strings.ContainsAny(s, "/ \t") {
			return nil, fmt.Errorf("zkwatch: bad server address %q: want host:port (give a chroot separately)", s)
		}
		servers = append(servers, s)
	}
	servers = zk.FormatServers(servers)
	root := chroot("")
	if cfg.Chroot != "" && cfg.Chroot != "/" {
		if err := ValidatePath(cfg.Chroot); err != nil {
			return nil, fmt.Errorf("zkwatch: chroot: %w", err)
		}
		root = chroot(cfg.Chroot)
	}
	if cfg.SessionTimeout == 0 {
		cfg.SessionTimeout = DefaultSessionTimeout
	}
	if cfg.SessionTimeout < 0 {
		return nil, fmt.Errorf("zkwatch: negative session timeout %v", cfg.SessionTimeout)
	}
	if cfg.Poll == 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.Poll < 0 {
		return nil, fmt.Errorf("zkwatch: negative poll interval %v", cfg.Poll)
	}
	if cfg.StallGrace == 0 {
		cfg.StallGrace = 2 * cfg.Poll
	}
	if cfg.StallGrace < 0 {
		return nil, fmt.Errorf("zkwatch: negative stall grace %v", cfg.StallGrace)
	}
	for _, u := range cfg.AdminURLs {
		pu, err := url.Parse(u)
		if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			return nil, fmt.Errorf("zkwatch: bad AdminServer URL %q: want http://host:port", u)
		}
	}
	for _, a := range cfg.Auth {
		if a.Scheme == "" || a.Credential == "" {
			return nil, errors.New("zkwatch: auth: want a scheme and a credential, e.g. digest and user:password")
		}
		if a.Scheme == "digest" && !strings.Contains(a.Credential, ":") {
			return nil, errors.New("zkwatch: auth: a digest credential is user:password")
		}
	}
	leases := map[string]int{}
	for p, n := range cfg.Leases {
		if err := ValidatePath(p); err != nil {
			return nil, fmt.Errorf("zkwatch: leases: %w", err)
		}
		if n < 0 {
			return nil, fmt.Errorf("zkwatch: leases for %s: %d is negative", p, n)
		}
		leases[p] = n
	}
	cfg.Leases = leases
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	w := &Watcher{
		cfg:         cfg,
		root:        root,
		log:         cfg.Logger.With("component", "zkwatch"),
		servers:     servers,
		http:        &http.Client{Timeout: 5 * time.Second, Transport: adminTransport(cfg.TLS)},
		state:       lockqueue.Reconnecting,
		ownSessions: map[int64]bool{},
		locks:       map[string]*lock{},
		byFull:      map[string]*lock{},
		folders:     map[string]*lock{},
		levels:      map[string]*level{},
		table:       lockqueue.NoWatches,
		tableNote:   "the server's watch table has not been read yet",
		done:        make(chan struct{}),
		stateCh:     make(chan struct{}, 1),
		discoverCh:  make(chan struct{}, 1),
	}
	for _, p := range cfg.Paths {
		if err := ValidatePath(p); err != nil {
			return nil, fmt.Errorf("zkwatch: watch: %w", err)
		}
		if _, dup := w.locks[p]; !dup {
			w.addLockLocked(p, false)
		}
	}
	for _, p := range cfg.Prefixes {
		if err := ValidatePath(p); err != nil {
			return nil, fmt.Errorf("zkwatch: watch-under: %w", err)
		}
		full := root.full(p)
		w.levels[full] = &level{full: full, path: p, root: true, dirty: true, kids: map[string]bool{}}
	}
	return w, nil
}

// Run connects and watches until ctx is done or Close is called. It returns
// nil on a clean stop.
func (w *Watcher) Run(ctx context.Context) error {
	w.mu.Lock()
	if w.running || w.closed {
		w.mu.Unlock()
		return errors.New("zkwatch: Run called twice or after Close")
	}
	ctx, cancel := context.WithCancel(ctx)
	w.running, w.runCtx, w.cancel = true, ctx, cancel
	w.mu.Unlock()
	defer close(w.done)
	defer cancel()

	w.mu.Lock()
	w.authed = len(w.cfg.Auth) == 0
	w.mu.Unlock()
	// go-zookeeper's default dialer, unless TLS.
	dialer := zk.Dialer(net.DialTimeout)
	if w.cfg.TLS != nil {
		dialer = tlsDialer(w.cfg.TLS)
	}
	conn, _, err := zk.Connect(w.servers, w.cfg.SessionTimeout,
		zk.WithEventCallback(w.onEvent),
		zk.WithLogger(zkLogger{w.log}),
		zk.WithLogInfo(false),
		zk.WithDialer(dialer),
		// go-zookeeper's default is unbounded; 16 MiB still holds the
		// listing of a folder with a few hundred thousand children.
		zk.WithMaxBufferSize(16<<20))
	if err != nil {
		return fmt.Errorf("zkwatch: connect to %s: %w", strings.Join(w.servers, ","), err)
	}
	w.log.Info("connecting", "servers", w.servers, "chroot", string(w.root), "sessionTimeout", w.cfg.SessionTimeout,
		"tls", w.cfg.TLS != nil, "auth", len(w.cfg.Auth) > 0)
	if len(w.cfg.Auth) > 0 {
		// No read goes out before the credentials: AddAuth waits for the
		// first session, and the locks wait for authed (sessionReader).
		// go-zookeeper sends them again itself before any request on a
		// later connection.
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			w.addAuth(conn)
		}()
	}

	w.mu.Lock()
	w.reader = countingReader{r: conn, n: &w.reads}
	if id := conn.SessionID(); id != 0 {
		w.ownSessions[id] = true
	}
	for _, l := range w.locks {
		w.startLockLocked(l)
		l.poke()
	}
	w.mu.Unlock()

	w.wg.Add(3)
	go func() { defer w.wg.Done(); w.stateLoop(ctx) }()
	go func() { defer w.wg.Done(); w.discoverLoop(ctx) }()
	go func() { defer w.wg.Done(); w.pollLoop(ctx) }()
	w.pokeDiscovery()

	<-ctx.Done()
	w.mu.Lock()
	w.stopping = true
	w.mu.Unlock()
	conn.Close()
	w.wg.Wait()
	w.log.Info("stopped")
	return nil
}

// Close stops Run and waits for it to return. It is safe to call more than
// once, and without Run.
func (w *Watcher) Close() {
	w.mu.Lock()
	w.closed = true
	running, cancel := w.running, w.cancel
	w.mu.Unlock()
	if running {
		cancel()
		<-w.done
	}
}

// AddPath starts watching another lock parent. Adding a path already
// watched is not an error.
func (w *Watcher) AddPath(p string) error {
	if err := ValidatePath(p); err != nil {
		return err
	}
	w.mu.Lock()
	if w.closed || w.stopping {
		w.mu.Unlock()
		return errors.New("zkwatch: watcher is closed")
	}
	if l, ok := w.locks[p]; ok {
		l.discovered = false
		w.mu.Unlock()
		return nil
	}
	l := w.addLockLocked(p, false)
	w.startLockLocked(l)
	w.mu.Unlock()
	l.poke()
	w.log.Info("watching", "path", p)
	return nil
}

// Paths lists the watched lock parents, configured and discovered, sorted.
func (w *Watcher) Paths() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := slices.Collect(maps.Keys(w.locks))
	sort.Strings(out)
	return out
}

// Snapshot returns the last published snapshot of path.
func (w *Watcher) Snapshot(p string) (lockqueue.Snapshot, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	l, ok := w.locks[p]
	if !ok || !l.published {
		return lockqueue.Snapshot{}, false
	}
	return cloneSnapshot(l.last), true
}

// Reads is the number of ZooKeeper read requests sent so far.
func (w *Watcher) Reads() int64 { return w.reads.Load() }

// Connection is the current connection state.
func (w *Watcher) Connection() lockqueue.Connection {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.state
}

func (w *Watcher) lockList() []*lock {
	out := make([]*lock, 0, len(w.locks))
	for _, l := range w.locks {
		out = append(out, l)
	}
	return out
}

// onEvent is go-zookeeper's event callback. It runs on the client's receive
// loop, so it only flags work and never blocks or calls ZooKeeper.
func (w *Watcher) onEvent(ev zk.Event) {
	w.mu.Lock()
	stopping := w.stopping
	w.mu.Unlock()
	if stopping {
		return // Close's own disconnect is not news
	}
	switch ev.Type {
	case zk.EventSession:
		w.onSession(ev.State)
	case zk.EventNodeChildrenChanged, zk.EventNodeCreated, zk.EventNodeDeleted,
		zk.EventNodeDataChanged, zk.EventNotWatching:
		w.onNodeEvent(ev.Path)
	}
}

func (w *Watcher) onNodeEvent(full string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if l := w.byFull[full]; l != nil {
		l.armed = false
		l.poke()
	}
	if l := w.folders[full]; l != nil {
		l.folders[full] = false
		l.poke()
	}
	if lv := w.levels[full]; lv != nil {
		lv.armed = false
		lv.dirty = true
		w.pokeDiscovery()
	}
}

func (w *Watcher) onSession(st zk.State) {
	w.mu.Lock()
	prev := w.state
	switch st {
	case zk.StateHasSession:
		w.state = lockqueue.Connected
		w.hasSession = true
		w.epoch++
		if w.reader != nil {
			if id := w.reader.SessionID(); id != 0 {
				w.ownSessions[id] = true
			}
		}
		// Changes may have been missed while away: re-read everything.
		// Until each re-read lands its old snapshot stays marked stale.
		for _, l := range w.locks {
			l.poke()
		}
		for _, lv := range w.levels {
			lv.dirty = true
		}
		w.pokeDiscovery()
	case zk.StateExpired:
		w.state = lockqueue.Expired
		w.hasSession = false
		w.disarmLocked()
	default:
		w.hasSession = false
		if w.state == lockqueue.Connected {
			w.state = lockqueue.Reconnecting
		}
	}
	now := w.state
	if now != prev {
		w.stateSeq++
		w.transitions = append(w.transitions, transition{seq: w.stateSeq, state: now})
	}
	w.mu.Unlock()
	if now != prev {
		switch now {
		case lockqueue.Connected:
			w.log.Info("session established", "state", now)
		case lockqueue.Expired:
			w.log.Warn("ZooKeeper session expired; a new one follows on reconnect", "state", now)
		default:
			w.log.Warn("ZooKeeper connection lost", "state", now, "event", st.String())
		}
		select {
		case w.stateCh <- struct{}{}:
		default:
		}
	}
}

func (w *Watcher) disarmLocked() {
	for _, l := range w.locks {
		l.armed = false
		for full := range l.folders {
			l.folders[full] = false
		}
	}
	for _, lv := range w.levels {
		lv.armed = false
	}
}

// transition is one connection state change.
type transition struct {
	seq   uint64
	state lockqueue.Connection
}

// stateLoop republishes every lock at once when the connection state
// changes, so no view keeps showing a stale queue as live. Each transition
// is published, even one already over (an expiry followed at once by a new
// session), so views can tell that it happened.
func (w *Watcher) stateLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.stateCh:
		}
		w.mu.Lock()
		ts := w.transitions
		w.transitions = nil
		locks := w.lockList()
		w.mu.Unlock()
		for _, tr := range ts {
			for _, l := range locks {
				w.publishLock(l, &tr)
			}
		}
	}
}

// connFor is the connection state a lock's snapshot is shown with: a
// snapshot read before the current session connection is not live even
// once the connection is back.
func (w *Watcher) connFor(l *lock) lockqueue.Connection {
	if w.state == lockqueue.Connected && l.epoch != w.epoch {
		return lockqueue.Reconnecting
	}
	return w.state
}

// emit joins l's last read with the last watch table and publishes it when
// anything but the timestamp changed.
func (w *Watcher) emit(l *lock) { w.publishLock(l, nil) }

// publishLock is emit, or, with tr, the publish of a connection state
// transition. A past transition is published only to a lock that has
// published nothing since, and a past "connected" never: it would show a
// stale queue as live.
func (w *Watcher) publishLock(l *lock, tr *transition) {
	w.pubMu.Lock()
	defer w.pubMu.Unlock()
	w.mu.Lock()
	conn := lockqueue.Connection("")
	if tr != nil && tr.seq != w.stateSeq {
		if l.stateSeq >= tr.seq || tr.state == lockqueue.Connected {
			w.mu.Unlock()
			return
		}
		conn = tr.state
	}
	if l.removed {
		// One last snapshot (Exists:false) goes out after removal; a
		// read still in flight must not follow it.
		if l.final {
			w.mu.Unlock()
			return
		}
		l.final = true
	}
	s := w.joinLocked(l, time.Now(), conn)
	changed := !l.published || !sameSnapshot(l.last, s)
	if changed {
		// Published snapshots are never modified (copy on write: each join
		// builds new nodes), so views get s itself, and base shares its
		// nodes: the same nodes, in the same order, joined.
		l.last, l.published = s, true
		l.base.Nodes = s.Nodes
	}
	if tr != nil {
		l.stateSeq = tr.seq
	} else {
		// Unchanged or not, what views have now matches the current state.
		l.stateSeq = w.stateSeq
	}
	w.mu.Unlock()
	if changed && w.cfg.Publish != nil {
		w.cfg.Publish(s)
	}
}

// joinLocked builds the snapshot to publish; conn overrides the connection
// state when set.
func (w *Watcher) joinLocked(l *lock, now time.Time, conn lockqueue.Connection) lockqueue.Snapshot {
	// A copy of the base for JoinWatches to fill in: its nodes are shared
	// with the last published snapshot, unless a read has just built
	// them, when no one else has them yet and the join fills them in
	// place (JoinWatches resets all it sets, so they stay a valid base;
	// readLock reads base nodes without the lock only after this join,
	// which its own emit waits for). Node Watching slices need no copy:
	// the join replaces them; Alerts does, as the join appends to it.
	s := l.base
	// Corrected ctimes go to the published copy only: the base keeps the
	// server's, so a correction is never applied twice.
	by, correct := w.clock.correction()
	if l.fresh && !correct {
		l.fresh = false
	} else {
		l.fresh = false
		s.Nodes = slices.Clone(l.base.Nodes) // nil stays nil, [] stays []
	}
	if correct {
		correctCtimes(s.Nodes, by)
	}
	s.Alerts = slices.Clone(l.base.Alerts)
	s.Connection = w.connFor(l)
	if conn != "" {
		s.Connection = conn
	}
	s.UpdatedAt = now
	l.missing = lockqueue.Join(&s, tableFor(&s, w.table, w.tableAt), l.missing, now, lockqueue.JoinOptions{StallGrace: w.cfg.StallGrace})
	if w.table.Source == "none" && s.Exists {
		s.Alerts = append(s.Alerts, lockqueue.Alert{Kind: lockqueue.AlertWatchSource, Nodes: []string{},
			Message: "actual watches unknown: " + w.tableNote})
	} else if w.table.Partial && s.Exists {
		s.Alerts = append(s.Alerts, lockqueue.Alert{Kind: lockqueue.AlertWatchSource, Nodes: []string{},
			Message: w.partialNote})
	}
	if s.Connection != lockqueue.Connected {
		s.Alerts = append(s.Alerts, lockqueue.Alert{Kind: lockqueue.AlertDisconnect, Nodes: []string{},
			Message: "the watcher's ZooKeeper connection is " + string(s.Connection) + ": this is the last known state, not live"})
	}
	return s
}

// tableFor marks sessions younger than the watch table as connected: the
// table could not have seen them, and calling them zombies would be wrong.
func tableFor(s *lockqueue.Snapshot, t lockqueue.WatchTable, at time.Time) lockqueue.WatchTable {
	if t.Connected == nil || t.Partial {
		// A partial table calls no one a zombie anyway, and marking a young
		// session seen would claim its watches known (none).
		return t
	}
	var young []int64
	for _, n := range s.Nodes {
		if id := n.Owner(); id != 0 && !t.Connected[id] && !n.Ctime.Before(at.Add(-youngMargin)) {
			young = append(young, id)
		}
	}
	if len(young) == 0 {
		return t
	}
	c := maps.Clone(t.Connected)
	for _, id := range young {
		c[id] = true
	}
	t.Connected = c
	return t
}

// sameSnapshot compares the nodes field by field: reflect.DeepEqual over
// 1,000 nodes took over a millisecond of each watch-table poll's re-join,
// under the locks a change's publish waits for.
func sameSnapshot(a, b lockqueue.Snapshot) bool {
	if (a.Nodes == nil) != (b.Nodes == nil) || !slices.EqualFunc(a.Nodes, b.Nodes, lockqueue.Node.Equal) {
		return false
	}
	a.UpdatedAt, b.UpdatedAt = time.Time{}, time.Time{}
	a.Nodes, b.Nodes = nil, nil
	return reflect.DeepEqual(a, b)
}

// cloneSnapshot copies the slices JoinWatches and callers may touch.
func cloneSnapshot(s lockqueue.Snapshot) lockqueue.Snapshot {
	c := s
	c.Nodes = slices.Clone(s.Nodes)
	for i := range c.Nodes {
		c.Nodes[i].Watching = slices.Clone(c.Nodes[i].Watching)
	}
	c.Alerts = slices.Clone(s.Alerts)
	for i := range c.Alerts {
		c.Alerts[i].Nodes = slices.Clone(c.Alerts[i].Nodes)
	}
	return c
}

func (w *Watcher) pokeDiscovery() {
	select {
	case w.discoverCh <- struct{}{}:
	default:
	}
}

// sessionReader returns the reader when there is a live session.
func (w *Watcher) sessionReader() (Reader, uint64, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.reader, w.epoch, w.hasSession && w.authed && w.reader != nil
}

// addAuth sends the configured credentials once, then lets the reads go.
// A failure is logged and the reads go anyway: nodes the ACLs protect then
// fail with a clear error in their snapshots.
func (w *Watcher) addAuth(conn *zk.Conn) {
	for _, a := range w.cfg.Auth {
		if err := conn.AddAuth(a.Scheme, []byte(a.Credential)); err != nil {
			w.mu.Lock()
			stopping := w.stopping
			w.mu.Unlock()
			if stopping {
				return
			}
			w.log.Error("ZooKeeper authentication failed", "scheme", a.Scheme, "err", err)
		}
	}
	w.mu.Lock()
	w.authed = true
	for _, l := range w.locks {
		l.poke()
	}
	for _, lv := range w.levels {
		lv.dirty = true
	}
	w.mu.Unlock()
	w.pokeDiscovery()
	w.log.Info("credentials sent", "count", len(w.cfg.Auth))
}

// tlsDialer dials members with TLS for go-zookeeper.
func tlsDialer(cfg *tls.Config) zk.Dialer {
	return func(network, addr string, timeout time.Duration) (net.Conn, error) {
		d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: timeout}, Config: cfg}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, fmt.Errorf("TLS to %s: %w", addr, err)
		}
		return c, nil
	}
}

// adminTransport trusts the TLS configuration's CAs for https AdminServer
// URLs; nil (the default transport) without TLS.
func adminTransport(cfg *tls.Config) http.RoundTripper {
	if cfg == nil {
		return nil
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{RootCAs: cfg.RootCAs, InsecureSkipVerify: cfg.InsecureSkipVerify, MinVersion: tls.VersionTLS12}
	return t
}

// sleep waits for d or ctx, reporting whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

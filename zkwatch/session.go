package zkwatch

import (
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/third_party/zk"
)

// session is the watcher's ZooKeeper connection and its session: the
// connection state snapshots are shown with, the epoch that tells a read
// made in an earlier session, whether reads may go out, and the watcher's
// own session ids, which are kept out of the watch table.
type session struct {
	log     *slog.Logger
	servers []string // "host:port" of every member
	// onNew runs after a session is established or the credentials are
	// sent: what changed meanwhile was missed, so everything is read again.
	onNew func()
	// onExpired runs after the session expired, taking every watch with it.
	onExpired func()
	// changed has a value after each recorded transition (see stateLoop).
	changed chan struct{}

	mu          sync.Mutex
	reader      Reader // nil until Run connects
	state       lockqueue.Connection
	epoch       uint64 // bumped on every new session connection
	hasSession  bool
	authed      bool // credentials sent (or none to send)
	own         map[int64]bool
	seq         uint64       // bumped on every connection state change
	transitions []transition // not yet published by stateLoop
}

// transition is one connection state change.
type transition struct {
	seq   uint64
	state lockqueue.Connection
}

// connView is what a publish needs of the session, read at once.
type connView struct {
	state lockqueue.Connection
	epoch uint64
	seq   uint64
}

func newSession(log *slog.Logger, servers []string, needAuth bool, onNew, onExpired func()) *session {
	return &session{
		log:       log,
		servers:   servers,
		onNew:     onNew,
		onExpired: onExpired,
		changed:   make(chan struct{}, 1),
		state:     lockqueue.Reconnecting,
		authed:    !needAuth,
		own:       map[int64]bool{},
	}
}

// connect makes go-zookeeper's connection; it connects in the background
// and reports through onEvent.
func (s *session) connect(cfg Config, onEvent func(zk.Event)) (*zk.Conn, error) {
	// go-zookeeper's default dialer, unless TLS.
	dialer := zk.Dialer(net.DialTimeout)
	if cfg.TLS != nil {
		dialer = tlsDialer(cfg.TLS, s.log)
	}
	conn, _, err := zk.Connect(s.servers, cfg.SessionTimeout,
		zk.WithEventCallback(onEvent),
		zk.WithLogger(zkLogger{s.log}),
		zk.WithLogInfo(false),
		// go-zookeeper's own bound on any other answer: one receive
		// timeout, two thirds of the session timeout.
		zk.WithDialer(boundHandshake(dialer, cfg.SessionTimeout*2/3)),
		// go-zookeeper's default is unbounded; 16 MiB still holds the
		// listing of a folder with a few hundred thousand children.
		zk.WithMaxBufferSize(16<<20))
	if err != nil {
		return nil, fmt.Errorf("zkwatch: connect to %s: %w", strings.Join(s.servers, ","), err)
	}
	return conn, nil
}

// setReader is called once the connection is made.
func (s *session) setReader(r Reader) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reader = r
	s.noteOwnLocked()
}

func (s *session) noteOwnLocked() {
	if s.reader != nil {
		if id := s.reader.SessionID(); id != 0 {
			s.own[id] = true
		}
	}
}

// live returns the reader and its epoch when reads may go out: there is a
// session and the credentials were sent.
func (s *session) live() (Reader, uint64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reader, s.epoch, s.hasSession && s.authed && s.reader != nil
}

func (s *session) view() connView {
	s.mu.Lock()
	defer s.mu.Unlock()
	return connView{state: s.state, epoch: s.epoch, seq: s.seq}
}

// ownIDs returns every session id the watcher has had, the current one
// included: the server lists their watches, which are not a client's.
func (s *session) ownIDs() map[int64]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noteOwnLocked()
	out := make(map[int64]bool, len(s.own))
	for id := range s.own {
		out[id] = true
	}
	return out
}

// takeTransitions returns the transitions not yet published.
func (s *session) takeTransitions() []transition {
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := s.transitions
	s.transitions = nil
	return ts
}

// handle takes a session event from go-zookeeper.
func (s *session) handle(st zk.State) {
	s.mu.Lock()
	prev := s.state
	switch st {
	case zk.StateHasSession:
		s.state, s.hasSession = lockqueue.Connected, true
		s.epoch++
		s.noteOwnLocked()
	case zk.StateExpired:
		s.state, s.hasSession = lockqueue.Expired, false
	default:
		s.hasSession = false
		if s.state == lockqueue.Connected {
			s.state = lockqueue.Reconnecting
		}
	}
	now := s.state
	if now != prev {
		s.seq++
		s.transitions = append(s.transitions, transition{seq: s.seq, state: now})
	}
	s.mu.Unlock()

	switch st {
	case zk.StateHasSession:
		s.onNew()
	case zk.StateExpired:
		s.onExpired()
	}
	if now != prev {
		s.logTransition(now, st)
		select {
		case s.changed <- struct{}{}:
		default:
		}
	}
}

func (s *session) logTransition(now lockqueue.Connection, st zk.State) {
	switch now {
	case lockqueue.Connected:
		s.log.Info("session established", "state", now)
	case lockqueue.Expired:
		s.log.Warn("ZooKeeper session expired; a new one follows on reconnect", "state", now)
	default:
		s.log.Warn("ZooKeeper connection lost", "state", now, "event", st.String())
	}
}

// addAuth sends the credentials once, then lets the reads go. A failure is
// logged and the reads go anyway: nodes the ACLs protect then fail with a
// clear error in their snapshots.
func (s *session) addAuth(conn *zk.Conn, auth []Auth, stopping func() bool) {
	for _, a := range auth {
		if err := conn.AddAuth(a.Scheme, []byte(a.Credential)); err != nil {
			if stopping() {
				return
			}
			s.log.Error("ZooKeeper authentication failed", "scheme", a.Scheme, "err", err)
		}
	}
	s.mu.Lock()
	s.authed = true
	s.mu.Unlock()
	s.onNew()
	s.log.Info("credentials sent", "count", len(auth))
}

// zkLogger sends go-zookeeper's chatter (every reconnect attempt) to debug;
// the watcher logs the state changes that matter itself.
type zkLogger struct{ log *slog.Logger }

func (l zkLogger) Printf(format string, args ...any) {
	l.log.Debug("zookeeper client: " + strings.TrimSpace(fmt.Sprintf(format, args...)))
}

// Package web serves zklockviz over HTTP: the JSON API, the live websocket
// feed of lock-queue snapshots, the classroom's API over each service's
// classroom with each run's websocket, and the HTML pages, all from one
// Server and one Config. It knows lock services only through lockservice
// (services.go). Every route is mapped in routes.go, errors in errors.go,
// the one socket writer in ws.go.
package web

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"path"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/hub"
	"github.com/zklockviz/zklockviz/internal/buildinfo"
	"github.com/zklockviz/zklockviz/lockservice"
)

// Config configures a Server.
type Config struct {
	Hub *hub.Hub
	// Services are the lock services this server shows, by name
	// (?service=, ZooKeeper by default). A service's Reader lets POST
	// /api/v1/watch add locks and makes watched locks known before their
	// first snapshot; its Classroom is served at /api/v1/sim (its JSON API
	// and each run's websocket). Nil is an empty registry: every service
	// is unknown.
	Services *lockservice.Registry
	// Metrics, when set, serves /metrics (the Prometheus text format).
	Metrics http.Handler
	// Build is what GET /api/v1/version answers: which build runs.
	Build buildinfo.Info
	// History, when set, answers the flight recorder's API (history.go).
	History history.Source
	// HistoryStatus, when set, says whether the recorder records, as it
	// is now; the pages say so while it does not. HistorySynced, when set,
	// says it once what was offered to the recorder before the call is
	// recorded, so that a page drawn after a change says whether that
	// change was recorded; the lock page's socket frames, which must not
	// wait on the recorder, ask HistoryStatus.
	HistoryStatus func() history.Status
	HistorySynced func() history.Status
	// Pages serves the HTML pages (/, /lock, /sim, /static/*), which
	// render the parts the lock page's socket carries; Classroom offers
	// the classroom's page among them.
	Pages     bool
	Classroom bool
	// Lab, when set, starts the Lab page's lock-lab runs (lab.go).
	Lab LabRunner
	// AllowedOrigins are extra origins allowed to open websockets and send
	// POSTs, as host patterns ("viz.example.com", "*.example.com") or with
	// a scheme ("https://viz.example.com"). The page's own host is always
	// allowed.
	AllowedOrigins []string
	// AuthToken, when set, is required on every request but /healthz, as
	// "Authorization: Bearer <token>" or as the password of HTTP basic auth
	// (any user name; browsers prompt for it).
	AuthToken string
	// WriteTimeout bounds one websocket write. Default 10s.
	WriteTimeout time.Duration
	// PingInterval is how often websockets are pinged to find dead
	// viewers. Default 30s.
	PingInterval time.Duration
	Logger       *slog.Logger
}

// Server is the HTTP side of zklockviz. It is an http.Handler.
type Server struct {
	cfg     Config
	log     *slog.Logger
	handler http.Handler

	mu       sync.Mutex
	conns    map[*websocket.Conn]net.Conn // each websocket and its hijacked connection
	closing  bool
	shutdown chan struct{} // closed when websockets must go
	streams  sync.WaitGroup

	fmu    sync.Mutex
	caches map[string]*frameCache // frames shared by the sockets of a path

	// pending are the watched locks not read yet: the API's watch and
	// unwatch renew the dashboard's list too.
	pending *pendingLocks
	// pages are the HTML pages; nil without Config.Pages.
	pages *pages
	// history watches the recorder's status; nil without one.
	history *statusWatch
	// owners are the classroom runs' owner secrets (runowner.go).
	owners runOwners
	// settling keeps a list of runs and the forgetting it drives together
	// with a new run's secret: without it a request's list, taken before
	// another request started its run, could forget that run's secret just
	// after it was given (CI saw its starter refused its own step).
	settling sync.Mutex
	// answers are the classroom's predictions (classroom_predict.go).
	answers answerBook
}

// statusWatch is the recorder's status (Config.HistoryStatus and
// HistorySynced), counting the times it was seen to change: a lock page's
// frames say it, so a frame made before a change is not shared with a
// socket opened after it.
type statusWatch struct {
	now, synced func() history.Status
	last        atomic.Uint64 // the hash of the status seen last; 0: none yet
	epoch       atomic.Uint64
	// changed is called, on a goroutine of its own, when the status is
	// seen to change.
	changed func()
	// checking is set while a check (check) waits for the recorder.
	checking atomic.Bool
}

// check has the status read once the recorder has recorded what was
// offered to it, on a goroutine of its own, unless a check is under way: a
// frame says the status as it is when the frame is made, before the
// recorder has tried to record the change the frame shows, and a failed
// write is seen (and the sockets told, changed) once it is tried.
func (w *statusWatch) check() {
	if !w.checking.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer w.checking.Store(false)
		w.get()
	}()
}

// get is the status once what was offered is recorded (HistorySynced).
func (w *statusWatch) get() history.Status { return w.note(w.synced()) }

// peek is the status as it is now.
func (w *statusWatch) peek() history.Status { return w.note(w.now()) }

func (w *statusWatch) note(st history.Status) history.Status {
	h := fnv.New64a()
	fmt.Fprint(h, st.Recording, st.Why, st.Since.UnixNano())
	sum := h.Sum64() | 1
	if old := w.last.Swap(sum); old != 0 && old != sum {
		w.epoch.Add(1)
		if w.changed != nil {
			go w.changed()
		}
	}
	return st
}

// historyEvery is how often the server looks at the recorder's status: a
// change is said to every lock page on its own, however quiet its lock.
const historyEvery = time.Second

// watchHistory looks at the recorder's status every historyEvery until the
// websockets close (statusWatch tells the sockets of a change).
func (s *Server) watchHistory() {
	t := time.NewTicker(historyEvery)
	defer t.Stop()
	for {
		select {
		case <-s.shutdown:
			return
		case <-t.C:
			s.history.peek()
		}
	}
}

// republishFollowed offers every lock a socket follows again, so that the
// frames its sockets get say what changed beside the snapshot.
func (s *Server) republishFollowed() {
	s.fmu.Lock()
	keys := slices.Collect(maps.Keys(s.caches))
	s.fmu.Unlock()
	for _, k := range keys {
		s.cfg.Hub.Republish(k)
	}
}

// historyEpoch is how many times the recorder's status was seen to change.
func (s *Server) historyEpoch() uint64 {
	if s.history == nil {
		return 0
	}
	return s.history.epoch.Load()
}

// New checks cfg and builds the Server's routes.
func New(cfg Config) (*Server, error) {
	if cfg.Hub == nil {
		return nil, errors.New("web: Config.Hub is required")
	}
	for _, p := range cfg.AllowedOrigins {
		if _, err := path.Match(p, ""); err != nil {
			return nil, fmt.Errorf("web: allowed origin %q: %w", p, err)
		}
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 10 * time.Second
	}
	if cfg.PingInterval <= 0 {
		cfg.PingInterval = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Services == nil {
		cfg.Services = &lockservice.Registry{}
	}
	s := &Server{
		cfg:      cfg,
		log:      cfg.Logger.With("component", "web"),
		conns:    map[*websocket.Conn]net.Conn{},
		shutdown: make(chan struct{}),
		caches:   map[string]*frameCache{},
		pending:  &pendingLocks{},
	}
	if cfg.HistoryStatus != nil {
		s.history = &statusWatch{now: cfg.HistoryStatus, synced: cfg.HistorySynced, changed: s.republishFollowed}
		if s.history.synced == nil {
			s.history.synced = cfg.HistoryStatus
		}
	}
	if cfg.Pages {
		s.pages = newPages(cfg, s.pending, s.history, s.log)
	}
	if s.history != nil {
		go s.watchHistory()
	}
	s.handler = s.routes()
	return s, nil
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.handler.ServeHTTP(w, r)
}

// Viewers is the number of open websockets.
func (s *Server) Viewers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// CloseWebsockets tells every websocket to close with StatusGoingAway and
// refuses new ones; it does not wait. Each socket says goodbye from its own
// goroutine, so they close concurrently. http.Server.Shutdown does not touch
// hijacked connections, so pass this to http.Server.RegisterOnShutdown.
func (s *Server) CloseWebsockets() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closing {
		s.closing = true
		close(s.shutdown)
	}
}

// Shutdown closes every websocket (see CloseWebsockets) and waits for them
// to go. When ctx ends first, the rest are cut off at once, without waiting
// for their close handshakes (a viewer that never answers would hold each
// for 5s) or stuck writes, and ctx's error is returned: Shutdown returns
// when ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	s.CloseWebsockets()
	done := make(chan struct{})
	go func() { s.streams.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		conns := maps.Clone(s.conns)
		s.mu.Unlock()
		for c, nc := range conns {
			// Closing the TCP connection under the websocket ends its
			// pending close handshake and writes at once; CloseNow then
			// only tidies up, off this goroutine.
			if nc != nil {
				nc.Close()
			}
			go c.CloseNow()
		}
		return fmt.Errorf("web: closing websockets: %w", ctx.Err())
	}
}

// track registers a websocket; it fails once shutdown has begun.
func (s *Server) track(c *websocket.Conn, nc net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.conns[c] = nc
	s.streams.Add(1)
	return true
}

func (s *Server) untrack(c *websocket.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.streams.Done()
}

func (s *Server) isClosing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

// Package simulator is the classroom's engine: it replays lock scenarios
// with real clients of a real lock service. What a service's clients do is
// its Backend's and World's (ZooKeeper's in zookeeper/zksim, Redis's in
// redis/redislock, ...); the engine performs one action a step, records
// each step with a whole lockqueue.Snapshot so runs can be stepped,
// scrubbed and replayed, and reads the history with a safety checker. It
// imports no lock service's client (TestEngineHasNoService).
//
// The package is an engine behind a Go API: a Manager starts runs
// (Manager.Start), a Run is stepped, played, sought and acted on, and a
// viewer follows it with Run.Subscribe. It has no routes, statuses or
// sockets: the web package serves the classroom over this API, and
// TestEngineHasNoWeb keeps net/http, chi and websockets out of its build.
// Errors wrap the kinds of package fault.
package simulator

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/lockservice"
)

// DefaultRoot is the sandbox the simulator writes under unless told: the
// prefix of every run's lock name.
const DefaultRoot = "/zklockviz/sim"

// ManagerConfig configures a Manager.
type ManagerConfig struct {
	// Backend is the lock service the runs use; required.
	Backend Backend
	// Root is the sandbox every run's lock lives under (DefaultRoot when empty).
	Root string
	// Publish receives every shown step's snapshot (the live hub); may be nil.
	Publish func(lockqueue.Snapshot)
	// Remove is told a run's lock path when the run goes; may be nil.
	Remove func(path string)
	Logger *slog.Logger
	// MaxRuns bounds concurrent runs (16 when zero).
	MaxRuns int
	// MaxClients bounds the clients of one run (MaxClients when zero).
	MaxClients int
	// IdleTimeout closes runs nobody has touched or watched for this long
	// (30 minutes when zero; negative: never).
	IdleTimeout time.Duration
	// ViewerGrace closes a run this long after its last viewer left (a
	// closed or killed tab), unless a viewer comes back or a command uses
	// it first (DefaultViewerGrace when zero; negative: never). Runs that
	// never had a viewer (scripts, the CLI) answer to IdleTimeout only.
	ViewerGrace time.Duration
}

// DefaultViewerGrace outlasts a page reload or a socket's reconnect.
const DefaultViewerGrace = 15 * time.Second

// DefaultMaxRuns is how many runs may be open at once unless configured.
const DefaultMaxRuns = 16

// Spec is what starts a run (POST /runs).
type Spec struct {
	// Scenario names a built-in scenario.
	Scenario string `json:"scenario"`
	// Definition is a whole scenario instead of a built-in name.
	Definition *Scenario `json:"definition,omitempty"`
	// Strategy is herd or predecessor; the scenario's own when empty.
	Strategy Strategy `json:"strategy,omitempty"`
	// Clients is how many clients a "*" step stands for; the scenario's own
	// when nil. A scenario without "*" steps has a fixed cast and takes none.
	Clients *int `json:"clients,omitempty"`
	// Fencing says whether the protected resource checks tokens; the scenario's own when nil.
	Fencing *bool `json:"fencing,omitempty"`
}

// Manager owns the simulator's runs on one Backend.
type Manager struct {
	cfg     ManagerConfig
	backend Backend
	log     *slog.Logger
	ctx     context.Context
	cancel  context.CancelFunc

	mu       sync.Mutex
	runs     map[string]*Run
	starting int // runs being started: they count against MaxRuns
	closed   bool
	wg       sync.WaitGroup
}

// New checks the configuration; the backend's server is opened with the
// first run.
func New(cfg ManagerConfig) (*Manager, error) {
	if cfg.Backend == nil {
		return nil, errors.New("simulator: no backend: say which lock service the classroom runs on")
	}
	cfg.Root = cmp.Or(cfg.Root, DefaultRoot)
	if err := CheckRoot(cfg.Root); err != nil {
		return nil, fmt.Errorf("simulator: root %w", err)
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	cfg.MaxRuns = cmp.Or(cfg.MaxRuns, DefaultMaxRuns)
	if cfg.MaxClients == 0 || cfg.MaxClients > MaxClients {
		cfg.MaxClients = MaxClients
	}
	cfg.IdleTimeout = cmp.Or(cfg.IdleTimeout, 30*time.Minute)
	cfg.ViewerGrace = cmp.Or(cfg.ViewerGrace, DefaultViewerGrace)
	ctx, cancel := context.WithCancel(context.Background())
	m := &Manager{cfg: cfg, backend: cfg.Backend, log: cfg.Logger, ctx: ctx, cancel: cancel, runs: map[string]*Run{}}
	if cfg.IdleTimeout > 0 || cfg.ViewerGrace > 0 {
		m.wg.Go(m.reap)
	}
	return m, nil
}

// CheckRoot accepts a dedicated absolute path for the sandbox, the prefix
// of every run's lock name: a backend creates and deletes what is under it
// (on ZooKeeper, znodes), so "/" and ZooKeeper's own tree are refused. The
// command line checks --sim-root with it at flag time; New checks again.
func CheckRoot(p string) error {
	switch {
	case p == "" || p[0] != '/':
		return invalidf("%q: want an absolute path such as %s", p, DefaultRoot)
	case p == "/":
		return invalidf("\"/\": want a dedicated path such as %s", DefaultRoot)
	case strings.HasSuffix(p, "/"):
		return invalidf("%q: no trailing slash", p)
	case p == "/zookeeper" || strings.HasPrefix(p, "/zookeeper/"):
		return invalidf("%q: /zookeeper is ZooKeeper's own", p)
	}
	for _, part := range strings.Split(p[1:], "/") {
		if part == "" || part == "." || part == ".." {
			return invalidf("%q: empty, '.' or '..' component", p)
		}
		for _, r := range part {
			if r < 0x20 || r == 0x7f {
				return invalidf("%q: control character", p)
			}
		}
	}
	return nil
}

// Root is the sandbox runs live under.
func (m *Manager) Root() string { return m.cfg.Root }

// MaxRuns is how many runs may be open at once.
func (m *Manager) MaxRuns() int { return m.cfg.MaxRuns }

// stepTimeout bounds one step of sc: long enough for a lost client to lose
// the lock three times over (a ZooKeeper server may round a session timeout
// up to two ticks and expires sessions a tick late) and for a few hundred
// clients to settle.
func (m *Manager) stepTimeout(sc *Scenario) time.Duration {
	return 3*max(m.backend.Timeout(sc), 2*time.Second) + 30*time.Second
}

// Scenarios lists the built-in scenarios.
func (m *Manager) Scenarios() []ScenarioInfo {
	var out []ScenarioInfo
	cat := m.backend.Catalog()
	for _, n := range cat.Names() {
		sc, _ := cat.Builtin(n)
		out = append(out, m.infoOf(sc))
	}
	return out
}

// infoOf describes sc as the classroom lists it.
func (m *Manager) infoOf(sc *Scenario) ScenarioInfo {
	info := sc.info()
	if w := m.backend.Catalog().Waiting(); w != "" {
		info.Waiting = w
		// The strategies are the choice of other services' recipes:
		// this one's waiters wait as its catalog says.
		info.StrategyFixed = "herd and predecessor do not apply: " + w
	}
	if b, ok := m.backend.(interface{ Available() error }); ok {
		if err := b.Available(); err != nil {
			info.Unavailable = err.Error()
		}
	}
	if b, ok := m.backend.(Untokened); ok {
		info.NoToken = b.NoToken(sc)
	}
	return info
}

// Definition is a built-in scenario's whole definition, as its file says
// it: what the classroom's editor starts from.
func (m *Manager) Definition(name string) (*Scenario, bool) {
	return m.backend.Catalog().Builtin(name)
}

// CheckScenario reads a scenario file exactly as `zklockviz sim --scenario
// FILE` does (the catalog's Parse: the format, then the service's own
// rules), then dry-runs its plan for its own client count against this
// server's client limit, as a run's start does. It answers the scenario as
// the classroom lists one, and the scenario, named "custom" when it has
// no name, ready to start (Spec.Definition). It opens no session.
func (m *Manager) CheckScenario(b []byte) (ScenarioInfo, *Scenario, error) {
	sc, err := m.backend.Catalog().Parse(b)
	if err != nil {
		return ScenarioInfo{}, nil, err
	}
	sc.Name = cmp.Or(sc.Name, "custom")
	if _, err := m.planOf(sc, nil); err != nil {
		return ScenarioInfo{}, nil, err
	}
	return m.infoOf(sc), sc, nil
}

// Actions are the actions the backend's clients accept.
func (m *Manager) Actions() []string { return m.backend.Actions() }

// lockKey is the hub's key of a world's lock.
func (m *Manager) lockKey(w World) string {
	return lockqueue.LockID{Service: m.backendService(), Name: w.Path()}.Key()
}

// backendService names the backend's service.
func (m *Manager) backendService() string { return m.backend.Name() }

// Start begins a run of a scenario. It opens no client session yet: the
// scenario's steps do.
func (m *Manager) Start(spec Spec) (*Run, error) {
	sc, err := m.scenarioOf(spec)
	if err != nil {
		return nil, err
	}
	strategy := cmp.Or(spec.Strategy, sc.Strategy, Predecessor)
	if _, err := ParseStrategy(string(strategy)); err != nil {
		return nil, err
	}
	plan, err := m.planOf(sc, spec.Clients)
	if err != nil {
		return nil, err
	}
	fencing := sc.Fencing == nil || *sc.Fencing
	if spec.Fencing != nil {
		fencing = *spec.Fencing
	}

	if err := m.reserve(); err != nil {
		return nil, err
	}
	// The slot is taken until the run is in m.runs or has failed to start,
	// so runs started at once cannot pass the limit together.
	defer func() {
		m.mu.Lock()
		m.starting--
		m.mu.Unlock()
	}()
	if err := m.backend.Open(m.ctx); err != nil {
		return nil, err
	}
	id, err := newID()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(m.ctx)
	r := &Run{
		m: m, id: id, sc: sc, strategy: strategy, fencing: fencing, ctx: ctx, cancel: cancel,
		plan: plan, script: slices.Clone(plan), branchFrom: -1, speed: 1, lastUsed: time.Now(), subs: map[*Subscription]struct{}{},
	}
	if err := m.launch(r); err != nil {
		cancel()
		return nil, err
	}
	return r, nil
}

// scenarioOf is the spec's scenario, a built-in of the backend's catalog
// or the spec's own definition, for this classroom's service.
func (m *Manager) scenarioOf(spec Spec) (*Scenario, error) {
	var sc *Scenario
	switch {
	case spec.Definition != nil:
		sc = spec.Definition.clone()
		if err := sc.check(); err != nil {
			return nil, err
		}
		sc.Name = cmp.Or(sc.Name, "custom")
	case spec.Scenario == "":
		return nil, invalidf("missing scenario: want one of %s", strings.Join(m.backend.Catalog().Names(), ", "))
	default:
		var ok bool
		if sc, ok = m.backend.Catalog().Builtin(spec.Scenario); !ok {
			return nil, invalidf("unknown scenario %q: want one of %s", spec.Scenario, strings.Join(m.backend.Catalog().Names(), ", "))
		}
	}
	// A scenario that names no service is this classroom's; its runs name
	// none either when its catalog's files name none (Unnamed), as the
	// snapshots of that service do.
	svc := m.backendService()
	switch {
	case sc.Service == "" && !m.backend.Catalog().Unnamed():
		sc.Service = svc
	case sc.Service != "" && sc.Service != svc:
		return nil, invalidf("scenario %s is for %s, not this classroom's service (%s)", sc.Name, sc.Service, svc)
	}
	if spec.Definition != nil {
		// A scenario sent whole meets the service's rules as a file does
		// on the command line (Catalog.Parse).
		if err := m.backend.Catalog().Check(sc); err != nil {
			return nil, err
		}
	}
	return sc, nil
}

// planOf expands sc's steps for the requested clients, checked by the
// backend's dry run and against the server's client limit.
func (m *Manager) planOf(sc *Scenario, requested *int) ([]Action, error) {
	clients, err := m.clients(sc, requested)
	if err != nil {
		return nil, err
	}
	plan, err := sc.PlanWith(clients, func(p []Action) error { return m.backend.DryRun(sc, p) })
	if err != nil {
		return nil, err
	}
	adds := 0
	for _, a := range plan {
		if IsAdd(a.Action) {
			adds++
		}
	}
	if adds > m.cfg.MaxClients {
		return nil, invalidf("%d clients: this server allows at most %d per run", adds, m.cfg.MaxClients)
	}
	return plan, nil
}

// launch opens r's world, records its first state and lists it among the
// manager's runs; on an error the world is closed again.
func (m *Manager) launch(r *Run) error {
	w, err := r.openWorld(0)
	if err != nil {
		return unavailablef("simulator: %v", err)
	}
	r.cur = w
	rec, err := r.initial(w)
	if err != nil {
		w.Close()
		return unavailablef("simulator: %v", err)
	}
	r.records = []record{rec}

	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		w.Close()
		return unavailablef("simulator: shutting down")
	}
	m.runs[r.id] = r
	m.mu.Unlock()
	m.log.Info("simulator: run started", "run", r.id, "scenario", r.sc.Name, "strategy", r.strategy, "path", w.Path(), "steps", len(r.plan))
	r.publish(rec)
	return nil
}

// clients checks a requested client count against the scenario: only a
// scenario with "*" steps takes one, from 1 to the server's limit. Zero is
// the scenario's own count.
func (m *Manager) clients(sc *Scenario, n *int) (int, error) {
	if n == nil {
		return 0, nil
	}
	if !sc.Wildcard() {
		return 0, invalidf("clients %d: scenario %s has a fixed cast (its clients are the ones its steps name): leave clients out", *n, sc.Name)
	}
	if *n < 1 || *n > m.cfg.MaxClients {
		return 0, invalidf("clients %d: want 1 to %d", *n, m.cfg.MaxClients)
	}
	return *n, nil
}

// reserve takes a run slot, or says why there is none.
func (m *Manager) reserve() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return unavailablef("simulator: shutting down")
	}
	if n := len(m.runs) + m.starting; n >= m.cfg.MaxRuns {
		return conflictf("%d runs are open, the most this server allows: delete one of yours (the classroom's run list, or DELETE /api/v1/sim/runs/{id} with the owner secret its start answered); a run also closes %s after its last viewer leaves",
			n, m.cfg.ViewerGrace)
	}
	m.starting++
	return nil
}

func newID() (string, error) {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("simulator: run id: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// Get returns a run by id and marks it in use, which keeps the reaper off
// it for a while.
func (m *Manager) Get(id string) (*Run, bool) {
	m.mu.Lock()
	r, ok := m.runs[id]
	m.mu.Unlock()
	if ok {
		r.touch()
	}
	return r, ok
}

// Runs lists the open runs' ids, oldest first.
func (m *Manager) Runs() []*Run {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.SortedFunc(maps.Values(m.runs), func(a, b *Run) int { return strings.Compare(a.pathFor(0), b.pathFor(0)) })
}

// Delete ends a run: its sessions close and its lock path is removed.
func (m *Manager) Delete(id string) error {
	m.mu.Lock()
	r, ok := m.runs[id]
	delete(m.runs, id)
	m.mu.Unlock()
	if !ok {
		return notFoundf("no run %q", id)
	}
	m.log.Info("simulator: run deleted", "run", id)
	return r.close()
}

// retire closes a world replaced by a replay and removes its lock path.
func (m *Manager) retire(w World) {
	if w == nil {
		return
	}
	if m.cfg.Remove != nil {
		m.cfg.Remove(m.lockKey(w))
	}
	if err := w.Close(); err != nil {
		m.log.Warn("simulator: clean up", "path", w.Path(), "err", err)
	}
}

// reap closes runs whose viewers left ViewerGrace ago (a closed tab) and
// runs nobody has used or watched for IdleTimeout.
func (m *Manager) reap() {
	every := time.Minute
	if m.cfg.IdleTimeout > 0 {
		every = min(every, m.cfg.IdleTimeout/4)
	}
	if m.cfg.ViewerGrace > 0 {
		every = min(every, m.cfg.ViewerGrace/4)
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-t.C:
		}
		for _, r := range m.Runs() {
			if why := m.reapable(r); why != "" {
				m.log.Info("simulator: closing a run", "run", r.id, "why", why)
				if err := m.Delete(r.id); err != nil && !errors.Is(err, ErrNotFound) {
					m.log.Warn("simulator: close a run", "run", r.id, "err", err)
				}
			}
		}
	}
}

// reapable says why r should be closed now, or "".
func (m *Manager) reapable(r *Run) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.subs) > 0 {
		return ""
	}
	idle := time.Since(r.lastUsed)
	switch {
	case r.viewed && m.cfg.ViewerGrace > 0 && idle > m.cfg.ViewerGrace:
		return "its viewers left"
	case !r.playing && m.cfg.IdleTimeout > 0 && idle > m.cfg.IdleTimeout:
		return "idle"
	}
	return ""
}

// Close ends every run, then closes the backend (which removes what it
// created on its server).
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	runs := slices.Collect(maps.Values(m.runs))
	m.runs = map[string]*Run{}
	m.mu.Unlock()

	errs := make([]error, len(runs)+1)
	var wg sync.WaitGroup
	for i, r := range runs {
		wg.Go(func() { errs[i] = r.close() })
	}
	wg.Wait()
	m.cancel()
	m.wg.Wait()
	errs[len(runs)] = m.backend.Close()
	return errors.Join(errs...)
}

// NewServerClassroom is the classroom of a service whose Backend starts its
// own server: a Manager on b, and its Classroom for the registry. Close the
// manager at shutdown; it closes b.
func NewServerClassroom(b Backend, cfg ManagerConfig) (lockservice.Classroom, *Manager, error) {
	cfg.Backend = b
	m, err := New(cfg)
	if err != nil {
		return nil, nil, err
	}
	return NewClassroom(m), m, nil
}

package simulator

import (
	"context"
	"log/slog"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// World is the service-specific half of a run: the clients of one lock on
// a real server. The engine (Run: stepping, seek by replay, play,
// subscriptions, narration plumbing, the ledger and the checker) is the
// same for every service; a World does one action at a time and tells what
// the server and its clients look like after it. A run has one World at a
// time; going back and acting replays the steps on a fresh one. Calls are
// serialised by the run.
type World interface {
	// Path names the lock as the views show it (a znode path, a Redis key).
	Path() string
	// Do performs plan step k (numbered from 1) and returns when every
	// client is at rest, with what happened.
	Do(ctx context.Context, step int, a Action) ([]Event, error)
	// Snapshot reads the lock's true state from the server. ok is false
	// when the world takes no snapshots (benchmarks of big queues).
	Snapshot() (snap lockqueue.Snapshot, ok bool, err error)
	// Stats are the clients' counters so far, summed.
	Stats() Stats
	// Clients are the clients as they are now, in the order they joined.
	Clients() []ClientInfo
	// ClockAt is the run's clock at the end of step k (0 before the first).
	ClockAt(step int) time.Duration
	// Line is the pseudocode line a client is at.
	Line(client string) int
	// Narrate tells step a from its events.
	Narrate(a Action, events []Event) string
	// Ready is record 0's narration: the empty lock.
	Ready() string
	// Close ends every client and removes what the world wrote.
	Close() error
}

// WorldSpec is what a Backend needs to open a World.
type WorldSpec struct {
	// Path is the run's lock name (the manager's Root, the scenario and
	// the run id; a fork adds ".k").
	Path     string
	Scenario *Scenario
	Strategy Strategy
	Fencing  bool
	// Publish shows a mid-step snapshot (the live hub); may be nil.
	Publish func(lockqueue.Snapshot)
	Logger  *slog.Logger
}

// Backend is a lock service's classroom: its scenarios, their rules and
// its worlds. ZooKeeper's is the default (ManagerConfig.Backend nil).
type Backend interface {
	// Open makes the server ready for runs; the manager calls it before
	// every run starts (a backend starts its server once). Its error says
	// what is missing (a package to install) and makes the run unavailable.
	Open(ctx context.Context) error
	// Catalog is the service's scenarios: its built-ins and its file
	// format's rules.
	Catalog() *Catalog
	// Actions are the actions its clients accept.
	Actions() []string
	// CheckAction checks one action against the scenario on its own
	// (wildcard: a "*" client is allowed, as in a scenario file).
	CheckAction(sc *Scenario, a Action, wildcard bool) error
	// DryRun checks a whole plan, before any client connects.
	DryRun(sc *Scenario, plan []Action) error
	// Recipe is the pseudocode the scenario's clients follow.
	Recipe(sc *Scenario, st Strategy) Recipe
	// Timeout is what a lost client takes to lose the lock (ZooKeeper's
	// session timeout, a Redis key's expiry), shown as sessionTimeoutMs.
	Timeout(sc *Scenario) time.Duration
	// Lost says why a client that believes it holds no longer does, for
	// the checker ("session had expired").
	Lost() string
	NewWorld(ctx context.Context, spec WorldSpec) (World, error)
	// Close stops what Open started.
	Close() error
}

// zkBackend is ZooKeeper's classroom: the manager's own session, its
// sandbox under Root, and the seed recipes.
type zkBackend struct{ m *Manager }

func (b zkBackend) Open(ctx context.Context) error {
	_, err := b.m.observer(ctx)
	return err
}

func (zkBackend) Catalog() *Catalog { return ZooKeeperCatalog }
func (zkBackend) Actions() []string { return Actions() }
func (zkBackend) Lost() string      { return "session had expired" }

func (zkBackend) CheckAction(sc *Scenario, a Action, wildcard bool) error {
	return checkAction(sc.Lock, a, wildcard)
}

func (zkBackend) DryRun(sc *Scenario, plan []Action) error {
	return dryRun(sc.Lock, sc.Leases, plan)
}

func (zkBackend) Recipe(sc *Scenario, st Strategy) Recipe { return RecipeFor(sc.Lock, st) }

func (b zkBackend) Timeout(*Scenario) time.Duration { return b.m.cfg.SessionTimeout }

func (b zkBackend) NewWorld(_ context.Context, spec WorldSpec) (World, error) {
	m := b.m
	w, err := newWorld(worldConfig{
		Path: spec.Path, ZPath: m.zpath(spec.Path), Servers: m.cfg.Servers, Observer: m.obs, Logger: spec.Logger,
		Lock: spec.Scenario.Lock, Leases: spec.Scenario.Leases, Strategy: spec.Strategy, Fencing: spec.Fencing,
		SessionTimeout: m.cfg.SessionTimeout, Publish: spec.Publish,
	})
	if err != nil {
		return nil, err
	}
	w.noSnapshots = m.noSnapshots
	return w, nil
}

// Close is the manager's: it owns the session and the sandbox.
func (zkBackend) Close() error { return nil }

// The ZooKeeper world as a World.

func (w *world) Path() string                                             { return w.path }
func (w *world) Do(ctx context.Context, k int, a Action) ([]Event, error) { return w.do(ctx, k, a) }
func (w *world) Stats() Stats                                             { return w.stats() }
func (w *world) ClockAt(k int) time.Duration                              { return w.clockAt(k) }
func (w *world) Close() error                                             { return w.close() }

func (w *world) Snapshot() (lockqueue.Snapshot, bool, error) {
	if w.noSnapshots {
		return lockqueue.Snapshot{}, false, nil
	}
	s, err := w.snapshot()
	return s, true, err
}

func (w *world) Clients() []ClientInfo {
	out := make([]ClientInfo, 0, len(w.clients))
	for _, c := range w.clients {
		ci := ClientInfo{
			Name: c.name, Node: c.lastNode, Mode: c.mode, State: c.state, Token: c.token,
			Line: c.line, Joined: c.joined, Since: c.since, Session: lockqueue.SessionHex(c.session),
			JoinedMs: w.clockAt(c.joined).Milliseconds(), SinceMs: w.clockAt(c.since).Milliseconds(),
		}
		if c.lastNode != "" {
			ci.Path = w.path + "/" + c.lastNode
		}
		if c.state == stWaiting && c.waitsFor != "" {
			ci.WaitsFor = w.ownerOf(c.waitsFor)
		}
		out = append(out, ci)
	}
	return out
}

func (w *world) Line(client string) int {
	if c := w.byName[client]; c != nil {
		return c.line
	}
	return 0
}

func (w *world) Narrate(a Action, events []Event) string {
	return narrate(a, events, w.lock, w.sessionTimeout)
}

func (w *world) Ready() string {
	return "Ready: " + w.path + " is empty. Each step performs one action, then waits until every client holds, waits on its watch or is gone."
}

// Client states as ClientInfo.State names them, for other backends' worlds:
// the checker and the classroom read these words.
const (
	StateWaiting  = stWaiting
	StateHolding  = stHolding
	StateReleased = stReleased
	StateCrashed  = stCrashed
	StatePaused   = stPaused
	// StateStale: believes it holds, but the server says it no longer does.
	StateStale = stStale
)

// Resource is the protected resource a world's clients write to: the same
// fencing check for every service (refuse any token older than one seen).
type Resource struct{ r resource }

// NewResource returns a resource that checks tokens when fencing is on.
func NewResource(fencing bool) *Resource {
	return &Resource{resource{fencing: fencing, token: decimalToken}}
}

// Write is a client's write with its token (0: none); it says whether the
// resource accepted it and why.
func (r *Resource) Write(client string, token int64) (bool, string) { return r.r.write(client, token) }

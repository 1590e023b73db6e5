// Package zksim is ZooKeeper's classroom: the world a simulator run plays
// on a real ensemble. Each client is its own session, reached through its
// own loopback proxy so it can be cut off (a crash) or cut off and
// restored (a GC pause); the clients follow their recipe exactly and pick
// whom to wait for with lockqueue.Build. The engine (stepping, replay, the
// checker) is package simulator's; this package is its Backend for
// ZooKeeper, as redis/redislock, etcd/etcdlock and postgres/pglock are for
// theirs.
package zksim

import (
	"cmp"
	"context"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/zklockviz/zklockviz/fault"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/simulator"
	"github.com/zklockviz/zklockviz/third_party/zk"
)

//go:embed scenarios/*.json
var builtinFS embed.FS

// Catalog is ZooKeeper's built-in scenarios, the seeds' recipes.
var Catalog = simulator.NewCatalog(simulator.CatalogConfig{
	Service: lockqueue.ZooKeeper, Title: "ZooKeeper", Unnamed: true, FS: builtinFS, Dir: "scenarios",
	Order: []string{"lock1-5", "herd", "ha-standby", "session-expiry", "gc-pause", "zk-deadlock"},
	// ZooKeeper's clients take the engine's own actions, whether a file
	// names the service or not, and lock-second in a scene of two locks.
	Validate: func(sc *simulator.Scenario) error { return checkSteps(sc, sc.Steps, true) },
})

// ErrSandboxLeft: Close could not remove the sandbox because ZooKeeper was
// unreachable. Nothing was lost (the runs are over), but the nodes stay on
// the ensemble until someone deletes them; a caller warns, it does not fail.
var ErrSandboxLeft = errors.New("the simulator's sandbox is left on ZooKeeper, which was unreachable at shutdown")

// Config is the ensemble ZooKeeper's runs play on.
type Config struct {
	// Servers are ZooKeeper's host:port addresses.
	Servers []string
	// Chroot, when set, is prefixed to every path on the server; paths in
	// snapshots stay chroot-relative.
	Chroot string
	// SessionTimeout is each client's session timeout (2s when zero). The
	// server clamps it to its minSessionTimeout (2 ticks) and maxSessionTimeout.
	SessionTimeout time.Duration
}

// New is a simulator.Manager whose runs play on ZooKeeper at cfg.Servers,
// under mc.Root on the ensemble. Its session opens with the first run;
// closing the manager removes what it created.
func New(cfg Config, mc simulator.ManagerConfig) (*simulator.Manager, error) {
	b, err := newBackend(cfg, mc)
	if err != nil {
		return nil, err
	}
	mc.Backend = b
	return simulator.New(mc)
}

// Backend is ZooKeeper's classroom for a simulator.Manager: its own
// session (which creates each run's lock node, reads snapshots and sees
// sessions expire), its sandbox under the manager's Root, and the seed
// recipes.
type Backend struct {
	cfg  Config
	root string
	log  *slog.Logger

	mu      sync.Mutex
	obs     *zk.Conn
	sess    *sessionState
	created []string // root components this backend created, deepest last

	// noSnapshots skips each step's snapshot (benchmarks of big queues).
	noSnapshots bool
	// beforeExists, in tests, is given to every world (world.beforeExists);
	// onWorld, in tests, is told of every world opened.
	beforeExists func(client, target string)
	onWorld      func(*world)
}

var (
	_ simulator.Backend     = (*Backend)(nil)
	_ simulator.TokenWorder = (*Backend)(nil)
)

// newBackend checks cfg; mc is the manager's configuration, whose Root
// (DefaultRoot when empty) is the sandbox.
func newBackend(cfg Config, mc simulator.ManagerConfig) (*Backend, error) {
	if len(cfg.Servers) == 0 {
		return nil, errors.New("simulator: no ZooKeeper servers")
	}
	if cfg.Chroot == "/" {
		cfg.Chroot = ""
	}
	if cfg.Chroot != "" {
		if err := simulator.CheckRoot(cfg.Chroot); err != nil {
			return nil, fmt.Errorf("simulator: chroot: %w", err)
		}
	}
	cfg.SessionTimeout = cmp.Or(cfg.SessionTimeout, 2*time.Second)
	if cfg.SessionTimeout < 100*time.Millisecond || cfg.SessionTimeout > 5*time.Minute {
		return nil, fmt.Errorf("simulator: session timeout %v: want 100ms to 5m", cfg.SessionTimeout)
	}
	return &Backend{cfg: cfg, root: cmp.Or(mc.Root, simulator.DefaultRoot), log: cmp.Or(mc.Logger, slog.Default())}, nil
}

func (b *Backend) zpath(p string) string { return b.cfg.Chroot + p }

// Open connects the backend's own session on first use and makes the
// sandbox.
func (b *Backend) Open(ctx context.Context) error {
	_, err := b.observer(ctx)
	return err
}

// observer returns the backend's own session, connecting on first use.
func (b *Backend) observer(ctx context.Context) (*zk.Conn, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.obs == nil {
		b.sess = newSessionState()
		conn, err := dial(b.cfg.Servers, max(10*time.Second, b.cfg.SessionTimeout), b.sess, b.log, "simulator")
		if err != nil {
			return nil, unavailablef("simulator: connect to %s: %v", strings.Join(b.cfg.Servers, ","), err)
		}
		b.obs = conn
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := b.sess.wait(ctx, func(st zk.State) bool { return st == zk.StateHasSession }); err != nil {
		return nil, unavailablef("simulator: no ZooKeeper session with %s: %v", strings.Join(b.cfg.Servers, ","), err)
	}
	if err := b.ensureRoot(); err != nil {
		return nil, err
	}
	return b.obs, nil
}

// ensureRoot creates the sandbox's missing components and remembers them,
// so Close removes exactly what the simulator added.
func (b *Backend) ensureRoot() error {
	full := b.zpath(b.root)
	p := b.cfg.Chroot
	for _, part := range strings.Split(strings.TrimPrefix(full, b.cfg.Chroot+"/"), "/") {
		p += "/" + part
		_, err := b.obs.Create(p, nil, 0, zk.WorldACL(zk.PermAll))
		switch {
		case err == nil:
			b.created = append(b.created, p)
		case errors.Is(err, zk.ErrNodeExists):
		case errors.Is(err, zk.ErrNoNode) && b.cfg.Chroot != "":
			return unavailablef("simulator: chroot %s does not exist", b.cfg.Chroot)
		default:
			return unavailablef("simulator: create %s: %v", p, err)
		}
	}
	return nil
}

// Close removes what the backend created (the manager has closed every
// run first) and closes its session.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.obs == nil {
		return nil
	}
	var errs []error
	for i := len(b.created) - 1; i >= 0; i-- {
		err := b.obs.Delete(b.created[i], -1)
		if unreachable(err) {
			errs = append(errs, fmt.Errorf("%w (delete %s by hand: zkCli.sh deleteall %s): %v", ErrSandboxLeft, b.created[0], b.created[0], err))
			break
		}
		if err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrNotEmpty) {
			errs = append(errs, fmt.Errorf("simulator: remove %s: %w", b.created[i], err))
		}
	}
	b.obs.Close()
	return errors.Join(errs...)
}

// unreachable: the connection, not the request, failed, so every later
// delete would fail the same way.
func unreachable(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) ||
		errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrClosing)
}

func (*Backend) Catalog() *simulator.Catalog     { return Catalog }
func (*Backend) Actions() []string               { return simulator.Actions() }
func (*Backend) Lost(*simulator.Scenario) string { return "session had expired" }

// Name is ZooKeeper's, the service the backend's runs are on.
func (*Backend) Name() string { return lockqueue.ZooKeeper }

// Token is a ZooKeeper token: the holder's node's czxid, in hex as
// ZooKeeper writes zxids.
func (*Backend) Token(t int64) string { return tokenText(t) }

func (*Backend) CheckAction(sc *simulator.Scenario, a simulator.Action, wildcard bool) error {
	return checkAction(sc, a, wildcard)
}

// DryRun checks the steps with the engine's own actions, then plays the
// plan on a ledger of the recipe.
func (*Backend) DryRun(sc *simulator.Scenario, plan []simulator.Action) error {
	if err := checkSteps(sc, sc.Steps, true); err != nil {
		return err
	}
	if p, scene, _ := sceneOf(sc, plan); scene {
		return dryRunScene(sc.Lock, p.Reversed, plan)
	}
	return dryRun(sc.Lock, sc.Leases, plan)
}

func (*Backend) Recipe(sc *simulator.Scenario, st simulator.Strategy) simulator.Recipe {
	return recipeFor(sc.Lock, st).Recipe
}

// Timeout is the clients' session timeout, what a lost client takes to
// lose the lock.
func (b *Backend) Timeout(*simulator.Scenario) time.Duration { return b.cfg.SessionTimeout }

func (b *Backend) NewWorld(_ context.Context, spec simulator.WorldSpec) (simulator.World, error) {
	b.mu.Lock()
	obs := b.obs
	b.mu.Unlock()
	cfg := worldConfig{Spec: spec, ZPath: b.zpath(spec.Path), Servers: b.cfg.Servers, Observer: obs, SessionTimeout: b.cfg.SessionTimeout}
	w, err := newWorld(cfg)
	if err != nil {
		return nil, err
	}
	if p, scene, _ := sceneOf(spec.Scenario, spec.Scenario.Steps); scene {
		// The second lock's mid-step snapshots are not the run's lock's.
		cfg.Spec.Path, cfg.ZPath, cfg.Spec.Publish = spec.Path+sceneSuffix, b.zpath(spec.Path+sceneSuffix), nil
		second, err := newWorld(cfg)
		if err != nil {
			w.Close()
			return nil, err
		}
		second.host, second.Resource, second.Start = w, w.Resource, w.Start
		w.second, w.reversed = second, p.Reversed
	}
	w.noSnapshots, w.beforeExists = b.noSnapshots, b.beforeExists
	if b.onWorld != nil {
		b.onWorld(w)
	}
	return w, nil
}

// The ZooKeeper world as a simulator.World.

func (w *world) Path() string { return w.path }

func (w *world) Snapshot() (lockqueue.Snapshot, bool, error) {
	if w.noSnapshots {
		return lockqueue.Snapshot{}, false, nil
	}
	s, err := w.snapshot()
	return s, true, err
}

func (w *world) Clients() []simulator.ClientInfo {
	out := make([]simulator.ClientInfo, 0, len(w.clients))
	for _, c := range w.joined() {
		ci := simulator.ClientInfo{
			Name: c.name, Node: c.lastNode, Mode: c.mode, State: c.state, Token: c.token,
			Line: c.line, Joined: c.joined, Since: c.since, Session: lockqueue.SessionHex(c.session),
			JoinedMs: w.ClockAt(c.joined).Milliseconds(), SinceMs: w.ClockAt(c.since).Milliseconds(),
		}
		if w.second != nil {
			ci.Lock = c.w.path
		}
		if c.lastNode != "" {
			ci.Path = c.w.path + "/" + c.lastNode
		}
		if c.state == simulator.StateWaiting && c.waitsFor != "" {
			ci.WaitsFor = c.w.ownerOf(c.waitsFor)
		}
		out = append(out, ci)
	}
	return out
}

// Line is the line of the client named name, wherever it joined.
func (w *world) Line(name string) int {
	if c := w.find(name); c != nil {
		return c.line
	}
	return 0
}

func (w *world) Narrate(a simulator.Action, events []simulator.Event) string {
	if w.second != nil {
		return w.narrateScene(a, events)
	}
	return narrate(a, events, w.lock, w.sessionTimeout)
}

func (w *world) Ready() string {
	return "Ready: " + w.path + " is empty. Each step performs one action, then waits until every client holds, waits on its watch or is gone."
}

// The simulator's errors are fault's kinds: web turns them into HTTP
// statuses and the CLI into exit codes.

func invalidf(format string, args ...any) error {
	return fault.Errorf(fault.Invalid, format, args...)
}

func conflictf(format string, args ...any) error {
	return fault.Errorf(fault.Conflict, format, args...)
}

func unavailablef(format string, args ...any) error {
	return fault.Errorf(fault.Unavailable, format, args...)
}

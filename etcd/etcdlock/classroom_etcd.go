package etcdlock

import (
	"context"
	"embed"
	"log/slog"
	"slices"
	"time"

	"github.com/zklockviz/zklockviz/etcd/etcdlocal"
	"github.com/zklockviz/zklockviz/fault"
	"github.com/zklockviz/zklockviz/lockservice"
	"github.com/zklockviz/zklockviz/simulator"
)

// Actions of etcd's classroom beyond the engine's own.
const (
	// ActLeave: a waiter gives up (its Lock's context is cancelled), and
	// the Mutex deletes its key from the middle of the queue.
	ActLeave = "leave"
	// ActCheckedWrite: before writing, the client checks session.Done()
	// and, in one Txn, that its key still has its create revision (the
	// Mutex's IsOwner comparison); if either fails it stops.
	ActCheckedWrite = "checked-write"
)

// params are an etcd scenario's own settings (Scenario.Params).
type params struct {
	// TTL is each client's session lease in seconds (concurrency's
	// WithTTL; its default is 60).
	TTL int `json:"ttl,omitempty"`
}

func (p params) ttl() time.Duration { return time.Duration(p.TTL) * time.Second }

func paramsOf(sc *simulator.Scenario) (params, error) {
	p := params{TTL: 5}
	if err := sc.DecodeParams(&p); err != nil {
		return p, err
	}
	// A lease under 1 s cannot be asked for; over a minute a pause step
	// would keep a classroom waiting too long.
	if p.TTL < 1 || p.TTL > 60 {
		return p, fault.Errorf(fault.Invalid, "scenario %s: ttl %d: want 1 to 60 seconds", sc.Name, p.TTL)
	}
	return p, nil
}

//go:embed scenarios/*.json
var scenarioFS embed.FS

// Catalog is etcd's scenarios: simulator's format with "service": "etcd",
// the etcd params and a dry run of its clients' rules.
var Catalog = simulator.NewCatalog(simulator.CatalogConfig{
	Service: Name, Title: "etcd", FS: scenarioFS, Dir: "scenarios",
	Order:    []string{"etcd-mutex-queue", "etcd-lease-pause"},
	Waiting:  "etcd queues waiters by create revision: each watches only the key just before its own",
	Validate: func(sc *simulator.Scenario) error { return (&Backend{}).DryRun(sc, sc.Steps) },
})

// Backend is etcd's classroom for the simulator's engine: one etcd server,
// started with the first run and stopped with the manager; each run's lock
// is its own key prefix on it.
type Backend struct {
	// Log receives etcd's output; may be nil.
	Log *slog.Logger

	srv simulator.LazyServer[*etcdlocal.Server]
}

var _ simulator.Backend = (*Backend)(nil)

// Name is the service the backend's snapshots belong to.
func (*Backend) Name() string { return Name }

// serverSpec is how the classroom starts its etcd, with etcd's warnings
// going to b.Log.
func (b *Backend) serverSpec() simulator.ServerSpec[*etcdlocal.Server] {
	return simulator.ServerSpec[*etcdlocal.Server]{
		Title: "etcd", Service: "etcd", Program: "etcd",
		NotInstalled: etcdlocal.ErrNotInstalled, Timeout: 30 * time.Second,
		Start: func(ctx context.Context) (*etcdlocal.Server, error) {
			var opts etcdlocal.Options
			if b.Log != nil {
				opts.Log = slog.NewLogLogger(b.Log.Handler(), slog.LevelWarn).Writer()
			}
			return etcdlocal.Start(ctx, opts)
		},
	}
}

// Open starts the etcd server on first use. Without etcd installed the run
// is unavailable and the error names the package.
func (b *Backend) Open(ctx context.Context) error { return b.srv.Open(ctx, b.serverSpec()) }

// Available says whether etcd is installed; its error names the package
// that provides it.
func (b *Backend) Available() error { return b.serverSpec().Available() }

// Server is the classroom's etcd, nil before the first run.
func (b *Backend) Server() *etcdlocal.Server {
	srv, _ := b.srv.Server()
	return srv
}

// Close stops the etcd server and removes its directory.
func (b *Backend) Close() error { return b.srv.Close() }

func (*Backend) Catalog() *simulator.Catalog { return Catalog }
func (*Backend) Lost(*simulator.Scenario) string {
	return "lease had expired (etcd deleted its key)"
}

// Actions are the actions an etcd client takes.
func (*Backend) Actions() []string {
	return []string{simulator.ActAdd, simulator.ActRelease, ActLeave, simulator.ActCrash, simulator.ActPause, simulator.ActWrite, ActCheckedWrite,
		simulator.ActExpire, simulator.ActWake, simulator.ActResume}
}

func (*Backend) Timeout(sc *simulator.Scenario) time.Duration {
	p, _ := paramsOf(sc)
	return p.ttl()
}

func (b *Backend) CheckAction(_ *simulator.Scenario, a simulator.Action, wildcard bool) error {
	return simulator.CheckClientAction(b.Actions(), "an etcd client", a, wildcard)
}

// Recipe is concurrency.Mutex's Lock, as client/v3/concurrency writes it:
// every waiter watches the key just before its own, whatever the run asks.
func (*Backend) Recipe(*simulator.Scenario, simulator.Strategy) simulator.Recipe {
	return simulator.Recipe{Strategy: simulator.Predecessor, Lines: recipe}
}

// recipe is the Mutex's pseudocode; the line constants point into it.
var recipe = []string{
	"session = NewSession(cli, WithTTL(ttl))  (a lease, kept alive every ttl/3)",
	"TXN if CreateRevision(pfx/lease)==0 then PUT pfx/lease (lease) ; GET first key of pfx by create revision",
	"if the first key is mine: I hold the lock",
	"else WATCH the key with the largest create revision below mine until it is deleted",
	"GET my key: gone → ErrSessionExpired, else I hold the lock",
	"work: write(resource, token = my key's create revision)",
	"checked: select session.Done(); TXN if CreateRevision(my key)==myRev; then write  -- still a race: the lease can run out between the check and the write",
	"Unlock: DELETE pfx/lease",
}

const (
	lineTxn     = 2
	lineWatch   = 4
	lineWork    = 6
	lineChecked = 7
	lineUnlock  = 8
)

// DryRun checks a plan against a model of the queue: keys in the order
// the clients joined, the first one holds; a pause or a crash ends the
// holder's lease, and a paused client goes on believing it holds. In a
// split plan (one with an expire step) the lease ends in the holder's
// expire step, and the next key's client holds from the wake step.
func (b *Backend) DryRun(sc *simulator.Scenario, plan []simulator.Action) error {
	if _, err := paramsOf(sc); err != nil {
		return err
	}
	m := mutexModel{state: map[string]string{}, paused: map[string]bool{}, split: simulator.Split(plan)}
	return simulator.WalkPlan(b, sc, plan, nil, m.step)
}

// The states of DryRun's clients; cut (its key still there) and lapsed
// (paused, its key gone) only in a split plan.
const (
	modelWaiting, modelHolding, modelStale, modelGone = "waiting", "holding", "stale", "gone"
	modelCut, modelLapsed                             = "cut", "lapsed"
)

// mutexModel is DryRun's model of a concurrency.Mutex queue.
type mutexModel struct {
	state  map[string]string
	paused map[string]bool
	queue  []string // clients with a key, by create revision
	// split: the plan tells a pause in steps; toWake: an expire step's
	// hand-over is still to come.
	split, toWake bool
}

// step checks one action of the plan and applies it.
func (m *mutexModel) step(step simulator.PlanStep) error {
	defer m.handOff()
	if done, err := m.splitStep(step); done || err != nil {
		return err
	}
	a, fail := step.Action, step.Fail
	st := m.state[a.Client]
	switch {
	case a.Action == simulator.ActAdd:
		m.state[a.Client] = modelWaiting
		m.queue = append(m.queue, a.Client)
		return nil
	case st == modelGone:
		return fail("%s has released, left or crashed", a.Client)
	case a.Action == simulator.ActWrite || a.Action == ActCheckedWrite:
		return m.write(a, st, fail)
	}
	if err := deletesOwnKey(a, st, fail); err != nil {
		return err
	}
	// Each of the rest deletes the client's key: the queue moves on.
	m.queue = slices.DeleteFunc(m.queue, func(n string) bool { return n == a.Client })
	m.state[a.Client] = modelGone
	if a.Action == simulator.ActPause {
		m.state[a.Client] = modelStale
	}
	return nil
}

// splitStep checks and applies the steps a split plan adds (done: nothing
// more to apply): a holder cut off does nothing until its expire step, a
// paused one nothing but resume after it, and a wake follows an expiry.
func (m *mutexModel) splitStep(step simulator.PlanStep) (done bool, err error) {
	a, fail := step.Action, step.Fail
	st := m.state[a.Client]
	if err := step.SplitRefused(m.split, st == modelCut, st == modelLapsed, "cut off", "its lease's expiry"); err != nil || !m.split {
		return err != nil, err
	}
	switch a.Action {
	case simulator.ActPause, simulator.ActCrash:
		if st != modelHolding {
			return false, nil // the unsplit rules refuse it
		}
		m.state[a.Client], m.paused[a.Client] = modelCut, a.Action == simulator.ActPause
	case simulator.ActExpire:
		if st != modelCut {
			return true, fail("%s has no lease running out while it is cut off: pause or crash its holder first", a.Client)
		}
		m.queue = slices.DeleteFunc(m.queue, func(n string) bool { return n == a.Client })
		m.state[a.Client], m.toWake = modelGone, true
		if m.paused[a.Client] {
			m.state[a.Client] = modelLapsed
		}
	case simulator.ActWake:
		if !m.toWake {
			return true, fail("no expire step has come before it")
		}
		m.toWake = false
	case simulator.ActResume:
		if st != modelLapsed {
			return true, fail("%s is not paused past its lease's expiry", a.Client)
		}
		m.state[a.Client] = modelStale
	default:
		return false, nil
	}
	return true, nil
}

// handOff gives the lock to the first key's client, except between an
// expire step and its wake.
func (m *mutexModel) handOff() {
	if !m.toWake && len(m.queue) > 0 && m.state[m.queue[0]] == modelWaiting {
		m.state[m.queue[0]] = modelHolding
	}
}

// write: only a client that believes it holds writes; a checked write by
// a stale one fails its check, and the client stops.
func (m *mutexModel) write(a simulator.Action, st string, fail func(string, ...any) error) error {
	if st != modelHolding && st != modelStale {
		return fail("%s", simulator.NoLock(a.Client, "write under"))
	}
	if a.Action == ActCheckedWrite && st == modelStale {
		m.state[a.Client] = modelGone
	}
	return nil
}

// deletesOwnKey checks an action that deletes the client's key: a release
// by a holder, a waiter leaving, a holder's pause or crash.
func deletesOwnKey(a simulator.Action, st string, fail func(string, ...any) error) error {
	switch a.Action {
	case simulator.ActRelease:
		if st != modelHolding && st != modelStale {
			return fail("%s: a client without it leaves instead", simulator.NoLock(a.Client, "release"))
		}
	case ActLeave:
		if st != modelWaiting {
			return fail("only a waiter leaves, and the plan has given %s the lock by that step: it releases instead", a.Client)
		}
	case simulator.ActPause, simulator.ActCrash:
		if st != modelHolding {
			return fail("%s: only a holder's %s is staged here", simulator.NoLock(a.Client, a.Action+" with"), a.Action)
		}
	}
	return nil
}

func (b *Backend) NewWorld(ctx context.Context, spec simulator.WorldSpec) (simulator.World, error) {
	p, err := paramsOf(spec.Scenario)
	if err != nil {
		return nil, err
	}
	srv := b.Server()
	if srv == nil {
		return nil, fault.Errorf(fault.Unavailable, "etcd classroom: no server (closed)")
	}
	return newWorld(ctx, srv.Endpoint(), spec, p)
}

// NewClassroom is etcd's classroom for the registry: a simulator Manager
// on a Backend. Close the returned manager at shutdown (it stops etcd).
// cfg.Backend is set here.
func NewClassroom(cfg simulator.ManagerConfig) (lockservice.Classroom, *simulator.Manager, error) {
	return simulator.NewServerClassroom(&Backend{Log: cfg.Logger}, cfg)
}

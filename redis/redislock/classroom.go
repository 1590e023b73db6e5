package redislock

import (
	"cmp"
	"context"
	"embed"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/zklockviz/zklockviz/fault"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/lockservice"
	"github.com/zklockviz/zklockviz/redis/redislocal"
	"github.com/zklockviz/zklockviz/simulator"
)

// ActWait lets time pass: the waiters poll, a watchdog renews.
const ActWait = "wait"

// Release kinds a scenario's params choose.
const (
	releaseDel = "del"
	releaseCAD = "compare-and-delete"
)

// params are a Redis scenario's own settings (Scenario.Params).
type params struct {
	// ExpiryMs is the key's PX; 0 is SETNX with no expiry. With Watchdog
	// it is the lease the watchdog renews every third of.
	ExpiryMs int64 `json:"expiryMs,omitempty"`
	// Release is "del" (no owner check, the default) or "compare-and-delete".
	Release string `json:"release,omitempty"`
	// IncrFencing: an acquirer takes a fencing token from INCR on a
	// counter key beside the lock.
	IncrFencing bool `json:"incrFencing,omitempty"`
	// Watchdog is Redisson's lock: a hash, its scripts, a renewal every
	// third of the lease, release by its unlock script.
	Watchdog bool `json:"watchdog,omitempty"`
	// RetryMs is how often a waiter polls (100 ms when zero).
	RetryMs int64 `json:"retryMs,omitempty"`
	// Masters > 1 is Redlock (redsync) on that many independent masters,
	// started for the run alone; the quorum is a majority.
	Masters int `json:"masters,omitempty"`
	// OwnServer gives the run a redis-server of its own, so the server's
	// own counters (INFO commandstats) count this run's clients alone.
	OwnServer bool `json:"ownServer,omitempty"`
	// RedsyncDefault names clients that lock with redsync's defaults (its
	// own 32 tries, 50–250 ms apart, then ErrFailed) instead of polling
	// in the classroom's pace; a wait step of one of them lasts until
	// every such Lock has returned.
	RedsyncDefault []string `json:"redsyncDefault,omitempty"`
	// CompareQueues lists services (zookeeper, etcd) to queue the run's
	// polling waiters on instead, in a compare-queues step, each on a
	// server of its own, counted by that server.
	CompareQueues []string `json:"compareQueues,omitempty"`
	// CountAll (with OwnServer) takes ServerCalls from the server's count
	// after every step, not only in wait steps: scenario 12's meter is
	// everything the server was asked.
	CountAll bool `json:"countAll,omitempty"`
}

func (p params) retryMs() int64 {
	return cmp.Or(p.RetryMs, 100)
}

func (p params) retry() time.Duration { return time.Duration(p.retryMs()) * time.Millisecond }

func paramsOf(sc *simulator.Scenario) (params, error) {
	var p params
	if err := sc.DecodeParams(&p); err != nil {
		return p, err
	}
	if msg := cmp.Or(p.lockProblem(), p.runProblem()); msg != "" {
		return p, fault.Errorf(fault.Invalid, "scenario %s: %s", sc.Name, msg)
	}
	return p, nil
}

// lockProblem says what is wrong with the lock the params ask for (its
// release, lease, watchdog and masters); "" when nothing is.
func (p params) lockProblem() string {
	switch {
	case p.Release != "" && p.Release != releaseDel && p.Release != releaseCAD:
		return fmt.Sprintf("release %q: want %q or %q", p.Release, releaseDel, releaseCAD)
	case p.ExpiryMs < 0 || p.ExpiryMs > 60_000:
		return fmt.Sprintf("expiryMs %d: want 0 (none) to 60000", p.ExpiryMs)
	case p.Watchdog && p.ExpiryMs < 300:
		return "a watchdog needs a lease (expiryMs) of at least 300"
	case p.Masters < 0 || p.Masters > 7 || p.Masters > 1 && (p.ExpiryMs == 0 || p.Watchdog || p.IncrFencing || p.Release == releaseDel):
		return fmt.Sprintf("masters %d: Redlock takes 3 to 7 masters, an expiry, and redsync's own release (no watchdog, INCR or DEL)", p.Masters)
	case len(p.RedsyncDefault) > 0 && (p.Masters > 1 || p.Watchdog || p.ExpiryMs == 0):
		return "redsyncDefault: redsync's default waiters contend for a SET NX PX key on one server (no masters, watchdog or SETNX without expiry)"
	}
	return ""
}

// runProblem says what is wrong with how the params ask the run to go (the
// queues compared, what is counted, the retry); "" when nothing is.
func (p params) runProblem() string {
	switch {
	case slices.ContainsFunc(p.CompareQueues, func(s string) bool { return s != lockqueue.ZooKeeper && s != lockqueue.Etcd }):
		return fmt.Sprintf("compareQueues %v: want %s or %s", p.CompareQueues, lockqueue.ZooKeeper, lockqueue.Etcd)
	case p.CountAll && !p.OwnServer:
		return "countAll needs ownServer: a shared server counts other runs' commands too"
	case p.RetryMs < 0 || p.RetryMs > 5000:
		return fmt.Sprintf("retryMs %d: want 10 to 5000", p.RetryMs)
	}
	return ""
}

//go:embed scenarios/*.json
var scenarioFS embed.FS

// Catalog is Redis's scenarios: simulator's format with "service": "redis",
// the Redis params and its clients' rules.
var Catalog = simulator.NewCatalog(simulator.CatalogConfig{
	Service: Name, Title: "Redis", FS: scenarioFS, Dir: "scenarios",
	Order: []string{"redis-setnx-crash", "redis-px-pause", "redis-del-third", "redis-token-fencing", "redis-watchdog",
		"redis-redlock-restart", "redis-redlock-clock", "redis-spin-cost"},
	Waiting: "Redis keeps no queue: each waiter retries SET NX on its own timer until the key is free (the watchdog lock's waiters are also woken by a publish)",
	Validate: func(sc *simulator.Scenario) error {
		_, err := sc.PlanWith(0, func(p []simulator.Action) error { return (&Backend{}).DryRun(sc, p) })
		return err
	},
})

// Backend is Redis's classroom for the simulator's engine: one
// redis-server, started with the first run and stopped with the manager;
// each run's lock is its own key on it.
type Backend struct {
	// Log receives redis-server's output; may be nil.
	Log *slog.Logger
	// QueueCost measures scenario 7's comparison (compare-queues); nil:
	// the step says it is not wired.
	QueueCost QueueCost

	srv simulator.LazyServer[*redislocal.Server]
}

var _ simulator.Backend = (*Backend)(nil)

// Name is the service the backend's snapshots belong to.
func (*Backend) Name() string { return Name }

// serverSpec is how the classroom starts its redis-server.
func (*Backend) serverSpec() simulator.ServerSpec[*redislocal.Server] {
	return simulator.ServerSpec[*redislocal.Server]{
		Title: "Redis", Service: "redis", Program: "redis-server",
		NotInstalled: redislocal.ErrNotInstalled, Timeout: 30 * time.Second,
		Start: func(ctx context.Context) (*redislocal.Server, error) {
			return redislocal.Start(ctx, redislocal.Options{})
		},
	}
}

// Open starts the redis-server on first use. Without redis-server
// installed the run is unavailable and the error names the package.
func (b *Backend) Open(ctx context.Context) error { return b.srv.Open(ctx, b.serverSpec()) }

// Available says whether redis-server is installed; its error names the
// package that provides it.
func (b *Backend) Available() error { return b.serverSpec().Available() }

// Addr is the classroom's redis-server, "" before the first run.
func (b *Backend) Addr() string {
	srv, ok := b.srv.Server()
	if !ok {
		return ""
	}
	return srv.Addr()
}

// Close stops the redis-server and removes its directory.
func (b *Backend) Close() error { return b.srv.Close() }

func (*Backend) Catalog() *simulator.Catalog { return Catalog }

// NoToken says why sc's recipe gives no fencing token (simulator.Untokened):
// only the SET NX PX + INCR script gives one.
func (*Backend) NoToken(sc *simulator.Scenario) string {
	p, err := paramsOf(sc)
	switch {
	case err != nil:
		return ""
	case p.Masters > 1:
		return "Redlock gives no fencing token: its random value tells owners apart but does not grow"
	case !p.IncrFencing:
		return "this recipe takes no fencing token (SET NX alone): the one with an INCR in the same script does"
	}
	return ""
}
func (*Backend) Lost(sc *simulator.Scenario) string {
	if p, err := paramsOf(sc); err == nil && p.Masters > 1 {
		// Its copies may have time left: what it lost is its majority.
		return "keys no longer made a majority of the masters (a master restarted empty or its clock jumped, and another client took a majority)"
	}
	return "key was no longer its own (expired, or deleted by another client)"
}

// Actions are the actions a Redis client takes.
func (*Backend) Actions() []string {
	return append([]string{simulator.ActAdd, simulator.ActRelease, simulator.ActCrash, simulator.ActPause, simulator.ActWrite, ActWait, ActCompare,
		simulator.ActExpire, simulator.ActWake, simulator.ActResume}, masterActions...)
}

func (b *Backend) Timeout(sc *simulator.Scenario) time.Duration {
	p, _ := paramsOf(sc)
	return time.Duration(p.ExpiryMs) * time.Millisecond
}

func (b *Backend) CheckAction(sc *simulator.Scenario, a simulator.Action, wildcard bool) error {
	if err := simulator.CheckClientAction(b.Actions(), "a Redis client", a, wildcard); err != nil {
		return err
	}
	p, err := paramsOf(sc)
	if err != nil {
		return err
	}
	master := false
	for i := range p.Masters {
		master = master || a.Client == masterName(i)
	}
	switch {
	case slices.Contains(masterActions, a.Action) && !master:
		if p.Masters < 2 {
			return fmt.Errorf("%s: only a Redlock scenario (masters) has masters to %s", a.Client, a.Action)
		}
		return fmt.Errorf("%s %s: name a master, M1 to M%d", a.Action, a.Client, p.Masters)
	case master && !slices.Contains(masterActions, a.Action):
		return fmt.Errorf("%s is a master: it takes %s", a.Client, strings.Join(masterActions, ", "))
	case a.Action == ActCompare && len(p.CompareQueues) == 0:
		return fmt.Errorf("%s: the scenario names no services to compare with (params.compareQueues)", a.Action)
	}
	return nil
}

func (b *Backend) NewWorld(ctx context.Context, spec simulator.WorldSpec) (simulator.World, error) {
	p, err := paramsOf(spec.Scenario)
	if err != nil {
		return nil, err
	}
	spec.Path = strings.ReplaceAll(strings.TrimPrefix(spec.Path, "/"), "/", ":")
	if p.Masters > 1 || p.OwnServer {
		ms, err := startMasters(ctx, max(1, p.Masters))
		if err != nil {
			return nil, fault.Errorf(fault.Unavailable, "redis classroom: %v", err)
		}
		return b.withQueueCost(newWorld(ctx, ms, spec, p))
	}
	addr := b.Addr()
	if addr == "" {
		return nil, fault.Errorf(fault.Unavailable, "redis classroom: no server (closed)")
	}
	return b.withQueueCost(newWorld(ctx, []*master{newMaster("", addr, nil)}, spec, p))
}

func (b *Backend) withQueueCost(w *world, err error) (simulator.World, error) {
	if err != nil {
		return nil, err
	}
	w.queueCost = b.QueueCost
	return w, nil
}

// NewClassroomWith is Redis's classroom for the registry: a simulator
// Manager on a Backend, with scenario 7's comparison wired in (cost nil:
// the step says it is not wired). Close the returned manager at shutdown
// (it stops the redis-server). cfg.Backend is set here.
func NewClassroomWith(cfg simulator.ManagerConfig, cost QueueCost) (lockservice.Classroom, *simulator.Manager, error) {
	return simulator.NewServerClassroom(&Backend{Log: cfg.Logger, QueueCost: cost}, cfg)
}

package pglock

import (
	"context"
	"embed"
	"errors"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/zklockviz/zklockviz/fault"
	"github.com/zklockviz/zklockviz/lockservice"
	"github.com/zklockviz/zklockviz/postgres/pglocal"
	"github.com/zklockviz/zklockviz/simulator"
)

// Classroom actions besides the engine's add, release, crash, pause and
// write.
const (
	// ActWait lets a second pass: the waiters sleep in the lock manager.
	ActWait = "wait"
	// ActLockSecond takes the client's second lock (the other row) in the
	// same transaction: two clients doing so in opposite order deadlock.
	ActLockSecond = "lock-second"
)

// EvDeadlock is a client's transaction aborted by PostgreSQL's deadlock
// detector (SQLSTATE 40P01).
const EvDeadlock = simulator.EvDeadlock

// deadlockTimeout is the classroom server's deadlock_timeout (PostgreSQL's
// default): how long a waiter sleeps before its backend checks for a cycle.
const deadlockTimeout = time.Second

// Lock kinds a scenario's params choose.
const (
	kindRow      = "row"
	kindAdvisory = "advisory"
)

// classParams are a PostgreSQL scenario's own settings (Scenario.Params).
type classParams struct {
	// Lock is "row" (BEGIN; SELECT … FOR UPDATE; COMMIT releases) or
	// "advisory" (pg_advisory_lock; pg_advisory_unlock releases).
	Lock string `json:"lock"`
	// IdleInTxTimeoutMs is the idle_in_transaction_session_timeout a
	// client sets as it pauses (0: none, PostgreSQL's default): the server
	// ends a session left idle in a transaction that long, and with it the
	// transaction's locks. Set at the pause, not at connect, so a holder
	// idle between slow steps is not ended before its story says.
	IdleInTxTimeoutMs int64 `json:"idleInTxTimeoutMs,omitempty"`
	// Reversed are the clients that take row 2 first and row 1 second.
	Reversed []string `json:"reversed,omitempty"`
}

func classParamsOf(sc *simulator.Scenario) (classParams, error) {
	var p classParams
	if err := sc.DecodeParams(&p); err != nil {
		return p, err
	}
	switch {
	case p.Lock != kindRow && p.Lock != kindAdvisory:
		return p, fault.Errorf(fault.Invalid, "scenario %s: params.lock %q: want %q or %q", sc.Name, p.Lock, kindRow, kindAdvisory)
	case p.IdleInTxTimeoutMs < 0 || p.IdleInTxTimeoutMs > 60_000:
		return p, fault.Errorf(fault.Invalid, "scenario %s: idleInTxTimeoutMs %d: want 0 (none) to 60000", sc.Name, p.IdleInTxTimeoutMs)
	case p.IdleInTxTimeoutMs > 0 && p.Lock != kindRow:
		return p, fault.Errorf(fault.Invalid, "scenario %s: idleInTxTimeoutMs needs a row lock (a session's advisory lock outlives its transactions)", sc.Name)
	case len(p.Reversed) > 0 && p.Lock != kindRow:
		return p, fault.Errorf(fault.Invalid, "scenario %s: reversed clients need row locks (two rows of the table)", sc.Name)
	}
	return p, nil
}

//go:embed scenarios/*.json
var scenarioFS embed.FS

// Catalog is PostgreSQL's scenarios: simulator's format with "service": "postgres",
// the PostgreSQL params and a dry run of its clients' rules.
var Catalog = simulator.NewCatalog(simulator.CatalogConfig{
	Service: Name, Title: "PostgreSQL", FS: scenarioFS, Dir: "scenarios",
	Order:    []string{"pg-row-fifo", "pg-advisory-fifo", "pg-idle-in-tx", "pg-deadlock"},
	Waiting:  "PostgreSQL's waiters sleep in the server's lock manager, queued in order: no polling, no watches",
	Validate: func(sc *simulator.Scenario) error { return (&Backend{}).DryRun(sc, sc.Steps) },
})

// Backend is PostgreSQL's classroom for the simulator's engine: one
// server (pglocal), started with the first run and stopped with the
// manager; each run has its own table, advisory key and client role on it.
type Backend struct {
	// Log receives the server's output; may be nil.
	Log *slog.Logger

	srv simulator.LazyServer[*pglocal.Server]
}

var _ simulator.Backend = (*Backend)(nil)

// Name is the service the backend's snapshots belong to.
func (*Backend) Name() string { return Name }

// serverSpec is how the classroom starts its server: with
// pg_stat_statements loaded so the runs can show what the server itself
// counted, and pgrowlocks to read who holds each row.
func (*Backend) serverSpec() simulator.ServerSpec[*pglocal.Server] {
	return simulator.ServerSpec[*pglocal.Server]{
		Title: "PostgreSQL", Service: "postgres", Program: "postgres",
		NotInstalled: pglocal.ErrNotInstalled, Installed: pglocal.Installed, Timeout: 60 * time.Second,
		Start: startClassServer,
	}
}

func startClassServer(ctx context.Context) (*pglocal.Server, error) {
	srv, err := pglocal.Start(ctx, pglocal.Options{Settings: map[string]string{
		"shared_preload_libraries": "pg_stat_statements",
		"deadlock_timeout":         deadlockTimeout.String(),
	}})
	if err != nil {
		return nil, err
	}
	db, err := pgx.Connect(ctx, srv.DSN())
	if err == nil {
		// pgrowlocks reads who holds each row of a two-row scene (Locks).
		_, err = db.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements; CREATE EXTENSION IF NOT EXISTS pgrowlocks")
		db.Close(context.WithoutCancel(ctx))
	}
	if err != nil {
		return nil, errors.Join(fault.Errorf(fault.Unavailable, "postgres classroom: set up: %v", err), srv.Close())
	}
	return srv, nil
}

// Open starts the server on first use. Without PostgreSQL installed the
// run is unavailable and the error names the package.
func (b *Backend) Open(ctx context.Context) error { return b.srv.Open(ctx, b.serverSpec()) }

// Available says whether PostgreSQL is installed; its error names the
// package that provides it.
func (b *Backend) Available() error { return b.serverSpec().Available() }

// server is the classroom's server, nil before the first run.
func (b *Backend) server() *pglocal.Server {
	srv, _ := b.srv.Server()
	return srv
}

// Close stops the server and removes its directory.
func (b *Backend) Close() error { return b.srv.Close() }

func (*Backend) Catalog() *simulator.Catalog { return Catalog }

// NoToken: a PostgreSQL lock gives no fencing token (simulator.Untokened).
func (*Backend) NoToken(*simulator.Scenario) string {
	return "a PostgreSQL lock gives no fencing token: the server itself refuses a write in a transaction it ended"
}
func (*Backend) Lost(*simulator.Scenario) string {
	return "server had ended its session (its locks went with it)"
}

// Actions are the actions a PostgreSQL client takes.
func (*Backend) Actions() []string {
	return []string{simulator.ActAdd, simulator.ActRelease, simulator.ActCrash, simulator.ActPause, simulator.ActWrite, ActWait, ActLockSecond,
		simulator.ActExpire, simulator.ActResume}
}

// Timeout is the idle-in-transaction timeout: what a silent holder takes
// to lose the lock (zero: never).
func (*Backend) Timeout(sc *simulator.Scenario) time.Duration {
	p, _ := classParamsOf(sc)
	return time.Duration(p.IdleInTxTimeoutMs) * time.Millisecond
}

func (b *Backend) CheckAction(_ *simulator.Scenario, a simulator.Action, wildcard bool) error {
	return simulator.CheckClientAction(b.Actions(), "a PostgreSQL client", a, wildcard)
}

// Recipe is the scenario's pseudocode.
func (*Backend) Recipe(sc *simulator.Scenario, _ simulator.Strategy) simulator.Recipe {
	p, _ := classParamsOf(sc)
	return simulator.Recipe{Strategy: Queued, Lines: classLinesFor(p, severalRows(sc, p)).lines}
}

// Queued is the strategy of PostgreSQL's locks: the waiter sleeps in the
// server's lock manager until the lock is granted to it.
const Queued simulator.Strategy = "server-queue"

// classLines is a recipe's pseudocode and the line of each client state
// (numbered from 1).
type classLines struct {
	lines                          []string
	acquire, second, work, release int
}

// classLinesFor is the recipe's lines; a second row lock is shown only
// where the scenario takes one (rows), so no pane shows a line that never
// runs.
func classLinesFor(p classParams, rows bool) classLines {
	if p.Lock == kindAdvisory {
		return classLines{lines: []string{
			"SELECT pg_advisory_lock(K)  -- sleeps in the lock manager until granted",
			"work: write(resource)",
			"SELECT pg_advisory_unlock(K)  -- or the session ends",
		}, acquire: 1, work: 2, release: 3}
	}
	if !rows {
		return classLines{lines: []string{
			"BEGIN",
			"SELECT * FROM T WHERE id = 1 FOR UPDATE  -- sleeps until the row's locker ends",
			"work: INSERT INTO T_writes (client) VALUES (me); write(resource)",
			"COMMIT  -- or ROLLBACK, or the session ends",
		}, acquire: 2, work: 3, release: 4}
	}
	return classLines{lines: []string{
		"BEGIN",
		"SELECT * FROM T WHERE id = 1 FOR UPDATE  -- sleeps until the row's locker ends",
		"SELECT * FROM T WHERE id = 2 FOR UPDATE  -- a second lock, same transaction",
		"work: INSERT INTO T_writes (client) VALUES (me); write(resource)",
		"COMMIT  -- or ROLLBACK, or the session ends",
	}, acquire: 2, second: 3, work: 4, release: 5}
}

// DryRun checks a plan against a model of the locks: per client whether it
// is connected, holds, waits or is silent. Who gets a freed lock is the
// server's to say (FIFO), so the model only refuses what no order allows.
// In a split plan (one with an expire step) a pause ends in the holder's
// expire step and the client comes back in its resume step; the lock
// manager hands the lock over in the expire step itself, so there is no
// wake step.
func (b *Backend) DryRun(sc *simulator.Scenario, plan []simulator.Action) error {
	p, err := classParamsOf(sc)
	if err != nil {
		return err
	}
	clients := map[string]*modelClient{}
	split := simulator.Split(plan)
	wait := func(a simulator.Action) bool { return a.Action == ActWait }
	return simulator.WalkPlan(b, sc, plan, wait, func(st simulator.PlanStep) error {
		a := st.Action
		if a.Action == simulator.ActAdd {
			clients[a.Client] = &modelClient{}
			return nil
		}
		if a.Action == ActWait {
			return nil
		}
		if done, err := dryRunSplit(st, clients[a.Client], p, split); done || err != nil {
			return err
		}
		return dryRunStep(st, clients[a.Client], p)
	})
}

// modelClient is one client in DryRun's model. gone: released, crashed
// or paused (its session ends); in a split plan cut (paused, its session
// not yet ended) and lapsed (ended, the client still paused).
type modelClient struct {
	gone, paused, second, cut, lapsed bool
}

// dryRunSplit checks and applies the steps a split plan adds (done:
// nothing more to apply): a paused holder does nothing before its expire
// step, and nothing but resume after it.
func dryRunSplit(st simulator.PlanStep, c *modelClient, p classParams, split bool) (done bool, err error) {
	a := st.Action.Action
	if err := st.SplitRefused(split, c.cut, c.lapsed, "paused in its transaction", "the end of its session"); err != nil || !split {
		return err != nil, err
	}
	switch a {
	case simulator.ActExpire:
		if !c.cut {
			return true, st.Fail("%s has no session idle in its transaction to end: pause it first (a crash ends its session at once)", st.Client)
		}
		c.cut, c.lapsed = false, true
	case simulator.ActResume:
		if !c.lapsed {
			return true, st.Fail("%s is not paused past the end of its session", st.Client)
		}
		c.lapsed = false
	case simulator.ActPause:
		if c.gone {
			return false, nil // the unsplit rules refuse it
		}
		if err := dryRunStep(st, c, p); err != nil {
			return true, err
		}
		c.cut = true
	}
	return simulator.IsSplitAction(a) || a == simulator.ActPause, nil
}

// dryRunStep checks and applies one of the unsplit actions.
func dryRunStep(st simulator.PlanStep, c *modelClient, p classParams) error {
	a, fail := st.Action, st.Fail
	if c.gone && a.Action != simulator.ActWrite {
		return fail("%s has released, crashed or lost its session", a.Client)
	}
	switch a.Action {
	case ActLockSecond:
		if p.Lock != kindRow {
			return fail("a second lock needs a row-lock scenario")
		}
		if c.second {
			return fail("%s already took its second lock", a.Client)
		}
		c.second = true
	case simulator.ActPause:
		if p.IdleInTxTimeoutMs == 0 {
			return fail("without idleInTxTimeoutMs the server never ends an idle transaction, so the pause would never end: crash the holder instead")
		}
		c.paused, c.gone = true, true
	case simulator.ActRelease, simulator.ActCrash:
		c.gone = true
	case simulator.ActWrite:
		if c.gone && !c.paused {
			return fail("%s has released or crashed", a.Client)
		}
	}
	return nil
}

func (b *Backend) NewWorld(ctx context.Context, spec simulator.WorldSpec) (simulator.World, error) {
	p, err := classParamsOf(spec.Scenario)
	if err != nil {
		return nil, err
	}
	srv := b.server()
	if srv == nil {
		return nil, fault.Errorf(fault.Unavailable, "postgres classroom: no server (closed)")
	}
	return newClassWorld(ctx, srv, spec, p)
}

// NewClassroom is PostgreSQL's classroom for the registry: a simulator
// Manager on a Backend. Close the returned manager at shutdown (it stops
// the server). cfg.Backend is set here.
func NewClassroom(cfg simulator.ManagerConfig) (lockservice.Classroom, *simulator.Manager, error) {
	return simulator.NewServerClassroom(&Backend{Log: cfg.Logger}, cfg)
}

// Warm starts the server in the background when PostgreSQL is installed:
// initdb and the postmaster's start take a second or more, which the
// first run would otherwise wait for. The classroom page calls it
// (lockservice.Warmer), so serve --sim starts no PostgreSQL until a
// teacher opens the classroom.
func (b *Backend) Warm() {
	if b.Available() == nil {
		b.srv.Prestart(b.serverSpec())
	}
}

package pglock

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/postgres/pglocal"
	"github.com/zklockviz/zklockviz/proxy"
	"github.com/zklockviz/zklockviz/simulator"
)

// classIdleGrace is the classroom's idle-in-transaction alert threshold:
// shorter than the live reader's, so a run shows it within a step or two.
const classIdleGrace = time.Second

// settlePoll is how often a step re-reads pg_locks while it waits for
// every client to be at rest (granted, or asleep in the lock manager).
const settlePoll = 10 * time.Millisecond

// pgClient is one PostgreSQL client: its own pgx connection through its
// own loopback proxy, so a crash is a dead connection the server sees.
type pgClient struct {
	name     string
	proxy    *proxy.Proxy
	conn     *pgx.Conn
	pid      uint32
	state    string
	joined   int
	since    int
	line     int
	reversed bool
	stats    simulator.Stats
	// pending carries the result of the lock statement in flight (nil
	// when none): the client sleeps in the lock manager until it returns.
	pending chan error
	second  bool // the statement in flight is its second lock
	// secondAt is the step its second lock was granted (0: not yet).
	secondAt int
	asleep   bool // its wait has been told
	// cutHeld: paused while it held, in a split scenario; lapsed: the
	// server has since ended its session (its expire step).
	cutHeld, lapsed bool
}

// classWorld is one run's lock on the classroom's server: a table with
// two rows, or an advisory key, and a role its clients log in as (so the
// server's pg_stat_statements counts their statements apart).
type classWorld struct {
	simulator.Base

	lockName string
	name     lockName
	table    string
	key      int64
	role     string
	dsn      *url.URL // the clients' DSN; the host is each client's proxy
	srvAddr  string
	obs      *pgx.Conn // the classroom's own superuser session
	query    string
	// rows: the scenario locks both rows, each a lock of its own (Locks);
	// waitStart is pg_locks' wait start column on this server.
	rows      bool
	waitStart string
	p         classParams
	lines     classLines

	clients []*pgClient
	byName  map[string]*pgClient
	byPid   map[uint32]*pgClient
	calls   int64 // the server's count of the clients' statements (pg_stat_statements)
	// broken is the cycle the deadlock detector broke in this step, drawn
	// as an alert on the step's snapshot.
	broken *lockqueue.Alert
	// cycleStands: the last step ended with a wait cycle standing, which
	// PostgreSQL's deadlock check breaks deadlock_timeout after the wait
	// began; the next step tells that first.
	cycleStands bool
}

// ident makes a run's path a lower-case SQL identifier.
func ident(prefix, path string) string {
	base := path[strings.LastIndex(path, "/")+1:]
	var b strings.Builder
	b.WriteString(prefix)
	for _, r := range strings.ToLower(base) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	s := b.String()
	if len(s) > 50 {
		h := fnv.New32a()
		h.Write([]byte(path))
		s = s[:40] + "_" + strconv.FormatUint(uint64(h.Sum32()), 16)
	}
	return s
}

func newClassWorld(ctx context.Context, srv *pglocal.Server, spec simulator.WorldSpec, p classParams) (*classWorld, error) {
	h := fnv.New64a()
	h.Write([]byte(spec.Path))
	w := &classWorld{
		table: "public." + ident("zkv_", spec.Path), key: int64(h.Sum64() >> 1), role: ident("zkv_client_", spec.Path),
		srvAddr: srv.Addr(), p: p, lines: classLinesFor(p, severalRows(spec.Scenario, p)), rows: severalRows(spec.Scenario, p),
		byName: map[string]*pgClient{}, byPid: map[uint32]*pgClient{}, Base: simulator.NewBase(spec),
	}
	if p.Lock == kindRow {
		w.lockName = "table/" + w.table
	} else {
		w.lockName = "advisory/" + strconv.FormatInt(w.key, 10)
	}
	n, err := parseName(w.lockName)
	if err != nil {
		return nil, err
	}
	w.name = n
	w.dsn = &url.URL{Scheme: "postgres", User: url.User(w.role), Path: "/postgres", RawQuery: "sslmode=disable"}
	obs, err := pgx.Connect(ctx, srv.DSN())
	if err != nil {
		return nil, fmt.Errorf("postgres %s: %w", srv.Addr(), err)
	}
	w.obs = obs
	var version int
	setup := []string{
		"CREATE ROLE " + w.role + " LOGIN",
		"CREATE TABLE " + w.table + " (id int PRIMARY KEY)",
		"INSERT INTO " + w.table + " (id) VALUES (1), (2)",
		"GRANT SELECT, UPDATE ON " + w.table + " TO " + w.role,
		"CREATE TABLE " + w.writes() + " (client text NOT NULL, at timestamptz NOT NULL DEFAULT now())",
		"GRANT INSERT ON " + w.writes() + " TO " + w.role,
	}
	for _, q := range setup {
		if _, err := obs.Exec(ctx, q); err != nil {
			return nil, errors.Join(fmt.Errorf("postgres classroom: %s: %w", q, err), w.Close())
		}
	}
	if err := obs.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		return nil, errors.Join(fmt.Errorf("postgres classroom: server version: %w", err), w.Close())
	}
	w.query, w.waitStart = queryFor(version), waitStartColumn(version)
	return w, nil
}

func (w *classWorld) Path() string { return w.lockName }

func (w *classWorld) Ready() string {
	what := fmt.Sprintf("the rows of %s are unlocked", w.table)
	if w.p.Lock == kindAdvisory {
		what = fmt.Sprintf("advisory key %d is free", w.key)
	}
	return "Ready: " + what + ". Each step performs one action, then waits until every client holds or sleeps in the server's lock manager."
}

func (w *classWorld) Line(name string) int {
	return simulator.LineOf(w.byName, name, func(c *pgClient) int { return c.line })
}

// Stats are the clients' counters; Commands is the server's own count of
// their statements (pg_stat_statements), not the classroom's.
func (w *classWorld) Stats() simulator.Stats {
	var s simulator.Stats
	for _, c := range w.clients {
		s.Add(c.stats)
	}
	s.Commands = int(w.calls)
	return s
}

func (w *classWorld) Clients() []simulator.ClientInfo {
	out := make([]simulator.ClientInfo, 0, len(w.clients))
	for _, c := range w.clients {
		ci := simulator.ClientInfo{
			Name: c.name, Node: nodeName(int(c.pid)), Path: w.lockName, Mode: lockqueue.Exclusive, State: c.state,
			Session: nodeName(int(c.pid)), Line: c.line, Joined: c.joined, Since: c.since,
			JoinedMs: w.ClockAt(c.joined).Milliseconds(), SinceMs: w.ClockAt(c.since).Milliseconds(),
		}
		out = append(out, ci)
	}
	return out
}

// Close ends every client and drops the run's table and role.
func (w *classWorld) Close() error {
	for _, c := range w.clients {
		c.close()
	}
	if w.obs == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var errs []error
	// The clients' backends may still be ending after their proxies closed.
	if _, err := w.obs.Exec(ctx, "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE usename = $1", w.role); err != nil {
		errs = append(errs, err)
	}
	for _, q := range []string{"DROP TABLE IF EXISTS " + w.table, "DROP TABLE IF EXISTS " + w.writes(), "DROP ROLE IF EXISTS " + w.role} {
		if _, err := w.obs.Exec(ctx, q); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", q, err))
		}
	}
	errs = append(errs, w.obs.Close(ctx))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("postgres classroom: clean up %s: %w", w.lockName, err)
	}
	return nil
}

// secondRow is the row c locks second: row 2, or row 1 for a client that
// takes them in reversed order.
func (c *pgClient) secondRow() int {
	if c.reversed {
		return 1
	}
	return 2
}

func (c *pgClient) close() {
	c.proxy.Close()
	if c.pending != nil {
		<-c.pending // the cut connection fails the statement in flight
		c.pending = nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c.conn.Close(ctx)
}

// Do performs one action and waits until every client is at rest.
func (w *classWorld) Do(ctx context.Context, step int, a simulator.Action) ([]simulator.Event, error) {
	w.Begin(step)
	w.broken = nil
	if w.cycleStands {
		// Whatever the step, the deadlock check has run (or runs now) first:
		// a step taken 0.1 s or 30 s after the cycle closed tells the same.
		if err := w.settle(ctx, true); err != nil {
			return w.Events, fmt.Errorf("step %d: %w", step, err)
		}
		if a.Action == ActWait {
			// The wait was the deadlock check's.
			return w.endStep(ctx, step, true)
		}
	}
	if err := w.act(ctx, a); err != nil {
		return w.Events, fmt.Errorf("step %d: %s %s: %w", step, a.Action, a.Client, err)
	}
	return w.endStep(ctx, step, false)
}

// endStep waits for the clients to be at rest and ends the step. A wait
// cycle is rest only when breakCycle is false: the step that closes one
// shows it standing.
func (w *classWorld) endStep(ctx context.Context, step int, breakCycle bool) ([]simulator.Event, error) {
	if err := w.settle(ctx, breakCycle); err != nil {
		return w.Events, fmt.Errorf("step %d: %w", step, err)
	}
	if err := w.count(ctx); err != nil {
		return w.Events, fmt.Errorf("step %d: %w", step, err)
	}
	w.End()
	return w.Events, nil
}

func (w *classWorld) act(ctx context.Context, a simulator.Action) error {
	if a.Action == simulator.ActAdd {
		return w.add(ctx, a.Client)
	}
	if a.Action == ActWait {
		return w.wait(ctx)
	}
	c := w.byName[a.Client]
	if c == nil {
		return fmt.Errorf("unknown client %s", a.Client)
	}
	switch a.Action {
	case ActLockSecond:
		if c.state != simulator.StateHolding {
			return fmt.Errorf("%s holds nothing (%s)", c.name, c.state)
		}
		c.line = w.lines.second
		w.lockAsync(c, fmt.Sprintf("SELECT id FROM %s WHERE id = %d FOR UPDATE", w.table, c.secondRow()), true)
		return nil
	case simulator.ActRelease:
		return w.release(ctx, c)
	case simulator.ActCrash:
		return w.crash(ctx, c)
	case simulator.ActPause:
		if w.Split {
			return w.pauseSplit(ctx, c)
		}
		return w.pause(ctx, c)
	case simulator.ActExpire:
		return w.expire(ctx, c)
	case simulator.ActResume:
		return w.resume(c)
	case simulator.ActWrite:
		return w.write(ctx, c)
	}
	return fmt.Errorf("unknown action %q", a.Action)
}

func (w *classWorld) add(ctx context.Context, name string) error {
	px, err := proxy.New(w.srvAddr)
	if err != nil {
		return err
	}
	u := *w.dsn
	u.Host = px.Addr()
	cc, err := pgx.ParseConfig(u.String())
	if err != nil {
		px.Close()
		return fmt.Errorf("%s: %w", name, err)
	}
	cc.RuntimeParams["application_name"] = name
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		px.Close()
		return fmt.Errorf("%s: connect: %w", name, err)
	}
	c := &pgClient{name: name, proxy: px, conn: conn, pid: conn.PgConn().PID(), state: simulator.StateWaiting,
		joined: w.Step, since: w.Step, line: w.lines.acquire, reversed: slices.Contains(w.p.Reversed, name)}
	w.clients = append(w.clients, c)
	w.byName[name] = c
	w.byPid[c.pid] = c
	if w.p.Lock == kindAdvisory {
		w.lockAsync(c, fmt.Sprintf("SELECT pg_advisory_lock(%d)", w.key), false)
		return nil
	}
	c.stats.Commands++
	if _, err := conn.Exec(ctx, "BEGIN"); err != nil {
		return fmt.Errorf("%s: BEGIN: %w", name, err)
	}
	row := 1
	if c.reversed {
		row = 2
	}
	w.lockAsync(c, fmt.Sprintf("SELECT id FROM %s WHERE id = %d FOR UPDATE", w.table, row), false)
	return nil
}

// lockAsync sends a lock statement; settle collects its result, which
// comes when the server grants the lock (or aborts the transaction).
func (w *classWorld) lockAsync(c *pgClient, stmt string, second bool) {
	c.stats.Commands++
	ch := make(chan error, 1)
	c.pending, c.second = ch, second
	go func() {
		_, err := c.conn.Exec(context.Background(), stmt)
		ch <- err
	}()
}

// settle waits until every client with a lock statement in flight either
// has its answer or sleeps in the lock manager (an ungranted pg_locks
// row). A wait cycle that a step closes is rest, shown standing (the
// cycleStands of the next step); with breakCycle it is not: the step waits
// for PostgreSQL's deadlock detector to break it.
func (w *classWorld) settle(ctx context.Context, breakCycle bool) error {
	// The lock manager's state right after a release or a crash is in
	// motion (a woken waiter re-checks its row and may queue again): rest
	// only when two reads in a row agree.
	var lastRest string
	for {
		var ready []answer
		for _, c := range w.clients {
			if c.pending == nil {
				continue
			}
			select {
			case err := <-c.pending:
				c.pending = nil
				ready = append(ready, answer{c, err})
			default:
			}
		}
		// A transaction the server aborted is told before the grants its
		// abort caused (a deadlock's victim, then the lock it let go).
		for _, aborted := range []bool{true, false} {
			for _, r := range ready {
				if (r.err != nil) == aborted {
					w.answered(r.c, r.err)
				}
			}
		}
		waits, err := w.waits(ctx)
		if err != nil {
			return err
		}
		rest := true
		for _, c := range w.clients {
			if c.pending != nil && !w.asleep(c, waits) {
				rest = false
			}
		}
		if rest {
			now := fmt.Sprint(waits)
			if now != lastRest {
				lastRest = now
				if err := simulator.Sleep(ctx, settlePoll); err != nil {
					return fmt.Errorf("waiting for the clients to settle: %w", err)
				}
				continue
			}
			w.tellWaits(waits)
			cycle := w.cycle(waits)
			w.cycleStands = len(cycle) > 0
			if len(cycle) == 0 {
				return nil
			}
			if !breakCycle {
				w.Emit(simulator.Event{Client: cycle[len(cycle)-1].name, Event: simulator.EvWait, On: cycle[0].name,
					Text: fmt.Sprintf("closes a wait cycle: %s. Nobody can move; %v (deadlock_timeout) after its wait began, the detector in its backend looks for such cycles",
						w.cycleText(cycle), deadlockTimeout)})
				return nil
			}
		}
		if err := simulator.Sleep(ctx, settlePoll); err != nil {
			return fmt.Errorf("waiting for the clients to settle: %w", err)
		}
	}
}

// answer is the result of a client's lock statement.
type answer struct {
	c   *pgClient
	err error
}

// asleep says c sleeps in the lock manager behind a live session. A wait
// on a client that has just crashed or released is not rest: the server
// is about to wake c (the lock manager grants after the blocker's backend
// is gone from pg_stat_activity, not before), and the step must show the
// hand-off, not the moment before it.
func (w *classWorld) asleep(c *pgClient, waits map[uint32][]uint32) bool {
	by, ok := waits[c.pid]
	if !ok || len(by) == 0 {
		return false
	}
	for _, b := range by {
		if o := w.byPid[b]; o != nil && (o.state == simulator.StateCrashed || o.state == simulator.StateReleased) {
			return false
		}
	}
	return true
}

// tellWaits tells each newly sleeping client's wait, naming whom
// pg_blocking_pids says it waits for.
func (w *classWorld) tellWaits(waits map[uint32][]uint32) {
	for _, c := range w.clients {
		if c.pending == nil || c.asleep {
			continue
		}
		c.asleep = true
		var by []string
		for _, b := range waits[c.pid] {
			if o := w.byPid[b]; o != nil {
				by = append(by, o.name)
			}
		}
		on, row := "", ""
		if len(by) > 0 {
			on = by[0]
		}
		if c.second {
			row = fmt.Sprintf("row %d", c.secondRow())
		}
		w.Emit(simulator.Event{Client: c.name, Event: simulator.EvWait, On: on, Node: nodeName(int(c.pid)), Lock: row,
			Text: fmt.Sprintf("sleeps in the server's lock manager (pg_blocking_pids: %s); it sends nothing until the server wakes it", strings.Join(by, ", "))})
	}
}

// answered records the result of c's lock statement.
func (w *classWorld) answered(c *pgClient, err error) {
	c.asleep = false
	if c.state == simulator.StateCrashed {
		return
	}
	var pgErr *pgconn.PgError
	switch {
	case err == nil:
		if c.second {
			c.line, c.secondAt = w.lines.work, w.Step
			w.Emit(simulator.Event{Client: c.name, Event: simulator.EvLock, Node: nodeName(int(c.pid)), Lock: fmt.Sprintf("row %d", c.secondRow()),
				Text: "its second row lock is granted: it holds both rows"})
			return
		}
		c.state, c.since, c.line = simulator.StateHolding, w.Step, w.lines.work
		c.stats.Create++
		w.Emit(simulator.Event{Client: c.name, Event: simulator.EvLock, Node: nodeName(int(c.pid)),
			Text: "the server granted it the lock: " + w.lockWhat()})
	case errors.As(err, &pgErr) && pgErr.Code == "40P01":
		c.state, c.since, c.line = simulator.StateReleased, w.Step, w.lines.release
		w.Clock += deadlockTimeout
		pids := []string{}
		for _, o := range w.clients {
			if strings.Contains(pgErr.Detail, "Process "+strconv.Itoa(int(o.pid))+" ") {
				pids = append(pids, nodeName(int(o.pid)))
			}
		}
		w.broken = &lockqueue.Alert{Kind: lockqueue.AlertWaitCycle, Nodes: pids,
			Message: fmt.Sprintf("PostgreSQL's deadlock detector broke this cycle after deadlock_timeout (%v): it aborted %s's transaction (40P01), releasing its locks. %s",
				deadlockTimeout, c.name, pgErr.Detail)}
		w.Emit(simulator.Event{Client: c.name, Event: EvDeadlock, Node: nodeName(int(c.pid)),
			Text: fmt.Sprintf("ERROR 40P01 deadlock detected: its transaction is aborted and its locks released (%s)", pgErr.Detail)})
	default:
		c.state, c.since = simulator.StateReleased, w.Step
		w.Emit(simulator.Event{Client: c.name, Event: simulator.EvUnlock, Node: nodeName(int(c.pid)),
			Text: fmt.Sprintf("its lock statement failed: %v", err)})
	}
}

func (w *classWorld) lockWhat() string {
	if w.p.Lock == kindAdvisory {
		return fmt.Sprintf("pg_advisory_lock(%d) returned", w.key)
	}
	return "SELECT … FOR UPDATE returned its row"
}

// waits are the sleeping backends (an ungranted pg_locks row) and whom
// pg_blocking_pids says each waits for.
func (w *classWorld) waits(ctx context.Context) (map[uint32][]uint32, error) {
	rows, err := w.obs.Query(ctx, "SELECT pid, pg_blocking_pids(pid) FROM (SELECT DISTINCT pid FROM pg_locks WHERE NOT granted AND pid IS NOT NULL) w")
	if err != nil {
		return nil, fmt.Errorf("read pg_locks: %w", err)
	}
	out := map[uint32][]uint32{}
	for rows.Next() {
		var pid int32
		var by []int32
		if err := rows.Scan(&pid, &by); err != nil {
			return nil, fmt.Errorf("read pg_locks: %w", err)
		}
		for _, b := range by {
			out[uint32(pid)] = append(out[uint32(pid)], uint32(b))
		}
		if _, ok := out[uint32(pid)]; !ok {
			out[uint32(pid)] = nil
		}
	}
	return out, rows.Err()
}

// blockedBy says whether pid waits for holder, directly or through other
// waiters (a row's later waiters queue on the tuple lock of the first).
func (w *classWorld) blockedBy(waits map[uint32][]uint32, pid, holder uint32) bool {
	seen := map[uint32]bool{}
	next := []uint32{pid}
	for len(next) > 0 {
		p := next[0]
		next = next[1:]
		for _, b := range waits[p] {
			if b == holder {
				return true
			}
			if !seen[b] {
				seen[b] = true
				next = append(next, b)
			}
		}
	}
	return false
}

// cycle finds a wait cycle among the clients, in waiting order: each
// client waits for the first client pg_blocking_pids names.
func (w *classWorld) cycle(waits map[uint32][]uint32) []*pgClient {
	next := map[string][]string{}
	for _, c := range w.clients {
		if i := slices.IndexFunc(waits[c.pid], func(b uint32) bool { return w.byPid[b] != nil }); i >= 0 {
			next[c.name] = []string{w.byPid[waits[c.pid][i]].name}
		}
	}
	for _, start := range w.clients {
		if cyc := lockqueue.WaitCycleThrough(next, start.name); cyc != nil {
			out := make([]*pgClient, len(cyc))
			for i, n := range cyc {
				out[i] = w.byName[n]
			}
			return out
		}
	}
	return nil
}

func (w *classWorld) cycleText(cycle []*pgClient) string {
	var parts []string
	for _, c := range cycle {
		parts = append(parts, fmt.Sprintf("%s (pid %d)", c.name, c.pid))
	}
	return strings.Join(append(parts, cycle[0].name), " waits for ")
}

func (w *classWorld) release(ctx context.Context, c *pgClient) error {
	if c.state != simulator.StateHolding {
		return fmt.Errorf("%s holds nothing (%s)", c.name, c.state)
	}
	stmt := "COMMIT"
	if w.p.Lock == kindAdvisory {
		stmt = fmt.Sprintf("SELECT pg_advisory_unlock(%d)", w.key)
	}
	c.stats.Commands++
	c.line = w.lines.release
	if _, err := c.conn.Exec(ctx, stmt); err != nil {
		return fmt.Errorf("%s: %s: %w", c.name, stmt, err)
	}
	c.stats.Delete++
	c.state, c.since = simulator.StateReleased, w.Step
	w.Emit(simulator.Event{Client: c.name, Event: simulator.EvUnlock, Node: nodeName(int(c.pid)),
		Text: stmt + ": the server hands the lock to its first sleeping waiter, if any"})
	return nil
}

// crash cuts c's connection as a dead process's is cut, by closing it: its
// backend reads end-of-file, rolls back and exits, and its locks go with
// it at once. A partition, which closes nothing, would not (the narration
// says so).
func (w *classWorld) crash(ctx context.Context, c *pgClient) error {
	if c.state == simulator.StateCrashed || c.state == simulator.StateReleased {
		return fmt.Errorf("%s is not running (%s)", c.name, c.state)
	}
	c.proxy.Cut()
	cutAt := time.Now()
	held := c.state == simulator.StateHolding
	c.state, c.since = simulator.StateCrashed, w.Step
	if c.pending != nil {
		<-c.pending
		c.pending = nil
	}
	if err := w.gone(ctx, c, settlePoll, fmt.Sprintf("backend (pid %d) did not end", c.pid)); err != nil {
		return err
	}
	text := "crashes: its process dies and the operating system closes its socket, so the server reads end-of-file and ends its backend"
	if held {
		text += ", rolling back and releasing its lock at once. That is because the socket closed: a client cut off by a network partition closes nothing, and its backend keeps the lock until TCP keepalive notices, two hours by default (tcp_keepalives_idle 0 takes the system's 7200 s), where a ZooKeeper session expires after its timeout"
	}
	w.Emit(simulator.Event{Client: c.name, Event: simulator.EvCrash, Node: nodeName(int(c.pid)), AfterMs: time.Since(cutAt).Milliseconds(),
		Text: fmt.Sprintf("%s (its backend was gone %.0f ms after the cut)", text, float64(time.Since(cutAt).Microseconds())/1000)})
	return nil
}

// gone waits until c's backend has left pg_stat_activity, looking every
// so often; notYet says what did not happen if ctx ends first.
func (w *classWorld) gone(ctx context.Context, c *pgClient, every time.Duration, notYet string) error {
	for {
		if gone, err := w.backendGone(ctx, c.pid); gone || err != nil {
			return err
		}
		if err := simulator.Sleep(ctx, every); err != nil {
			return fmt.Errorf("%s's %s (%s): %w", c.name, notYet, w.backendState(c.pid), err)
		}
	}
}

// backendGone says whether pid's backend has left pg_stat_activity.
func (w *classWorld) backendGone(ctx context.Context, pid uint32) (bool, error) {
	var n int
	if err := w.obs.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", int32(pid)).Scan(&n); err != nil {
		return false, fmt.Errorf("read pg_stat_activity: %w", err)
	}
	return n == 0, nil
}

// backendState says what pg_stat_activity shows of pid, for an error that
// has to explain why a backend lingers.
func (w *classWorld) backendState(pid uint32) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var state, waitType, wait, query string
	err := w.obs.QueryRow(ctx, `SELECT coalesce(state, ''), coalesce(wait_event_type, ''), coalesce(wait_event, ''), left(coalesce(query, ''), 80)
		FROM pg_stat_activity WHERE pid = $1`, int32(pid)).Scan(&state, &waitType, &wait, &query)
	if err != nil {
		return fmt.Sprintf("pg_stat_activity unreadable: %v", err)
	}
	return fmt.Sprintf("state %q, waiting on %s/%s, query %q", state, waitType, wait, query)
}

// pause stops c with its transaction open: its connection stays up and
// silent, so the server sees a session idle in a transaction, holding its
// locks, until idle_in_transaction_session_timeout ends it. Told in one
// step (a scenario with no expire step: the side-by-side pane, whose
// beats every service shares); world_split.go tells it in three.
func (w *classWorld) pause(ctx context.Context, c *pgClient) error {
	if c.state != simulator.StateHolding {
		return fmt.Errorf("only a holder's pause is staged here (%s is %s)", c.name, c.state)
	}
	if err := w.stop(ctx, c); err != nil {
		return err
	}
	// The timeout is set as the client stops, not when it connects: a
	// holder left idle between a lecturer's clicks is not ended before its
	// story says so, however slow the steps (the expiry happens in this
	// step, as Redis's and etcd's do).
	took, err := w.endSession(ctx, c)
	if err != nil {
		return err
	}
	w.Clock += time.Duration(w.p.IdleInTxTimeoutMs) * time.Millisecond
	w.Emit(simulator.Event{Client: c.name, Event: simulator.EvExpire, Node: nodeName(int(c.pid)), AfterMs: took.Milliseconds(),
		Text: fmt.Sprintf("its session was ended by the server after %d ms idle in transaction (idle_in_transaction_session_timeout, FATAL 25P03): its transaction rolled back and its lock went with it; the client, paused, knows nothing", w.p.IdleInTxTimeoutMs)})
	c.state, c.line = simulator.StateStale, w.lines.work
	w.Emit(simulator.Event{Client: c.name, Event: simulator.EvResume, Node: nodeName(int(c.pid)), AfterMs: took.Milliseconds(),
		Text: "resumes, still believing it holds the lock"})
	return nil
}

// stop is a holder's pause: c goes silent inside its transaction, and
// the step tells whom the server says it blocks.
func (w *classWorld) stop(ctx context.Context, c *pgClient) error {
	c.state, c.since = simulator.StatePaused, w.Step
	w.Emit(simulator.Event{Client: c.name, Event: simulator.EvPause, Node: nodeName(int(c.pid)),
		Text: "stops (a long GC pause) inside its transaction: the server sees a session idle in transaction, still holding the lock"})
	// Told as soon as the server names it, before any timeout is set: a
	// story must not depend on how fast the steps are taken (with a
	// timeout near classIdleGrace, the server once ended the session
	// first under load, and the event was missing). The waiters slept in
	// the lock manager when their own steps ended.
	waits, err := w.waits(ctx)
	if err != nil {
		return err
	}
	var blocked []string
	for _, o := range w.clients {
		if o != c && w.blockedBy(waits, o.pid, c.pid) {
			blocked = append(blocked, o.name)
		}
	}
	if len(blocked) > 0 {
		w.Emit(simulator.Event{Client: c.name, Event: simulator.EvWait, Node: nodeName(int(c.pid)),
			Text: fmt.Sprintf("is idle in transaction and blocks everyone: pg_blocking_pids names it for %s", strings.Join(blocked, ", "))})
		w.show()
	}
	return nil
}

// endSession sets c's idle_in_transaction_session_timeout on its silent
// session and waits until the server has ended it; took is how long that
// was in real time.
func (w *classWorld) endSession(ctx context.Context, c *pgClient) (took time.Duration, err error) {
	if w.p.IdleInTxTimeoutMs == 0 {
		return 0, fmt.Errorf("%s: no idleInTxTimeoutMs: the server never ends an idle transaction", c.name)
	}
	if _, err := c.conn.Exec(ctx, "SET idle_in_transaction_session_timeout = "+strconv.FormatInt(w.p.IdleInTxTimeoutMs, 10)); err != nil {
		return 0, fmt.Errorf("%s: set its idle timeout: %w", c.name, err)
	}
	start := time.Now()
	if err := w.gone(ctx, c, 50*time.Millisecond, "session was not ended"); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// write is the work: with a row lock, an UPDATE of the locked row in the
// same transaction (a stale holder's fails: its session is gone, so the
// database fences itself), then the protected resource.
// writes is the table a row-lock holder writes to inside its transaction.
// Not the locked row itself: an UPDATE of it makes the next hand-off a race
// (the waiters re-lock the row's new version, and whoever runs first wins,
// which this machine showed under load), and the scenarios promise FIFO.
func (w *classWorld) writes() string { return w.table + "_writes" }

func (w *classWorld) write(ctx context.Context, c *pgClient) error {
	if c.state != simulator.StateHolding && c.state != simulator.StateStale {
		return fmt.Errorf("%s does not hold the lock (%s)", c.name, c.state)
	}
	c.line = w.lines.work
	if w.p.Lock == kindRow {
		c.stats.Commands++
		if _, err := c.conn.Exec(ctx, "INSERT INTO "+w.writes()+" (client) VALUES ($1)", c.name); err != nil {
			c.stats.Writes++
			c.stats.Fenced++
			c.stats.ServerRefused++
			w.Emit(simulator.Event{Client: c.name, Event: simulator.EvFenced, Node: nodeName(int(c.pid)),
				Text: fmt.Sprintf("its INSERT in the locked transaction fails (%v): a write that goes through the lock's own transaction cannot outlive the lock", err)})
			return nil
		}
	}
	// PostgreSQL's locks give no token.
	w.Emit(w.Resource.Tell(&c.stats, c.name, nodeName(int(c.pid)), 0, ""))
	return nil
}

// waitFor is how long a wait step lets pass in real time.
const waitFor = 1500 * time.Millisecond

// wait lets time pass and shows, by the server's own count, that the
// sleeping waiters sent nothing.
func (w *classWorld) wait(ctx context.Context) error {
	before := w.calls
	if err := w.count(ctx); err != nil {
		return err
	}
	before = w.calls
	if err := simulator.Sleep(ctx, waitFor); err != nil {
		return err
	}
	if err := w.count(ctx); err != nil {
		return err
	}
	n := 0
	for _, c := range w.clients {
		if c.pending != nil {
			n++
		}
	}
	w.Clock += waitFor
	w.Emit(simulator.Event{Event: simulator.EvWait,
		Text: fmt.Sprintf("%.1f s pass: %d waiter(s) sleep in the lock manager; pg_stat_statements counted %d statement(s) from the clients meanwhile",
			waitFor.Seconds(), n, w.calls-before)})
	return nil
}

// count reads the server's count of the clients' statements.
func (w *classWorld) count(ctx context.Context) error {
	err := w.obs.QueryRow(ctx, `SELECT coalesce(sum(s.calls), 0)::int8 FROM pg_stat_statements s JOIN pg_roles r ON r.oid = s.userid WHERE r.rolname = $1`, w.role).Scan(&w.calls)
	if err != nil {
		return fmt.Errorf("read pg_stat_statements: %w", err)
	}
	return nil
}

// show publishes the lock as it is now, in the middle of a step.
func (w *classWorld) show() { simulator.ShowMidStep(w.Publish, w.Snapshot) }

// Snapshot is the live reader's poll, for this run's lock: the same query
// and the same rules (BuildServerQueue), so the classroom draws what
// pg_locks and pg_blocking_pids say.
func (w *classWorld) Snapshot() (lockqueue.Snapshot, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	snap := lockqueue.Snapshot{Service: Name, Path: w.lockName, Recipe: w.name.recipe, Connection: lockqueue.Connected,
		WatchSource: "pg_locks", Nodes: []lockqueue.Node{}, Alerts: []lockqueue.Alert{}, UpdatedAt: time.Now()}
	var raw []byte
	if err := w.obs.QueryRow(ctx, w.query, queryArgs([]lockName{w.name}, false, false)...).Scan(&raw); err != nil {
		return snap, true, fmt.Errorf("postgres classroom: read locks: %w", err)
	}
	res, err := decodeResult(raw)
	if err != nil {
		return snap, true, err
	}
	parts, exists := res.parts(w.name)
	nodes, alerts := lockqueue.BuildServerQueue(lockqueue.ServerQueue{
		Recipe: w.name.recipe, Sessions: w.storyIdle(res.sessions(w.name, parts)), Waits: res.graph(), Now: res.Now, IdleGrace: classIdleGrace,
	})
	snap.Exists, snap.Nodes, snap.UpdatedAt = exists, nodes, res.Now
	snap.Alerts = append(snap.Alerts, alerts...)
	snap.Alerts = append(snap.Alerts, w.zombieHolders(snap)...)
	if w.broken != nil {
		snap.Alerts = append(snap.Alerts, *w.broken)
	}
	return snap, true, nil
}

// Narrate tells the step from its events.
func (w *classWorld) Narrate(a simulator.Action, events []simulator.Event) string {
	var parts []string
	for _, e := range events {
		// A wait step's event has no client: Said tells its text alone.
		part := simulator.Said(e.Client, e.Text)
		if e.Event == simulator.EvLock {
			part = e.Client + " holds the lock (" + e.Text + ")"
		}
		parts = append(parts, part)
	}
	var asleep []string
	for _, c := range w.clients {
		if c.pending != nil {
			asleep = append(asleep, c.name)
		}
	}
	if len(asleep) > 0 && a.Action != ActWait {
		parts = append(parts, strings.Join(asleep, ", ")+" sleep(s) in the server's lock manager, sending nothing")
	}
	return simulator.Sentence(a, parts)
}

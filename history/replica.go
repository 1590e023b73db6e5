package history

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// Several serve processes may share one PostgreSQL history (replicas
// behind one Service). All of them read it; one records at a time: the
// one whose own session holds RecorderLockKey, a PostgreSQL advisory lock
// on the history database. When that process dies, its session ends, the
// lock goes with it, and the next replica waiting in pg_advisory_lock
// takes over at once. The built-in store has no such thing: one directory
// is one process's (ErrLocked).

// RecorderLockKey is the advisory lock the recording replica holds:
// zklockviz can watch it like any other, as postgres:advisory/2054974582
// ("zklv" as a number).
const RecorderLockKey int64 = 0x7A6B6C76

// heartbeatEvery is how often the recording replica says it is alive in
// zklockviz_recorder. A takeover's gap starts at the last of these, so it
// is at most this much longer than the time the recorder was gone.
const heartbeatEvery = 500 * time.Millisecond

// reconnectEvery is how often a replica that lost its session to the
// history database tries again.
const reconnectEvery = time.Second

// Role says which replica records the history, when several serve
// processes share one database.
type Role struct {
	// Replica is this process's name (serve --history-replica).
	Replica string `json:"replica"`
	// Recording: this process records.
	Recording bool `json:"recording"`
	// Recorder is the replica that records, and Since since when; empty
	// when none is known.
	Recorder string    `json:"recorder,omitempty"`
	Since    time.Time `json:"since,omitzero"`
	// Alive is when the recorder last said it was alive.
	Alive time.Time `json:"alive,omitzero"`
	// Why says why this replica neither records nor stands by: it lost its
	// session to the database.
	Why string `json:"why,omitempty"`
}

// Stale says the recorder has not said it was alive for long: it may hang
// with its session open, which keeps every other replica waiting.
func (r Role) Stale(now time.Time) bool {
	return !r.Alive.IsZero() && now.Sub(r.Alive) > 10*heartbeatEvery
}

// DefaultReplica names this process: the host name (a pod's name on
// Kubernetes), and the process id unless it is 1, as it is in a container,
// so that two replicas on one host have two names.
func DefaultReplica() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "zklockviz"
	}
	if pid := os.Getpid(); pid != 1 {
		host += ":" + strconv.Itoa(pid)
	}
	return host
}

const recorderSchema = `
CREATE TABLE IF NOT EXISTS zklockviz_recorder (
	one     boolean     PRIMARY KEY DEFAULT true CHECK (one),
	epoch   bigint      NOT NULL,
	replica text        NOT NULL,
	since   timestamptz NOT NULL,
	alive   timestamptz NOT NULL
);
`

// errNotRecorder is a write refused because another replica took over:
// the zklockviz_recorder row's epoch is no longer this one's.
var errNotRecorder = errors.New("history: another replica records")

// electionConn opens the session that holds (or waits for) the recorder's
// lock, named so that pg_stat_activity, and zklockviz watching the lock,
// say which replica it is.
func (s *PGStore) electionConn(ctx context.Context) (*pgx.Conn, error) {
	cc, err := pgx.ParseConfig(s.opts.URL)
	if err != nil {
		return nil, fmt.Errorf("history: --history-db: %w", err)
	}
	cc.RuntimeParams["application_name"] = "zklockviz recorder " + s.opts.Replica
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return nil, fmt.Errorf("history: --history-db: %w", err)
	}
	return conn, nil
}

// elect runs until Close: while this replica records it says so every
// heartbeatEvery; otherwise it waits in pg_advisory_lock for the recorder's
// session to end, and takes over.
func (s *PGStore) elect(ctx context.Context, conn *pgx.Conn) {
	defer close(s.electDone)
	defer func() {
		if conn != nil {
			s.stepDown(conn)
		}
	}()
	tick := time.NewTicker(heartbeatEvery)
	defer tick.Stop()
	for ctx.Err() == nil {
		if conn == nil {
			c, err := s.electionConn(ctx)
			if err != nil {
				s.setLost(err)
				sleep(ctx, reconnectEvery)
				continue
			}
			conn = c
			s.setStandby()
		}
		if s.recording() {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if err := s.heartbeat(ctx, conn); err != nil {
				s.setLost(err)
				conn.Close(context.Background())
				conn = nil
			}
			continue
		}
		// Blocks until the recorder's session ends.
		if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, RecorderLockKey); err != nil {
			if ctx.Err() == nil {
				s.setLost(err)
			}
			conn.Close(context.Background())
			conn = nil
			continue
		}
		if err := s.takeOver(ctx, conn); err != nil {
			s.opts.Logger.Error("history: take over recording", "err", err)
			s.setLost(err)
			conn.Close(context.Background()) // lets the lock go: another may do better
			conn = nil
			sleep(ctx, reconnectEvery)
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// heartbeat says the recorder is alive; it fails when the session is gone
// or another replica took over (which the lock should make impossible).
func (s *PGStore) heartbeat(ctx context.Context, conn *pgx.Conn) error {
	now := s.opts.Now()
	ctx, cancel := context.WithTimeout(ctx, 5*heartbeatEvery)
	defer cancel()
	tag, err := conn.Exec(ctx, `UPDATE zklockviz_recorder SET alive = $2 WHERE epoch = $1`, s.epoch(), now)
	if err != nil {
		return fmt.Errorf("history: the recorder's session: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return errNotRecorder
	}
	s.mu.Lock()
	s.role.Alive = now
	s.mu.Unlock()
	return nil
}

// stepDown ends this replica's turn at Close: its last heartbeat is now,
// so the next recorder's gap starts here, and closing the session lets the
// lock go at once.
func (s *PGStore) stepDown(conn *pgx.Conn) {
	if s.recording() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*heartbeatEvery)
		if err := s.heartbeat(ctx, conn); err != nil {
			s.opts.Logger.Warn("history: the last heartbeat", "err", err)
		}
		cancel()
	}
	conn.Close(context.Background())
}

// openWait is how long a starting replica waits for the recorder's lock:
// a recorder that just stopped (a restart) lets go of it only once its
// backend has ended, a moment after its connection closed.
const openWait = time.Second

// tryLock takes the recorder's lock if it is free within openWait.
func tryLock(ctx context.Context, conn *pgx.Conn) (bool, error) {
	if _, err := conn.Exec(ctx, fmt.Sprintf(`SET lock_timeout = %d`, openWait.Milliseconds())); err != nil {
		return false, fmt.Errorf("history: the recorder's lock: %w", err)
	}
	_, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, RecorderLockKey)
	got := err == nil
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "55P03" { // lock_not_available: another replica records
		err = nil
	}
	if err == nil {
		_, err = conn.Exec(ctx, `RESET lock_timeout`)
	}
	if err != nil {
		return false, fmt.Errorf("history: the recorder's lock: %w", err)
	}
	return got, nil
}

// takeOver makes this replica the recorder, its session holding the lock:
// a new epoch (which waits for the last write of the one before, and
// refuses any after it), then each lock's state as recorded, a gap from
// the previous recorder's last sign of life (or the lock's last row, when
// later) to now, and the newest snapshot of each lock this replica read
// while it stood by, so what changed meanwhile is recorded.
func (s *PGStore) takeOver(ctx context.Context, conn *pgx.Conn) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now().Truncate(time.Millisecond)
	var prev struct {
		replica string
		alive   time.Time
		epoch   int64
	}
	err := conn.QueryRow(ctx, `SELECT replica, alive, epoch FROM zklockviz_recorder`).Scan(&prev.replica, &prev.alive, &prev.epoch)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("history: the recorder before: %w", err)
	}
	var epoch int64
	err = conn.QueryRow(ctx, `INSERT INTO zklockviz_recorder (epoch, replica, since, alive) VALUES (1, $1, $2, $2)
		ON CONFLICT (one) DO UPDATE SET epoch = zklockviz_recorder.epoch + 1, replica = $1, since = $2, alive = $2
		RETURNING epoch`, s.opts.Replica, now).Scan(&epoch)
	if err != nil {
		return fmt.Errorf("history: become the recorder: %w", err)
	}
	// This process recorded last, and lost only its session (a database
	// restart): its states are the table's, and the recorder records the
	// gap of the writes the database refused meanwhile, as it does without
	// replicas. Otherwise another wrote since, or none has in this process.
	resumed := s.epochN != 0 && prev.epoch == s.epochN
	s.role = Role{Replica: s.opts.Replica, Recording: true, Recorder: s.opts.Replica, Since: now, Alive: now}
	s.epochN = epoch
	if !resumed {
		why := "not recording (zklockviz was not running)"
		if prev.replica != "" && prev.replica != s.opts.Replica {
			why = fmt.Sprintf("not recording (the recorder changed: %s took over from %s)", s.opts.Replica, prev.replica)
		}
		s.states, s.lastKF = map[string]*State{}, map[string]time.Time{}
		if err := s.recover(ctx, now, prev.alive, why); err != nil {
			s.role = Role{Replica: s.opts.Replica}
			return err
		}
	}
	took := s.opts.Now().Sub(now)
	pending := s.pending
	s.pending = map[string]lockqueue.Snapshot{}
	for _, snap := range pending {
		if snap.UpdatedAt.Before(now) {
			snap.UpdatedAt = now // not before the gap it follows
		}
		if _, err := s.record(snap); err != nil {
			return err
		}
	}
	gap := ""
	if !prev.alive.IsZero() {
		gap = now.Sub(prev.alive).Round(time.Millisecond).String()
	}
	s.opts.Logger.Info("history: recording", "replica", s.opts.Replica, "after", prev.replica, "gap", gap, "took", took)
	return nil
}

// recording says this replica records.
func (s *PGStore) recording() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.role.Recording
}

func (s *PGStore) epoch() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.epochN
}

// setStandby: this replica's session waits for the recorder's lock.
func (s *PGStore) setStandby() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.role.Recording, s.role.Why = false, ""
}

// setLost: this replica has no session to the database, so it neither
// records nor knows who does; Record says so.
func (s *PGStore) setLost(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.role.Recording {
		s.opts.Logger.Error("history: stopped recording: lost the recorder's session", "err", err)
	}
	s.role.Recording, s.role.Why = false, err.Error()
}

// Role says which replica records. A standby reads the recorder's row at
// most once a second, off the caller's goroutine: a page never waits for
// the database to say who records.
func (s *PGStore) Role() Role {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.role.Recording && s.role.Why == "" && !s.refreshing && time.Since(s.roleRead) >= time.Second && !s.closed {
		s.refreshing = true
		go s.readRole()
	}
	return s.role
}

func (s *PGStore) readRole() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var r Role
	err := s.pool.QueryRow(ctx, `SELECT replica, since, alive FROM zklockviz_recorder`).Scan(&r.Recorder, &r.Since, &r.Alive)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refreshing, s.roleRead = false, time.Now()
	if s.role.Recording {
		return // took over meanwhile
	}
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		s.opts.Logger.Debug("history: read who records", "err", err)
		return
	}
	s.role.Recorder, s.role.Since, s.role.Alive = r.Recorder, r.Since, r.Alive
}

package history

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zklockviz/zklockviz/fault"
	"github.com/zklockviz/zklockviz/lockqueue"
)

// PGStore keeps the history in a PostgreSQL table, for a team that wants it
// in its own database (serve --history-db postgres://…). The rows are the
// same events, as the API's JSON, plus the keyframes that restate each
// lock's state: at its first sight, after a restart and every
// KeyframeEvery, so "the lock at T" is the last keyframe before T and the
// rows after it.
type PGStore struct {
	opts PGOptions
	pool *pgxpool.Pool

	mu     sync.Mutex
	states map[string]*State
	lastKF map[string]time.Time
	closed bool
	// role says whether this replica records (its session holds
	// RecorderLockKey) and, when not, which one does; epochN is its turn's
	// number in zklockviz_recorder, which every write is fenced by.
	role   Role
	epochN int64
	// pending is each lock's newest snapshot while this replica stands by:
	// recorded when it takes over, so what changed meanwhile is not lost.
	pending    map[string]lockqueue.Snapshot
	roleRead   time.Time
	refreshing bool

	stop      chan struct{}
	done      chan struct{}
	endElect  context.CancelFunc
	electDone chan struct{}
}

// PGOptions configure a PGStore.
type PGOptions struct {
	// URL is the database, postgres://user:password@host/db.
	URL string
	// MaxAge and MaxSize bound what is kept (defaults as Options'); the
	// oldest rows go first. The size is the stored events' own, which
	// PostgreSQL's table and index overheads add to.
	MaxAge  time.Duration
	MaxSize int64
	// KeyframeEvery is how often each lock's state is restated (default
	// DefaultSegmentAge).
	KeyframeEvery time.Duration
	// Replica names this process among those sharing the database
	// (default DefaultReplica()).
	Replica string
	Now     func() time.Time
	Logger  *slog.Logger
}

const pgSchema = `
CREATE TABLE IF NOT EXISTS zklockviz_history (
	id        bigserial PRIMARY KEY,
	lock      text        NOT NULL,
	at        timestamptz NOT NULL,
	kind      text        NOT NULL,
	synthetic boolean     NOT NULL DEFAULT false,
	event     jsonb       NOT NULL
);
CREATE INDEX IF NOT EXISTS zklockviz_history_lock_at ON zklockviz_history (lock, at);
CREATE INDEX IF NOT EXISTS zklockviz_history_at ON zklockviz_history (at);
` + recorderSchema

// OpenPG connects, creates the tables if missing and, when no other
// replica records, becomes the recorder: it recovers each lock's last
// state and records the time since the last recorder's last sign of life
// as a gap. Otherwise it stands by, and takes over when the recorder's
// session ends.
func OpenPG(ctx context.Context, opts PGOptions) (*PGStore, error) {
	opts.MaxAge = cmp.Or(opts.MaxAge, DefaultMaxAge)
	opts.MaxSize = cmp.Or(opts.MaxSize, DefaultMaxSize)
	opts.KeyframeEvery = cmp.Or(opts.KeyframeEvery, DefaultSegmentAge)
	opts.Replica = cmp.Or(opts.Replica, DefaultReplica())
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	pool, err := pgxpool.New(ctx, opts.URL)
	if err != nil {
		return nil, fmt.Errorf("history: --history-db: %w", err)
	}
	s := &PGStore{opts: opts, pool: pool, states: map[string]*State{}, lastKF: map[string]time.Time{},
		role: Role{Replica: opts.Replica}, pending: map[string]lockqueue.Snapshot{},
		stop: make(chan struct{}), done: make(chan struct{}), electDone: make(chan struct{})}
	conn, err := s.open(ctx)
	if err != nil {
		pool.Close()
		return nil, err
	}
	if s.role.Recording {
		// The first retention runs here, on what an earlier run left,
		// rather than on the background goroutine: there it raced with the
		// first recordings, and TestPGSizeRetention saw rows go before it
		// measured.
		if err := s.Retain(ctx); err != nil {
			s.opts.Logger.Error("history: retention", "err", err)
		}
	} else {
		s.opts.Logger.Info("history: another replica records; standing by", "replica", opts.Replica)
	}
	var electCtx context.Context
	electCtx, s.endElect = context.WithCancel(context.Background())
	go s.elect(electCtx, conn)
	go s.background()
	return s, nil
}

// open creates the tables and takes the recorder's lock if it is free,
// returning the session that holds or will wait for it.
func (s *PGStore) open(ctx context.Context) (*pgx.Conn, error) {
	if _, err := s.pool.Exec(ctx, pgSchema); err != nil {
		return nil, fmt.Errorf("history: create the tables: %w", err)
	}
	conn, err := s.electionConn(ctx)
	if err != nil {
		return nil, err
	}
	got, err := tryLock(ctx, conn)
	if err == nil && got {
		err = s.takeOver(ctx, conn)
	}
	if err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	return conn, nil
}

// recover reads each lock's last state and records the time since the
// last recorder's last sign of life (alive), or the lock's last row when
// later, as a gap. Called with mu held.
func (s *PGStore) recover(ctx context.Context, now, alive time.Time, why string) error {
	rows, err := s.pool.Query(ctx, `SELECT lock, max(at) FROM zklockviz_history GROUP BY lock`)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	lasts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (struct {
		lock string
		at   time.Time
	}, error) {
		var v struct {
			lock string
			at   time.Time
		}
		return v, r.Scan(&v.lock, &v.at)
	})
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	var evs []record
	for _, l := range lasts {
		st, err := s.replay(ctx, l.lock, l.at)
		if errors.Is(err, ErrNoHistory) {
			continue
		}
		if err != nil {
			return err
		}
		st.apply(Event{Time: now, Kind: Gap})
		s.states[l.lock] = &st
		s.lastKF[l.lock] = now
		for _, e := range keyframeEvents(&st, now) {
			evs = append(evs, record{Lock: l.lock, Event: e})
		}
		since := l.at
		if alive.After(since) && alive.Before(now) {
			since = alive
		}
		evs = append(evs, record{Lock: l.lock, Event: Event{Time: now, Kind: Gap, Since: since, Message: why}})
	}
	return s.insert(ctx, evs)
}

// insert writes rows in order, their ids keeping it, fenced by this
// replica's epoch: the row lock on zklockviz_recorder makes a takeover
// wait for a write under way, and refuses one that comes after it
// (errNotRecorder). Called with mu held.
func (s *PGStore) insert(ctx context.Context, recs []record) error {
	if len(recs) == 0 {
		return nil
	}
	cols := struct {
		lock, kind, event []string
		at                []time.Time
		synthetic         []bool
	}{}
	for _, r := range recs {
		b, err := json.Marshal(r.Event)
		if err != nil {
			return fmt.Errorf("history: %w", err)
		}
		cols.lock, cols.at, cols.kind = append(cols.lock, r.Lock), append(cols.at, r.Time), append(cols.kind, string(r.Kind))
		cols.synthetic, cols.event = append(cols.synthetic, r.Synthetic), append(cols.event, string(b))
	}
	tag, err := s.pool.Exec(ctx, `INSERT INTO zklockviz_history (lock, at, kind, synthetic, event)
		SELECT l, a, k, y, e::jsonb FROM unnest($2::text[], $3::timestamptz[], $4::text[], $5::bool[], $6::text[])
			WITH ORDINALITY AS r(l, a, k, y, e, n)
		WHERE EXISTS (SELECT 1 FROM zklockviz_recorder WHERE epoch = $1 FOR SHARE)
		ORDER BY n`, s.epochN, cols.lock, cols.at, cols.kind, cols.synthetic, cols.event)
	if err != nil {
		return fmt.Errorf("history: insert: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return errNotRecorder
	}
	return nil
}

// Record stores the changes snap makes to its lock and returns them.
func (s *PGStore) Record(snap lockqueue.Snapshot) ([]Event, error) {
	t := snap.UpdatedAt
	if t.IsZero() {
		t = s.opts.Now()
	}
	t = t.Truncate(time.Millisecond)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errClosed
	}
	snap.UpdatedAt = t
	return s.record(snap)
}

// record is Record with mu held. A standby keeps the snapshot for when it
// takes over; a replica without a session to the database refuses it, so
// the recorder says it does not record and why.
func (s *PGStore) record(snap lockqueue.Snapshot) ([]Event, error) {
	key, t := KeyOf(snap), snap.UpdatedAt
	if !s.role.Recording {
		if s.role.Why != "" {
			return nil, s.lostErr()
		}
		s.pending[key] = snap
		return nil, nil
	}
	prev := s.states[key]
	var evs []Event
	changes(prev, snap, t, func(e Event) { evs = append(evs, e) })
	// The state moves on only once the database took the events: after a
	// refused insert (the database gone) the next snapshot is diffed
	// against what was stored, so nothing it missed is lost.
	st, lastKF := &State{Lock: key}, t
	if prev != nil {
		st, lastKF = prev, s.lastKF[key]
	}
	next := st.Apply(evs)
	recs := make([]record, 0, len(evs))
	for _, e := range evs {
		recs = append(recs, record{Lock: key, Event: e})
	}
	next.noteLeases(snap, t)
	if t.Sub(lastKF) >= s.opts.KeyframeEvery {
		lastKF = t
		for _, e := range keyframeEvents(&next, t) {
			recs = append(recs, record{Lock: key, Event: e})
		}
	}
	if err := s.insert(context.Background(), recs); errors.Is(err, errNotRecorder) {
		s.role = Role{Replica: s.opts.Replica}
		s.pending[key] = snap
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	s.states[key], s.lastKF[key] = &next, lastKF
	return changed(evs), nil
}

// lostErr refuses a write while this replica has no session to the
// database: it neither records nor knows who does.
func (s *PGStore) lostErr() error {
	return fault.Errorf(fault.Unavailable, "not recording: lost the session to the history database: %s", s.role.Why)
}

// RecordGap stores that nothing of lock was seen from since until now.
func (s *PGStore) RecordGap(lock string, since time.Time, why string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	if !s.role.Recording {
		if s.role.Why != "" {
			return s.lostErr() // kept by the recorder, from when it began
		}
		return nil // the recording replica records its own gaps
	}
	e := Event{Time: s.opts.Now().Truncate(time.Millisecond), Kind: Gap, Since: since, Message: why}
	if st := s.states[lock]; st != nil {
		st.apply(e)
	}
	err := s.insert(context.Background(), []record{{Lock: lock, Event: e}})
	if errors.Is(err, errNotRecorder) {
		s.role = Role{Replica: s.opts.Replica}
		return nil
	}
	return err
}

// errStoredEvent is a row that does not decode: the database answered,
// and what it holds is wrong.
type errStoredEvent struct{ err error }

func (e errStoredEvent) Error() string { return "a stored event: " + e.err.Error() }
func (e errStoredEvent) Unwrap() error { return e.err }

// unreadable is a read the database did not answer (it went away, or
// refused the connection): the history cannot be read for now, which the
// API says as unavailable (503) with the database's reason, not as a fault
// of zklockviz. A row that does not decode stays an internal error.
func unreadable(err error) error {
	var bad errStoredEvent
	if errors.As(err, &bad) {
		return fmt.Errorf("history: %w", err)
	}
	return fault.Errorf(fault.Unavailable, "the history database cannot be read: %v", err)
}

// scan reads event rows.
func scanEvents(rows pgx.Rows) ([]Event, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Event, error) {
		var e Event
		var b []byte
		var synthetic bool
		if err := r.Scan(&b, &synthetic); err != nil {
			return e, err
		}
		if err := json.Unmarshal(b, &e); err != nil {
			return e, errStoredEvent{err}
		}
		e.Synthetic = synthetic
		return e, nil
	})
}

// Events are the lock's recorded changes in [from, to], in order.
func (s *PGStore) Events(lock string, from, to time.Time) ([]Event, error) {
	rows, err := s.pool.Query(context.Background(), `SELECT event, synthetic FROM zklockviz_history
		WHERE lock = $1 AND NOT synthetic AND at BETWEEN $2 AND $3 ORDER BY id`, lock, from, to)
	if err != nil {
		return nil, unreadable(err)
	}
	evs, err := scanEvents(rows)
	if err != nil {
		return nil, unreadable(err)
	}
	return evs, nil
}

// Walk calls fn with each of the lock's rows in [from, to], restatements
// included, in order, as they are read.
func (s *PGStore) Walk(lock string, from, to time.Time, fn func(Event) error) error {
	rows, err := s.pool.Query(context.Background(), `SELECT event, synthetic FROM zklockviz_history
		WHERE lock = $1 AND at BETWEEN $2 AND $3 ORDER BY id`, lock, from, to)
	if err != nil {
		return unreadable(err)
	}
	defer rows.Close()
	for rows.Next() {
		var e Event
		var b []byte
		if err := rows.Scan(&b, &e.Synthetic); err != nil {
			return unreadable(err)
		}
		if err := json.Unmarshal(b, &e); err != nil {
			return unreadable(errStoredEvent{err})
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return unreadable(err)
	}
	return nil
}

// At is the lock as it was at t: its last keyframe before t and the rows
// after it.
func (s *PGStore) At(lock string, t time.Time) (State, error) {
	return s.replay(context.Background(), lock, t)
}

func (s *PGStore) replay(ctx context.Context, lock string, t time.Time) (State, error) {
	var kf int64
	err := s.pool.QueryRow(ctx, `SELECT id FROM zklockviz_history WHERE lock = $1 AND kind = 'keyframe' AND at <= $2
		ORDER BY at DESC, id DESC LIMIT 1`, lock, t).Scan(&kf)
	if errors.Is(err, pgx.ErrNoRows) {
		return State{}, fmt.Errorf("%w of %s at %s", ErrNoHistory, lock, t.UTC().Format(time.RFC3339))
	}
	if err != nil {
		return State{}, unreadable(err)
	}
	rows, err := s.pool.Query(ctx, `SELECT event, synthetic FROM zklockviz_history
		WHERE lock = $1 AND id >= $2 AND at <= $3 ORDER BY id`, lock, kf, t)
	if err != nil {
		return State{}, unreadable(err)
	}
	evs, err := scanEvents(rows)
	if err != nil {
		return State{}, unreadable(err)
	}
	st := State{Lock: lock}
	for _, e := range evs {
		st.apply(e)
	}
	return st, nil
}

// Locks lists the locks with a history.
func (s *PGStore) Locks() ([]Lock, error) {
	rows, err := s.pool.Query(context.Background(), `SELECT DISTINCT lock FROM zklockviz_history`)
	if err != nil {
		return nil, unreadable(err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, unreadable(err)
	}
	return locksOf(keys), nil
}

// Stats are the lock's figures over [from, to].
func (s *PGStore) Stats(lock string, from, to time.Time) (Stats, error) {
	return statsOf(s, lock, from, to)
}

// background applies retention once a minute after the first.
func (s *PGStore) background() {
	defer close(s.done)
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
		if !s.recording() {
			continue // the recorder keeps the table's size
		}
		if err := s.Retain(context.Background()); err != nil {
			s.opts.Logger.Error("history: retention", "err", err)
		}
	}
}

// Retain deletes rows older than MaxAge, then the oldest tenth at a time
// while the events stored exceed MaxSize.
func (s *PGStore) Retain(ctx context.Context) error {
	cutoff := s.opts.Now().Add(-s.opts.MaxAge)
	if _, err := s.pool.Exec(ctx, `DELETE FROM zklockviz_history WHERE at < $1`, cutoff); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	for range 10 {
		size, err := s.Size(ctx)
		if err != nil {
			return err
		}
		if size <= s.opts.MaxSize {
			return nil
		}
		gone, err := s.dropOldest(ctx)
		if err != nil || gone == 0 {
			return err
		}
	}
	return nil
}

// dropOldest deletes the oldest rows, about a tenth of them, cut back to
// each lock's last keyframe before the cut so that what is left of a lock
// starts with a keyframe and every moment kept still replays (a cut through
// a keyframe's period would leave the rows after it unreadable). When the
// oldest tenth lies within the locks' first periods it cuts further, up to
// each lock's newest keyframe, as the embedded store never deletes the
// segment being written. It returns how many rows went.
func (s *PGStore) dropOldest(ctx context.Context) (int64, error) {
	for tenths := 1; tenths <= 10; tenths++ {
		tag, err := s.pool.Exec(ctx, `WITH cut AS (
				SELECT percentile_disc($1::float8) WITHIN GROUP (ORDER BY at) AS at FROM zklockviz_history),
			kf AS (
				SELECT h.lock, max(h.at) AS at FROM zklockviz_history h, cut
				WHERE h.kind = 'keyframe' AND h.at <= cut.at GROUP BY h.lock)
			DELETE FROM zklockviz_history h USING kf WHERE h.lock = kf.lock AND h.at < kf.at`, float64(tenths)/10)
		if err != nil {
			return 0, fmt.Errorf("history: size retention: %w", err)
		}
		if n := tag.RowsAffected(); n > 0 {
			return n, nil
		}
	}
	return 0, nil
}

// Size is what the stored events take, as retention counts it: their
// own bytes, without PostgreSQL's table and index overheads.
func (s *PGStore) Size(ctx context.Context) (int64, error) {
	var size int64
	if err := s.pool.QueryRow(ctx, `SELECT coalesce(sum(pg_column_size(event)), 0) FROM zklockviz_history`).Scan(&size); err != nil {
		return 0, fmt.Errorf("history: the size stored: %w", err)
	}
	return size, nil
}

// Close stops retention and closes the connections.
func (s *PGStore) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.stop)
	s.mu.Unlock()
	<-s.done
	s.endElect()
	<-s.electDone
	s.pool.Close()
	return nil
}

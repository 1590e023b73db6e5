// Package pglab is PostgreSQL's client in the lock lab: a session-level
// advisory lock (pg_advisory_lock) on one connection, its fencing token
// the next value of a sequence the lab creates, read right after the lock
// is taken.
//
// The lock lives as long as the session: a paused client keeps it (the
// others wait; no second believer), a killed client's connection closes
// and its backend ends, which lets the lock go. A holder learns it lost
// the lock when its connection breaks.
package pglab

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zklockviz/zklockviz/lab"
)

// Sequence hands out the tokens. One for every lock: a token need only be
// above every earlier holder's of the same lock.
const Sequence = "zklockviz_lab_token"

// checkEvery is how often a holder checks that its session is alive.
const checkEvery = 50 * time.Millisecond

// Key reads a lock name as pglock names advisory locks, advisory/KEY,
// into pg_advisory_lock's bigint key.
func Key(name string) (int64, error) {
	rest, ok := strings.CutPrefix(name, "advisory/")
	k, err := strconv.ParseInt(rest, 10, 64)
	if !ok || err != nil {
		return 0, fmt.Errorf("PostgreSQL lock %q: the lab takes advisory/KEY, a bigint key such as advisory/42", name)
	}
	return k, nil
}

// Locker holds one advisory lock through one session.
type Locker struct {
	cfg *pgx.ConnConfig
	key int64

	mu   sync.Mutex
	conn *pgx.Conn
	held chan struct{} // closed by Release: the check of the session stops
}

var _ lab.Locker = (*Locker)(nil)

// Dial readies a client of the PostgreSQL at dsn; it connects on the first
// Acquire, and again after its connection broke. id names the session
// (application_name), so zklockviz's lane names the client.
func Dial(dsn, name, id string) (*Locker, error) {
	key, err := Key(name)
	if err != nil {
		return nil, err
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	cfg.RuntimeParams["application_name"] = id
	return &Locker{cfg: cfg, key: key}, nil
}

func (l *Locker) connect(ctx context.Context) (*pgx.Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn != nil && !l.conn.IsClosed() {
		return l.conn, nil
	}
	c, err := pgx.ConnectConfig(ctx, l.cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	l.conn = c
	return c, nil
}

// Acquire waits in pg_advisory_lock, then reads the token.
//
// nextval is read after the lock is granted, on the same session, before
// the client does anything under the lock: holds of the lock do not
// overlap on the server, and a session that lost its lock has lost its
// connection too and reads no token, so each holder's nextval comes after
// every earlier holder's and the sequence, which never goes back, gives
// it a larger token.
//
// The holder is the session's backend, pid-N, as zklockviz's PostgreSQL
// lane names a lock's sessions.
func (l *Locker) Acquire(ctx context.Context) (lab.Hold, error) {
	c, err := l.connect(ctx)
	if err != nil {
		return lab.Hold{}, err
	}
	if _, err := c.Exec(ctx, "SELECT pg_advisory_lock($1)", l.key); err != nil {
		return lab.Hold{}, fmt.Errorf("pg_advisory_lock(%d): %w", l.key, err)
	}
	var token int64
	if err := c.QueryRow(ctx, "SELECT nextval($1)", Sequence).Scan(&token); err != nil {
		c.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", l.key)
		return lab.Hold{}, fmt.Errorf("the token, nextval(%s): %w", Sequence, err)
	}
	lost, held := make(chan struct{}), make(chan struct{})
	l.mu.Lock()
	l.held = held
	l.mu.Unlock()
	go l.watch(c, held, lost)
	return lab.Hold{Token: token, Holder: Holder(c.PgConn().PID()), Lost: lost}, nil
}

// Holder names the backend of pid as zklockviz's PostgreSQL reader names
// a lock's sessions (pglock's node names).
func Holder(pid uint32) string { return "pid-" + strconv.FormatUint(uint64(pid), 10) }

// watch closes lost when the session breaks while the lock is held: the
// server ended the backend and its locks with it.
func (l *Locker) watch(c *pgx.Conn, held <-chan struct{}, lost chan<- struct{}) {
	t := time.NewTicker(checkEvery)
	defer t.Stop()
	for {
		select {
		case <-held:
			return
		case <-t.C:
		}
		l.mu.Lock()
		select {
		case <-held: // released meanwhile: the connection is Release's
			l.mu.Unlock()
			return
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := c.Ping(ctx)
		cancel()
		l.mu.Unlock()
		if err != nil {
			close(lost)
			return
		}
	}
}

// Release unlocks, if the session still holds the lock.
func (l *Locker) Release() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held == nil {
		return errors.New("nothing to release")
	}
	close(l.held)
	l.held = nil
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var unlocked bool
	if err := l.conn.QueryRow(ctx, "SELECT pg_advisory_unlock($1)", l.key).Scan(&unlocked); err != nil {
		return fmt.Errorf("pg_advisory_unlock(%d): %w", l.key, err)
	}
	if !unlocked {
		return fmt.Errorf("pg_advisory_unlock(%d): the session did not hold it", l.key)
	}
	return nil
}

// Close ends the session.
func (l *Locker) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return l.conn.Close(ctx)
}

// Prepare checks that the PostgreSQL at dsn answers within timeout and
// creates the token's sequence there, once, before any client runs (two
// clients' CREATE SEQUENCE IF NOT EXISTS at once can fail on the
// catalog's unique index).
func Prepare(dsn string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("postgres: no session within %v: %w", timeout, err)
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(ctx, "CREATE SEQUENCE IF NOT EXISTS "+Sequence); err != nil {
		return fmt.Errorf("postgres: create the lab's token sequence %s: %w", Sequence, err)
	}
	return nil
}

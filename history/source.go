package history

import (
	"errors"
	"slices"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// errClosed: the store was closed.
var errClosed = errors.New("history: store closed")

// Source is what the API reads: the embedded Store, or PGStore for a team
// that keeps the history in its PostgreSQL.
type Source interface {
	// Events are a lock's recorded changes in [from, to], in order.
	Events(lock string, from, to time.Time) ([]Event, error)
	// At is the lock as it was at t; ErrNoHistory when nothing was kept.
	At(lock string, t time.Time) (State, error)
	// Stats are the lock's figures over [from, to].
	Stats(lock string, from, to time.Time) (Stats, error)
	// Locks lists the locks with a history.
	Locks() ([]lockqueue.LockID, error)
}

// lockIDs turns keys into identities, sorted.
func lockIDs(keys []string) []lockqueue.LockID {
	slices.Sort(keys)
	out := make([]lockqueue.LockID, len(keys))
	for i, k := range keys {
		out[i] = parseKey(k)
	}
	return out
}

// Writer is what the Recorder writes to.
type Writer interface {
	// Record stores the changes snap makes to its lock and returns them.
	Record(snap lockqueue.Snapshot) ([]Event, error)
	// RecordGap stores that nothing of lock was seen from since until now.
	RecordGap(lock string, since time.Time, why string) error
}

// DB is a whole history store.
type DB interface {
	Source
	Writer
	Close() error
}

var (
	_ DB = (*Store)(nil)
	_ DB = (*PGStore)(nil)
)

package history

import (
	"cmp"
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
	// Walk calls fn with each of a lock's records in [from, to], in
	// order, without collecting them: its changes, and the restatements
	// of its state (Synthetic) where the store keeps them. An error from
	// fn stops the walk and is returned.
	Walk(lock string, from, to time.Time, fn func(Event) error) error
	// At is the lock as it was at t; ErrNoHistory when nothing was kept.
	At(lock string, t time.Time) (State, error)
	// Stats are the lock's figures over [from, to].
	Stats(lock string, from, to time.Time) (Stats, error)
	// Locks lists the locks with a history, each once per cluster it
	// was recorded on.
	Locks() ([]Lock, error)
}

// Lock is a lock with a history: its identity and the cluster it was
// recorded on (UnknownCluster for a recording that does not say).
type Lock struct {
	lockqueue.LockID
	Cluster string `json:"cluster"`
}

// Key is the key the lock's history is kept under.
func (l Lock) Key() string { return Key(l.Cluster, l.LockID.Key()) }

// locksOf turns history keys into locks, sorted by service, name and
// cluster.
func locksOf(keys []string) []Lock {
	out := make([]Lock, len(keys))
	for i, k := range keys {
		out[i] = Lock{LockID: parseKey(k), Cluster: ClusterOf(k)}
	}
	slices.SortFunc(out, func(a, b Lock) int {
		return cmp.Or(cmp.Compare(a.Service, b.Service), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Cluster, b.Cluster))
	})
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

// changesIn are the lock's changes in [from, to] as src walks them: its
// records less the restatements.
func changesIn(src Source, lock string, from, to time.Time) ([]Event, error) {
	var out []Event
	err := src.Walk(lock, from, to, func(e Event) error {
		if !e.Synthetic {
			out = append(out, e)
		}
		return nil
	})
	return out, err
}

package simulator

import "github.com/zklockviz/zklockviz/lockqueue"

// LockSnapshots are the locks the state shows: the one the live reader
// follows, then the scene's (Locks), so that a page can word any node of
// them without knowing which holds it.
func (s State) LockSnapshots() []lockqueue.Snapshot {
	return append([]lockqueue.Snapshot{s.Snapshot}, s.Locks...)
}

// WithLocks is s with its locks, the one followed and the scene's, as f
// makes them: a page's (web stamps what its lanes write).
func (s State) WithLocks(f func(lockqueue.Snapshot) lockqueue.Snapshot) any {
	s.Snapshot = f(s.Snapshot)
	if s.Locks != nil {
		locks := make([]lockqueue.Snapshot, len(s.Locks))
		for i, l := range s.Locks {
			locks[i] = f(l)
		}
		s.Locks = locks
	}
	return s
}

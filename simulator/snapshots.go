package simulator

import "github.com/zklockviz/zklockviz/lockqueue"

// LockSnapshots are the locks the state shows: the one the live reader
// follows, then the scene's (Locks), so that a page can word any node of
// them without knowing which holds it.
func (s State) LockSnapshots() []lockqueue.Snapshot {
	return append([]lockqueue.Snapshot{s.Snapshot}, s.Locks...)
}

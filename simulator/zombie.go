package simulator

import (
	"fmt"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// A Zombie is a client as ZombieHolder judges it: its name and state, the
// node it held, and whether its session lapsed while it was paused
// (Lapsed) holding (CutHeld).
type Zombie struct {
	Name, State, Node string
	Lapsed, CutHeld   bool
}

// ZombieWords are how a service words a zombie: Lost how the server took
// the lock and what it did, Back a client running again, Gone what the
// server no longer shows.
type ZombieWords struct {
	Lost, Back, Gone string
}

// ZombieHolder is the alert on a client that still believes it holds a
// lock the server took back, or false for any other client: one paused
// through its expiry while it held (lapsed, cutHeld), or running again
// after it (stale). The server's listing cannot show it, so a split
// scenario's snapshot says so, as etcd's reader does for a lease run out.
// holder is who holds the lock now ("": no one).
func ZombieHolder(c Zombie, holder string, w ZombieWords) (lockqueue.Alert, bool) {
	paused := c.State == StatePaused && c.Lapsed && c.CutHeld
	if !paused && c.State != StateStale {
		return lockqueue.Alert{}, false
	}
	now := "no one holds it now"
	if holder != "" {
		now = holder + " holds it now"
	}
	how := w.Back
	if paused {
		how = "still paused"
	}
	return lockqueue.Alert{Kind: lockqueue.AlertHolderExpired, Nodes: []string{c.Node}, Message: fmt.Sprintf(
		"%s lost the lock %s; %s. %s, %s, still believes it holds: a zombie holder %s (only a fencing token can stop its writes)",
		c.Name, w.Lost, now, c.Name, how, w.Gone)}, true
}

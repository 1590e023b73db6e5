package simulator

import (
	"fmt"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// ZombieHolder is the alert on a client that still believes it holds a
// lock the server took back, or false for any other client: one paused
// through its expiry while it held (lapsed, cutHeld), or running again
// after it (stale). The server's listing cannot show it, so a split
// scenario's snapshot says so, as etcd's reader does for a lease run out.
// node is what the server no longer shows; lost says how the server took
// the lock and what it did, holder who holds it now ("": no one), back how
// the service words a client running again, and gone what the server no
// longer shows.
func ZombieHolder(name, state, node string, lapsed, cutHeld bool, lost, holder, back, gone string) (lockqueue.Alert, bool) {
	paused := state == StatePaused && lapsed && cutHeld
	if !paused && state != StateStale {
		return lockqueue.Alert{}, false
	}
	now := "no one holds it now"
	if holder != "" {
		now = holder + " holds it now"
	}
	how := back
	if paused {
		how = "still paused"
	}
	return lockqueue.Alert{Kind: lockqueue.AlertHolderExpired, Nodes: []string{node}, Message: fmt.Sprintf(
		"%s lost the lock %s; %s. %s, %s, still believes it holds: a zombie holder %s (only a fencing token can stop its writes)",
		name, lost, now, name, how, gone)}, true
}

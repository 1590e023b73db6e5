package zkwatch

import (
	"sync"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// minClockOffset is the smallest measured offset the watcher corrects
// ctimes by. Below it the estimate's own error (a watch event's delivery,
// the settle delay, a round trip) is as large as the offset: correcting
// would only add noise, and cost a copy of every node per publish.
const minClockOffset = 250 * time.Millisecond

// serverClock estimates how far the watcher's clock is ahead of the
// ZooKeeper leader's, which stamps every node's ctime. The watcher only
// reads, so it cannot ask the server the time; it learns it from the nodes
// it sees created live. A node absent from one listing of a lock and
// present in the next was created before that listing's answer arrived:
//
//	offset (local − server) ≤ answered − ctime
//
// The smallest bound seen is the estimate. It is high by the time from the
// create to the answer: the watch event, the settle delay and a round trip.
type serverClock struct {
	mu     sync.Mutex
	offset time.Duration
	known  bool
}

// observe takes one node seen created live: its ctime and when the listing
// that first showed it was answered (on the watcher's clock).
func (c *serverClock) observe(ctime, answered time.Time) {
	if ctime.IsZero() {
		return
	}
	bound := answered.Sub(ctime)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.known || bound < c.offset {
		c.offset, c.known = bound, true
	}
}

// correction is what to add to a ctime to put it on the watcher's clock:
// the estimate once it is known and large enough to matter.
func (c *serverClock) correction() (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.known || (c.offset < minClockOffset && c.offset > -minClockOffset) {
		return 0, false
	}
	return c.offset, true
}

// correctCtimes moves every node's ctime onto the watcher's clock, in place.
func correctCtimes(nodes []lockqueue.Node, by time.Duration) {
	for i := range nodes {
		if !nodes[i].Ctime.IsZero() {
			nodes[i].Ctime = nodes[i].Ctime.Add(by)
		}
	}
}

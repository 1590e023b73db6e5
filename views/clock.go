package views

import (
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// Clock is a node's running clock as the pages show it: when it starts,
// the verb its label reads with ("holds 3s", "waits ≥ 12s") and, for a
// clock that only bounds what it times, why. Since is zero when unknown.
type Clock struct {
	Since time.Time
	Verb  string
	// Term is the verb as a node's details word it ("holding for at most
	// (since created)").
	Term string
	Hint string
}

// ClockOf is n's clock. A holder's starts where the reader's HeldSince
// says (lockqueue.CarryHolds: at the hand-off it saw, or bounded by the
// node's creation or by when it was first seen holding, HeldBound), a
// waiter's at its creation, or where WaitSince says (a classroom run's).
// The server decides it once, so every page, opened whenever, reads the
// same clock, and the lane's nodes bring it (LaneOf).
func ClockOf(n lockqueue.Node) Clock {
	waited := n.WaitSince()
	if waited.IsZero() {
		waited = n.Ctime
	}
	switch {
	case n.Foreign:
		return Clock{Since: waited, Verb: "age", Term: "age"}
	case n.Holding && !n.HeldSince().IsZero():
		return holdClock(n.HeldSince(), n.HeldBound())
	case n.Holding && !n.Ctime.IsZero() && !n.CtimeAtMost:
		// Unstamped (a source that keeps no clock): its creation bounds it.
		return holdClock(n.Ctime, lockqueue.HeldAtMost)
	case n.Holding:
		return holdClock(time.Time{}, lockqueue.HeldAtLeast)
	case n.CtimeAtMost && n.WaitSince().IsZero():
		return Clock{Since: n.Ctime, Verb: "waits ≥", Term: "waiting for at least"}
	}
	return Clock{Since: waited, Verb: "waits", Term: "waiting for"}
}

func holdClock(since time.Time, b lockqueue.Bound) Clock {
	switch b {
	case lockqueue.HeldAtMost:
		return Clock{Since: since, Verb: "holds ≤", Term: "holding for at most (since created)", Hint: holdSinceMade}
	case lockqueue.HeldAtLeast:
		return Clock{Since: since, Verb: "holds ≥", Term: "holding for at least", Hint: holdUnknown}
	}
	return Clock{Since: since, Verb: "holds", Term: "holding for"}
}

// Label is the clock's text at now: "holds 3s"; "" when its start is
// unknown.
func (c Clock) Label(now time.Time) string {
	if c.Since.IsZero() {
		return ""
	}
	return c.Verb + " " + Duration(now.Sub(c.Since))
}

// SinceMs is Since for a page's data-since: 0 when unknown.
func (c Clock) SinceMs() int64 {
	if c.Since.IsZero() {
		return 0
	}
	return c.Since.UnixMilli()
}

// A clock's words that the server says itself: the lane brings them
// (LaneOf), and the table and the details render them.
const (
	holdSinceMade = "already holding when zklockviz first read the lock: the time since its node was created (ZooKeeper's ctime, corrected for the server's measured clock offset); it acquired at or after that, when exactly is unknown"
	holdUnknown   = "already holding when zklockviz first saw it: held at least this long; when it acquired is unknown"
	leaseExpired  = "lease expired"
	zombieHeld    = "zombie · held"
)

package lockqueue

import (
	"slices"
	"time"
)

// LastKnown is what a reader publishes of a lock it cannot read now (a read
// failed, the connection is down): next is the snapshot it built from what
// it could not read, whose Connection, Error and UpdatedAt say why and
// when; last is what it published before (nil: nothing yet).
//
// An unreadable lock is not a free one: the result shows last's holders,
// waiters, existence and alerts, marked not live with next's connection and
// error, and UnknownSince, when the state stopped being known (kept from a
// last that was already not live). What went, expired or cleared meanwhile
// is for the first live read after the gap to tell. Only the times that
// count down move on to next.UpdatedAt, from which pages count them: a
// lease's time left (0, shown as none, once it would have run out) and a
// zombie session's expiry. A live next is returned as it is.
func LastKnown(last *Snapshot, next Snapshot) Snapshot {
	if next.Live() {
		next.UnknownSince = time.Time{}
		return next
	}
	if last == nil {
		next.UnknownSince = next.UpdatedAt
		return next
	}
	s := *last
	s.Connection, s.Error, s.UpdatedAt = next.Connection, next.Error, next.UpdatedAt
	if last.Live() || last.UnknownSince.IsZero() {
		s.UnknownSince = next.UpdatedAt
	}
	s.Alerts = slices.Clone(last.Alerts)
	s.Nodes = slices.Clone(last.Nodes)
	gone := next.UpdatedAt.Sub(last.UpdatedAt).Milliseconds()
	if gone <= 0 {
		return s
	}
	for i := range s.Nodes {
		n := &s.Nodes[i]
		n.SetLeaseLeftMs(max(n.LeaseLeftMs()-gone, 0))
		n.SetExpiresInMs(max(n.ExpiresInMs()-gone, 0))
	}
	return s
}

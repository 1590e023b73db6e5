package zkwatch

import (
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// An idle watch-table poll costs what changed, not the queue: the poll
// re-joins every lock with the new table, and a join walks every node of
// the lock (100,000 of them each second for one big queue), although a
// table that differs from the last one in no session owning a node of the
// lock can change nothing of it. joinedWith is what a lock's last join
// depended on; a publish that would join the same inputs is skipped.
//
// Time enters a join too, and those locks join every table: a finding not
// lasted yet (a suspect edge's debounce, a holder's stall grace) counts
// once it has lasted, with no change of the table; a zombie's expiry
// countdown moves; a session younger than the table counts as connected
// only while it is young.

// smallLock is the most nodes a lock's owners are looked up in by walking
// its nodes; a bigger lock keeps the set of its owners.
const smallLock = 64

// joinedWith is what a lock's last published join depended on; guarded by
// the watcher's pubMu.
type joinedWith struct {
	ok      bool   // the rest says something: a live join of the lock
	baseGen uint64 // the base joined
	seq     uint64 // the connection view's state sequence
	table   uint64 // the watch table's generation
	by      time.Duration
	correct bool      // the clock correction applied to ctimes
	due     time.Time // when a finding pending at the join would count; zero: none
	timed   bool      // a zombie's countdown or a young session: join each table
	// owners: the sessions owning the base's nodes (of a lock of more
	// than smallLock), made when a table first changes some session after
	// the base was set; ownersGen is
	// the baseGen they were made from.
	owners    map[int64]bool
	ownersGen uint64
}

// unchangedSinceJoin reports whether joining l now would join the same
// inputs as its last join, which was published: the same base, connection
// state, clock correction, and a watch table that differs from the one
// joined in no session owning a node of the lock, with no finding due.
// pubMu is held.
func (l *lock) unchangedSinceJoin(cv connView, t tableState, by time.Duration, correct bool, now time.Time) bool {
	j := &l.joined
	if !j.ok || !l.published || j.seq != cv.seq || j.by != by || j.correct != correct || j.timed ||
		(!j.due.IsZero() && !now.Before(j.due)) {
		return false
	}
	switch {
	case t.gen == j.table:
	case t.gen == j.table+1 && !t.all:
	default:
		return false
	}
	l.mu.Lock()
	// readFailed marks the base with its error in place.
	same := !l.removed && !l.fresh && l.baseGen == j.baseGen && l.base.Error == ""
	nodes := l.base.Nodes
	l.mu.Unlock()
	if !same {
		return false
	}
	if t.gen == j.table || len(t.changed) == 0 {
		j.table = t.gen
		return true
	}
	if len(nodes) <= smallLock {
		// No set kept: a fleet of small locks would keep one map each.
		for i := range nodes {
			if t.changed[nodes[i].Owner()] {
				return false
			}
		}
		j.table = t.gen
		return true
	}
	if j.owners == nil || j.ownersGen != j.baseGen {
		// The base's nodes are not changed in place once joined (a fresh
		// base is never skipped), so they are read here without l.mu.
		j.owners, j.ownersGen = map[int64]bool{}, j.baseGen
		for i := range nodes {
			if id := nodes[i].Owner(); id != 0 {
				j.owners[id] = true
			}
		}
	}
	for id := range t.changed {
		if j.owners[id] {
			return false
		}
	}
	j.table = t.gen
	return true
}

// noteJoined records what a published (or found unchanged) join of l
// depended on; pubMu is held.
func (w *Watcher) noteJoined(l *lock, in joinInput, s lockqueue.Snapshot, cv connView, conn lockqueue.Connection,
	t tableState, by time.Duration, correct, timed bool, now time.Time) {
	j := &l.joined
	j.ok = conn == "" && s.Live() && s.Connection == lockqueue.Connected
	if !j.ok {
		return
	}
	for _, a := range s.Alerts {
		timed = timed || a.Kind == lockqueue.AlertZombie
	}
	j.baseGen, j.seq, j.table, j.by, j.correct, j.timed = in.gen, cv.seq, t.gen, by, correct, timed
	j.due = lockqueue.NextDue(l.missing, now, w.cfg.StallGrace)
}

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
func (l *lock) unchangedSinceJoin(env joinEnv) bool {
	j, t := &l.joined, env.table
	if !l.published || !j.sameInputs(env) || !j.tableFollows(t) {
		return false
	}
	nodes, same := l.baseSinceJoin()
	if !same {
		return false
	}
	if t.gen != j.table && len(t.changed) > 0 && j.ownerChanged(nodes, t.changed) {
		return false
	}
	j.table = t.gen
	return true
}

// sameInputs reports whether the join's inputs other than the base and the
// table are those of the last live join: the connection view's state, the
// clock correction, and no countdown running or finding due by now.
func (j *joinedWith) sameInputs(env joinEnv) bool {
	return j.ok && j.seq == env.cv.seq && j.by == env.by && j.correct == env.correct && !j.timed &&
		(j.due.IsZero() || env.now.Before(j.due))
}

// tableFollows reports whether t is the table joined or the one after it,
// as a list of the sessions it changed (not a whole new table).
func (j *joinedWith) tableFollows(t tableState) bool {
	return t.gen == j.table || t.gen == j.table+1 && !t.all
}

// baseSinceJoin is l's base's nodes, and whether the base is still the one
// joined and good (not removed, fresh or failed). pubMu is held.
func (l *lock) baseSinceJoin() ([]lockqueue.Node, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	// readFailed marks the base with its error in place.
	same := !l.removed && !l.fresh && l.baseGen == l.joined.baseGen && l.base.Error == ""
	return l.base.Nodes, same
}

// ownerChanged reports whether a session in changed owns one of the
// joined base's nodes. A small lock's nodes are walked; a bigger one's
// owners are kept as a set, made from the base once.
func (j *joinedWith) ownerChanged(nodes []lockqueue.Node, changed map[int64]bool) bool {
	if len(nodes) <= smallLock {
		// No set kept: a fleet of small locks would keep one map each.
		for i := range nodes {
			if changed[nodes[i].Owner()] {
				return true
			}
		}
		return false
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
	for id := range changed {
		if j.owners[id] {
			return true
		}
	}
	return false
}

// noteJoined records what a published (or found unchanged) join of l
// depended on; pubMu is held.
func (w *Watcher) noteJoined(l *lock, in joinInput, s lockqueue.Snapshot, conn lockqueue.Connection, timed bool, env joinEnv) {
	j := &l.joined
	j.ok = conn == "" && s.Live() && s.Connection == lockqueue.Connected
	if !j.ok {
		return
	}
	for _, a := range s.Alerts {
		timed = timed || a.Kind == lockqueue.AlertZombie
	}
	j.baseGen, j.seq, j.table, j.by, j.correct, j.timed = in.gen, env.cv.seq, env.table.gen, env.by, env.correct, timed
	j.due = lockqueue.NextDue(l.missing, env.now, w.cfg.StallGrace)
}

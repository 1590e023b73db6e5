package zkwatch

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// How a lock's last read, the session's state and the last watch table
// become the snapshot views get, and when it is published.

// stateLoop republishes every lock at once when the connection state
// changes, so no view keeps showing a stale queue as live. Each transition
// is published, even one already over (an expiry followed at once by a new
// session), so views can tell that it happened.
func (w *Watcher) stateLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.sess.changed:
		}
		ts := w.sess.takeTransitions()
		locks := w.locks.all()
		for _, tr := range ts {
			for _, l := range locks {
				w.publishLock(l, &tr)
			}
		}
	}
}

// emit joins l's last read with the last watch table and publishes it when
// anything but the timestamp changed.
func (w *Watcher) emit(l *lock) { w.publishLock(l, nil) }

// publishLock is emit, or, with tr, the publish of a connection state
// transition. A past transition is published only to a lock that has
// published nothing since, and a past "connected" never: it would show a
// stale queue as live.
func (w *Watcher) publishLock(l *lock, tr *transition) {
	w.pubMu.Lock()
	defer w.pubMu.Unlock()
	// Read under pubMu: a state change after this read is published after
	// this publish, by stateLoop.
	env := joinEnv{cv: w.sess.view(), table: w.poll.current()}
	// Read once for both: a correction that moves after this read makes
	// the next publish join again.
	env.by, env.correct = w.clock.correction()
	env.now = time.Now()
	if tr == nil && l.unchangedSinceJoin(env) {
		return
	}
	in, conn, ok := l.takeJoinInput(tr, env.cv)
	if !ok {
		return
	}
	// The join runs without l.mu: ZooKeeper's receive loop takes it to
	// note a fired watch, and a watch-table poll's join of a big queue
	// (about a millisecond, far more when the process is descheduled
	// holding it) held every change's event and read behind it. pubMu,
	// held throughout, keeps joins and publishes in order, and a read's
	// nodes joined in place are not read by its goroutine until its own
	// emit, which waits for pubMu.
	w.joins.Add(1)
	s, shared, timed := w.join(l, in, conn, env)
	// last is written with pubMu held: read here without l.mu.
	var last *lockqueue.Snapshot
	if l.published {
		last = &l.last
	}
	if shared {
		lockqueue.CarryHoldsShared(last, &s, s.UpdatedAt)
	} else {
		lockqueue.CarryHolds(last, &s, s.UpdatedAt)
	}
	w.noteJoined(l, in, s, conn, timed, env)
	if l.keepPublished(s, in, tr, env.cv) && w.cfg.Publish != nil {
		w.cfg.Publish(s)
	}
}

// takeJoinInput says what a publish of l joins, and whether it publishes
// at all: a past transition goes only to a lock that has published
// nothing since, and a removed lock publishes one last snapshot. conn
// overrides the connection state for a past transition.
func (l *lock) takeJoinInput(tr *transition, cv connView) (in joinInput, conn lockqueue.Connection, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if tr != nil && tr.seq != cv.seq {
		if l.stateSeq >= tr.seq || tr.state == lockqueue.Connected {
			return joinInput{}, "", false
		}
		conn = tr.state
	}
	if l.removed {
		// One last snapshot (Exists:false) goes out after removal; a
		// read still in flight must not follow it.
		if l.final {
			return joinInput{}, "", false
		}
		l.final = true
	}
	in = joinInput{base: l.base, fresh: l.fresh, epoch: l.epoch, gen: l.baseGen}
	l.fresh = false
	return in, conn, true
}

// keepPublished records s as l's last published snapshot when it differs
// from the last one, and reports whether it does; pubMu is held.
func (l *lock) keepPublished(s lockqueue.Snapshot, in joinInput, tr *transition, cv connView) (changed bool) {
	// last and published are written with pubMu held too: read here
	// without l.mu.
	changed = !l.published || !sameSnapshot(l.last, s)
	l.mu.Lock()
	defer l.mu.Unlock()
	if changed {
		// Published snapshots are never modified (copy on write: each join
		// builds new nodes), so views get s itself, and base shares its
		// nodes when it is still the base joined: the same nodes, in the
		// same order, joined. A base set meanwhile is joined by its own
		// emit, next.
		l.last, l.published = s, true
		if l.baseGen == in.gen {
			l.base.Nodes = s.Nodes
		}
	}
	if tr != nil {
		l.stateSeq = tr.seq
	} else {
		// Unchanged or not, what views have now matches the current state.
		l.stateSeq = cv.seq
	}
	return changed
}

// joinEnv is what a publish joins its lock's base with, read once under
// pubMu: the connection view, the watch table, the clock correction (by,
// when correct) and the time.
type joinEnv struct {
	cv      connView
	table   tableState
	by      time.Duration
	correct bool
	now     time.Time
}

// joinInput is what a join takes from its lock, read under l.mu.
type joinInput struct {
	base  lockqueue.Snapshot
	fresh bool // base.Nodes may be filled in place: see lock.fresh
	epoch uint64
	gen   uint64 // lock.baseGen of base
}

// join builds the snapshot to publish from in and env, with pubMu held (it
// guards l.missing); conn overrides the connection state when set. shared:
// its nodes are still the base's, shared with a published snapshot, and
// are not to be changed in place. timed: the table marked a session
// younger than it as connected, which it stops doing with time.
func (w *Watcher) join(l *lock, in joinInput, conn lockqueue.Connection, env joinEnv) (_ lockqueue.Snapshot, shared, timed bool) {
	now, t := env.now, env.table
	// A copy of the base for the join to fill in: its nodes are shared
	// with the last published snapshot, unless a read has just built
	// them, when no one else has them yet and the join fills them in
	// place (the join resets all it sets, so they stay a valid base;
	// readLock reads base nodes without the lock only after this join,
	// which its own emit waits for). Shared nodes are copied by the join
	// and CarryHolds before their first change, so a watch-table poll
	// that changes nothing of a lock copies none of its nodes. Node
	// Watching slices need no copy: the join replaces them; Alerts does,
	// as the join appends to it.
	s := in.base
	// Corrected ctimes go to the published copy only: the base keeps the
	// server's, so a correction is never applied twice.
	shared = !in.fresh
	if env.correct {
		s.Nodes, shared = slices.Clone(in.base.Nodes), false // nil stays nil, [] stays []
		correctCtimes(s.Nodes, env.by)
	}
	s.Alerts = slices.Clone(in.base.Alerts)
	s.Connection = connFor(env.cv, in.epoch)
	if conn != "" {
		s.Connection = conn
	}
	s.UpdatedAt = now
	table, timed := tableFor(&s, t.table, t.at)
	l.missing = lockqueue.Join(&s, table, l.missing, now, lockqueue.JoinOptions{StallGrace: w.cfg.StallGrace, Shared: shared})
	s.Alerts = append(s.Alerts, t.alerts(s)...)
	if !s.Live() {
		// A lock not read now, or a watch table not asked, is no free
		// lock and no cleared alert: the last known state, marked not
		// live (the disconnect alert restated with the state now).
		var last *lockqueue.Snapshot
		if l.published {
			last = &l.last
		}
		s = lockqueue.LastKnown(last, s)
		s.Alerts = slices.DeleteFunc(s.Alerts, func(a lockqueue.Alert) bool { return a.Kind == lockqueue.AlertDisconnect })
	}
	if s.Connection != lockqueue.Connected {
		s.Alerts = append(s.Alerts, lockqueue.Alert{Kind: lockqueue.AlertDisconnect, Nodes: []string{},
			Message: "the watcher's ZooKeeper connection is " + string(s.Connection) + ": this is the last known state, not live"})
	}
	return s, shared && len(s.Nodes) > 0 && len(s.Nodes) == len(in.base.Nodes) && &s.Nodes[0] == &in.base.Nodes[0], timed
}

// connFor is the connection state a lock's snapshot is shown with: a
// snapshot read before the current session connection (at epoch) is not
// live even once the connection is back.
func connFor(cv connView, epoch uint64) lockqueue.Connection {
	if cv.state == lockqueue.Connected && epoch != cv.epoch {
		return lockqueue.Reconnecting
	}
	return cv.state
}

// tableFor marks sessions younger than the watch table as connected: the
// table could not have seen them, and calling them zombies would be wrong.
// young says whether it marked any.
func tableFor(s *lockqueue.Snapshot, t lockqueue.WatchTable, at time.Time) (lockqueue.WatchTable, bool) {
	if t.Connected == nil || t.Partial {
		// A partial table calls no one a zombie anyway, and marking a young
		// session seen would claim its watches known (none).
		return t, false
	}
	var young []int64
	for ni := range s.Nodes {
		n := &s.Nodes[ni]
		if id := n.Owner(); id != 0 && !t.Connected[id] && !n.Ctime.Before(at.Add(-youngMargin)) {
			young = append(young, id)
		}
	}
	if len(young) == 0 {
		return t, false
	}
	c := maps.Clone(t.Connected)
	for _, id := range young {
		c[id] = true
	}
	t.Connected = c
	return t, true
}

// sameSnapshot: a change moves the revision (the parent's pzxid), which
// is told before looking at any node; otherwise lockqueue.SameShown, which
// compares the nodes field by field (reflect.DeepEqual over 1,000 nodes
// took over a millisecond of each watch-table poll's re-join, under the
// locks a change's publish waits for).
func sameSnapshot(a, b lockqueue.Snapshot) bool {
	return a.Revision == b.Revision && lockqueue.SameShown(a, b)
}

// cloneSnapshot copies the slices JoinWatches and callers may touch.
func cloneSnapshot(s lockqueue.Snapshot) lockqueue.Snapshot {
	c := s
	c.Nodes = slices.Clone(s.Nodes)
	for i := range c.Nodes {
		c.Nodes[i].Watching = slices.Clone(c.Nodes[i].Watching)
	}
	c.Alerts = slices.Clone(s.Alerts)
	for i := range c.Alerts {
		c.Alerts[i].Nodes = slices.Clone(c.Alerts[i].Nodes)
	}
	return c
}

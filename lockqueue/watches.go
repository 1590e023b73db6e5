package lockqueue

import (
	"slices"
	"strings"
	"sync"
	"time"
)

// WatchTable is what the server tells about watches and sessions, merged over
// every ensemble member, with the watcher's own session and /zookeeper/config
// already dropped.
type WatchTable struct {
	Source string // "4lw", "admin", "none" or "simulator"
	// Watches maps a session to the paths it watches. The server lists only data
	// watches (exists/getData); a "simulator" table also lists children watches,
	// as the watched parent's own path.
	Watches map[int64][]string
	// Connected is the set of sessions with a live connection on some member;
	// nil when unknown.
	Connected map[int64]bool
	// Partial says that not every ensemble member was asked: Connected and
	// Watches then cover only the sessions connected to the members asked.
	// A session absent from Connected may be connected to another member, so
	// it is neither a zombie nor known to watch nothing: its watches are
	// unknown.
	Partial bool
	// Expiry is when a session expires, when the server tells.
	Expiry map[int64]time.Time
	// ChildWatches counts children watches the server holds but cannot list; -1 unknown.
	ChildWatches int
}

// NoWatches is the table used when the server tells nothing.
var NoWatches = WatchTable{Source: "none", ChildWatches: -1}

// known reports whether the table says anything about watches.
func (w WatchTable) known() bool { return w.Source != "none" && w.Source != "" }

// Debounce is how long a waiter may show a suspect edge (missing,
// unexpected or dangling) before it counts: a watch is absent for a moment
// between firing and being re-armed, and the watch table joined with a fresh
// child listing can be up to one poll older than the listing, so for a moment
// a waiter may seem to watch a node that has just gone (dangling) or a node
// that is no longer its predecessor (unexpected).
const Debounce = 2 * time.Second

// DefaultStallGrace is how long a holder may go on watching a sibling before
// it counts as stalled, when the caller says nothing: two polls of the
// watch table at zkwatch's default poll. A holder's watch on its old
// predecessor is normal for as long as the table is older than the listing.
const DefaultStallGrace = 2 * time.Second

// JoinOptions tune a join.
type JoinOptions struct {
	// StallGrace: see DefaultStallGrace, used when this is 0. Give at least
	// two polls of the watch table, so that a table read before a hand-off
	// never makes the new holder look stalled.
	StallGrace time.Duration
	// Shared says s.Nodes are shared with a snapshot already published
	// (the watcher joins its last published nodes with each new watch
	// table): the join copies them before its first change to a node, and
	// a join that changes none (the usual poll) copies nothing.
	Shared bool
}

// JoinWatches is Join with the default options.
func JoinWatches(s *Snapshot, w WatchTable, missingSince map[string]time.Time, now time.Time) map[string]time.Time {
	return Join(s, w, missingSince, now, JoinOptions{})
}

// Join fills each node's actual watches and edge, marks stalled holders,
// and adds deadlock, zombie, orphan and stalled-holder alerts.
// missingSince carries, from one call to the next, since when each
// finding has been seen (a waiter's suspect edge, a holder's stall); the
// returned map replaces it (it is missingSince itself, updated, when that
// is not nil: a rebuild of a big queue then allocates no new map). A caller
// whose table is exact (the simulator) passes a zero time under every
// node's name to skip the debounce and the stall grace.
//
// The server lists watches per session, not per node, and one session may
// own several nodes of a queue (threads sharing a client); see attribute
// for how a session's watches are split among its nodes. Only attributed
// watches become edges of the wait-for graph, so a watch of one thread
// never makes a cycle through its sibling.
func Join(s *Snapshot, w WatchTable, missingSince map[string]time.Time, now time.Time, opt JoinOptions) map[string]time.Time {
	s.WatchSource = w.Source
	s.InvisibleChildWatches = w.ChildWatches
	j := joiner{w: w, q: newQueueView(s), known: w.known(), grace: opt.StallGrace,
		f: findings{since: missingSince, now: now}}
	if j.grace <= 0 {
		j.grace = DefaultStallGrace
	}
	if j.f.since == nil {
		j.f.since = map[string]time.Time{}
	}
	attributed := attribute(s, w, j.q)
	shared := opt.Shared
	for i := range s.Nodes {
		var a attribution
		if attributed != nil {
			a = attributed[i]
		}
		if !shared {
			j.node(&s.Nodes[i], a)
			continue
		}
		n := s.Nodes[i]
		j.node(&n, a)
		if !sameJoined(&n, &s.Nodes[i]) {
			s.Nodes = slices.Clone(s.Nodes)
			j.q.nodes, shared = s.Nodes, false
			s.Nodes[i] = n
		}
	}
	releaseAttributions(attributed)
	j.f.forgetGone(j.q)
	if len(j.zombies) > 0 {
		s.Alerts = append(s.Alerts, zombieAlert(s, j.zombies))
	}
	if j.known {
		if cyc := queueCycle(s, j.q); len(cyc) > 0 {
			s.Alerts = append(s.Alerts, deadlockAlert(s, j.q, cyc))
			markCycle(s, j.q)
		}
		if a, ok := orphanAlert(s); ok {
			s.Alerts = append(s.Alerts, a)
		}
		s.Alerts = append(s.Alerts, stalledAlerts(s, j.q, j.stalled)...)
	}
	return j.f.since
}

// sameJoined reports whether a and b agree in every field a join sets.
func sameJoined(a, b *Node) bool {
	return a.Edge == b.Edge && a.Zombie == b.Zombie && a.ExpiresInMs() == b.ExpiresInMs() && a.StalledOn() == b.StalledOn() &&
		a.StalledSince() == b.StalledSince() && (a.Watching == nil) == (b.Watching == nil) && slices.Equal(a.Watching, b.Watching) &&
		slices.Equal(a.Watches(), b.Watches())
}

// joiner is one join's state.
type joiner struct {
	w       WatchTable
	q       *queueView
	known   bool
	grace   time.Duration
	f       findings
	zombies []string
	stalled []string
}

// node fills in what the table says about one node, given the watches
// attributed to it, and then what each of its watches is.
func (j *joiner) node(n *Node, a attribution) {
	j.fill(n, a)
	n.SetWatches(laneWatches(n, j.q))
}

func (j *joiner) fill(n *Node, a attribution) {
	j.f.folders = j.f.folders || n.Folder() != ""
	// Reset everything a join sets, so a joined snapshot's nodes can be
	// joined again (the watcher joins its last published nodes with each
	// new watch table).
	n.Watching, n.Edge, n.Zombie = nil, EdgeNone, false
	n.SetExpiresInMs(0)
	n.SetStalledOn("")
	n.SetStalledSince(time.Time{})
	if n.Foreign || n.owner == 0 {
		return
	}
	// With only some members asked, a session seen on none of them may be
	// connected elsewhere: its liveness and watches are unknown.
	unseen := j.w.Partial && !j.w.Connected[n.owner]
	if j.known && !unseen {
		n.Watching = a.watching
	}
	if zombie(j.w, n.owner) {
		n.Zombie = true
		if exp, ok := j.w.Expiry[n.owner]; ok && exp.After(j.f.now) {
			n.SetExpiresInMs(exp.Sub(j.f.now).Milliseconds())
		}
		j.zombies = append(j.zombies, n.Name)
	}
	switch {
	case n.Holding:
		if j.known && !unseen && !a.ambiguous {
			j.holder(n)
		}
		return
	case !j.known || unseen || a.ambiguous:
		n.Edge = EdgeUnknown
	default:
		n.Edge = waiterEdge(n, j.w.Source, j.q)
	}
	if suspect(n.Edge) && !n.Zombie {
		if _, ok := j.f.lasted(n.Name, n.Name, Debounce); !ok {
			n.Edge = EdgeNone
		}
	}
}

// holder marks a holder stalled once its session has watched another node
// of the lock for the grace.
func (j *joiner) holder(n *Node) {
	on := stalledOn(n, j.q)
	if on == "" {
		return
	}
	if since, ok := j.f.lasted(stallKey(n.Name), n.Name, j.grace); ok {
		n.SetStalledOn(on)
		n.SetStalledSince(since)
		j.stalled = append(j.stalled, n.Name)
	}
}

// zombie reports whether a session owns nodes but has no live connection on
// any member. Only a whole table can tell.
func zombie(w WatchTable, owner int64) bool {
	return w.Connected != nil && !w.Connected[owner] && !w.Partial
}

// stallKey is the findings key of a holder's stall. Znode names cannot
// hold a "/", so it never meets a node's own key.
func stallKey(name string) string { return name + "/stalled" }

// findings remembers, across joins, since when each finding has been seen,
// so that a finding counts only once it has lasted.
type findings struct {
	since map[string]time.Time
	now   time.Time
	// seen lists the keys looked at in this join, each once: a join
	// looks at one key per node, and a folder's children have unique
	// names (folders: some node lives in a folder of its own, where a
	// name may be another folder's too). A list, not a set: the set cost
	// a map write per node, a third of a 1,000-node queue's join.
	seen    *[]string
	folders bool
	// unstored: a key was seen that lasted did not store in since (an
	// exact table's marker stands for it), so seen and since cannot be
	// told equal by their sizes.
	unstored bool
}

// lasted records that the finding key is seen now and reports whether it
// has lasted at least d, and since when. A zero time under the node's own
// name (an exact table) makes every finding of the node count at once.
func (f *findings) lasted(key, node string, d time.Duration) (time.Time, bool) {
	if f.seen == nil {
		// Reused from join to join: a join of a big queue with every
		// waiter suspect looks at every node.
		f.seen = seenPool.Get().(*[]string)
	}
	*f.seen = append(*f.seen, key)
	since, ok := f.since[node]
	if ok && since.IsZero() {
		if key != node {
			*f.seen = append(*f.seen, node)
			f.unstored = true
		}
		return f.now, true
	}
	if key != node {
		since, ok = f.since[key]
	}
	if !ok {
		since = f.now
		f.since[key] = since
	}
	return since, f.now.Sub(since) >= d
}

var seenPool = sync.Pool{New: func() any { return new([]string) }}

// NextDue is the earliest time after now at which a finding in since (a
// join's returned map) that has not lasted yet would count: a suspect edge
// after Debounce, a holder's stall after grace (DefaultStallGrace when 0).
// Zero when none is pending. Until then a join of the same nodes with the
// same watch table finds the same, so a caller may skip it; at that time
// the finding crosses its threshold with no change of the table, and only
// a join shows it.
func NextDue(since map[string]time.Time, now time.Time, grace time.Duration) time.Time {
	if grace <= 0 {
		grace = DefaultStallGrace
	}
	var due time.Time
	for k, t := range since {
		if t.IsZero() {
			continue // an exact table's marker: every finding counts at once
		}
		d := Debounce
		if strings.HasSuffix(k, stallKey("")) {
			d = grace
		}
		if at := t.Add(d); at.After(now) && (due.IsZero() || at.Before(due)) {
			due = at
		}
	}
	return due
}

// forgetGone drops findings no longer seen: a node's suspect edge or stall
// that has ended starts its clock again when it comes back. It ends the
// join's use of seen.
func (f *findings) forgetGone(q *queueView) {
	var seen []string
	if f.seen != nil {
		seen = *f.seen
		defer func() {
			clear(seen)
			*f.seen = seen[:0]
			seenPool.Put(f.seen)
			f.seen = nil
		}()
	}
	// Every key seen is in since; when they are as many (and each was
	// seen once), since holds nothing else. The usual join of a queue
	// whose findings go on (every waiter of a big queue suspect) then
	// looks none of them up again.
	if !f.unstored && !f.folders && len(seen) == len(f.since) {
		return
	}
	looked := make(map[string]bool, len(seen))
	for _, k := range seen {
		looked[k] = true
	}
	for k, t := range f.since {
		if looked[k] {
			continue
		}
		if t.IsZero() && q.has(k) {
			continue // an exact table's marker, for a node still there
		}
		delete(f.since, k)
	}
}

// Package history is zklockviz's flight recorder: an append-only event
// stream per lock, derived from the consecutive Snapshots a live reader
// publishes, kept in an embedded store of segment files under a data
// directory, and read back as events, as the queue at a past moment, and as
// wait and hold figures. It knows locks only through lockqueue's
// service-neutral Snapshot, so every service behind the seam is recorded
// alike.
package history

import (
	"encoding/base64"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// Kind is what an event says happened.
type Kind string

// Event kinds. A node's life is queued, then acquired (maybe), then left.
const (
	// Queued: a node appeared (Mode, Client, Since = when it queued: the
	// server's creation time when the service tells it, else first seen,
	// and then Value "at-most"; Data, DataBinary, Label, Lease, PartOf and
	// Folder: who and where it is, as the live view showed it then; a Who
	// event tells what changes of who it is).
	Queued Kind = "queued"
	// Acquired: a node started to hold (Since = when it queued, so the
	// wait is Time-Since).
	Acquired Kind = "acquired"
	// Unheld: a node stopped holding but is still there (an N-holder queue
	// reordered, or a session that let go and asked again between two
	// reads); rare. Its next wait counts from here.
	Unheld Kind = "unheld"
	// Left: a node went (How; Since = queued, Acquired = when it started
	// to hold, zero when it never did).
	Left Kind = "left"
	// WaitsFor: the node's waits-for edge by its recipe's rule changed
	// (To, Source, Value = what it waits on when not a node, Nodes = the
	// blockers the server reports).
	WaitsFor Kind = "waits-for"
	// Watch: what the node's session actually watches changed (Edge, Nodes
	// = the watched paths; Value "none" when it is known to watch none).
	Watch Kind = "watch"
	// Zombie: the node's client is gone, its session or lease not expired
	// yet (Value "zombie"), or it is alive again (Value "alive").
	Zombie Kind = "zombie"
	// Who: who the node is changed as people know it (whoChanged: a
	// PostgreSQL session gone idle in transaction), with all of who it is
	// now (Data, DataBinary, Label, Lease, PartOf as in Queued).
	Who Kind = "who"
	// AlertRaised and AlertCleared: an alert (Alert, Nodes, Message).
	AlertRaised  Kind = "alert-raised"
	AlertCleared Kind = "alert-cleared"
	// Connection: the reader's view changed (Connection; Message = the
	// read error). Anything but connected without an error is a gap: the
	// history does not know what happened until the next connected one.
	Connection Kind = "connection"
	// Exists: the lock itself appeared (Value "yes") or went ("no").
	Exists Kind = "exists"
	// Recipe: the queue's recipe changed (Value).
	Recipe Kind = "recipe"
	// Leases, Invisible and Anonymous: a figure the reader reads beside
	// the nodes changed (Seq): a semaphore's lease limit (Value
	// "inferred" when the reader inferred it), the children watches it
	// cannot attribute to a node, the waiters the server counts but
	// cannot name (Since: when there came to be any).
	Leases    Kind = "leases"
	Invisible Kind = "invisible-watches"
	Anonymous Kind = "anonymous-waiters"
	// Gap: the recorder saw nothing from Since to Time (Message says why:
	// not running, or its queue overflowed).
	Gap Kind = "gap"
	// keyframe starts a lock's whole state at a segment's start; the
	// events after it with Synthetic set rebuild it. Never returned.
	keyframe Kind = "keyframe"
)

// queuedAtMost is a Queued event's Value when its Since is when the node
// was first seen, its creation then or before.
const queuedAtMost = "at-most"

// How says how a node left.
type How string

const (
	// Released: it held and went while its client was alive.
	Released How = "released"
	// Expired: its client was gone (a zombie) and its session or lease
	// ran out.
	Expired How = "expired"
	// GaveUp: it waited, never held, and went while its client was alive.
	GaveUp How = "gave-up"
	// Removed: a node that was neither holder nor waiter (a foreign child,
	// part of another node's contender) went.
	Removed How = "removed"
	// Unseen: it went while the reader was not connected, so how is not
	// known.
	Unseen How = "unknown"
)

// Event is one change of one lock. Which fields are set depends on Kind.
type Event struct {
	Time time.Time `json:"time"`
	Kind Kind      `json:"kind"`
	Node string    `json:"node,omitempty"`

	Mode     string    `json:"mode,omitempty"`
	Client   string    `json:"client,omitempty"`
	Seq      int64     `json:"seq,omitempty"`
	Foreign  bool      `json:"foreign,omitempty"`
	PartOf   string    `json:"partOf,omitempty"`
	Since    time.Time `json:"since,omitzero"`
	Acquired time.Time `json:"acquired,omitzero"`
	How      How       `json:"how,omitempty"`

	To     string   `json:"to,omitempty"`
	Source string   `json:"source,omitempty"`
	Edge   string   `json:"edge,omitempty"`
	Nodes  []string `json:"nodes,omitempty"`

	Alert      string `json:"alert,omitempty"`
	Message    string `json:"message,omitempty"`
	Connection string `json:"connection,omitempty"`
	Value      string `json:"value,omitempty"`

	// Who a Queued node's owner is beyond Client (its ZooKeeper session,
	// Redis token, etcd lease or PostgreSQL pid): its data, the first
	// MaxData bytes (base64 when DataBinary, as the live API has it), the
	// service's label of its client (PostgreSQL: application, client,
	// state) and its lease. Set on Queued events, and on Who events when
	// how people know the owner changed: the owner itself does not.
	Data       string `json:"data,omitempty"`
	DataBinary bool   `json:"dataBinary,omitempty"`
	Label      string `json:"label,omitempty"`
	Lease      string `json:"lease,omitempty"`
	// Folder is the folder a Queued node lives in when it is not the
	// lock's path (lockqueue.Rare's Folder): where its path is, and so
	// what the watches on it are.
	Folder string `json:"folder,omitempty"`

	// Synthetic marks the events of a keyframe: a restatement of the
	// state, not a change.
	Synthetic bool `json:"-"`
}

// Wait is how long a node waited: for Acquired, until it held; for a Left
// that never held, until it went. Zero for other events.
func (e Event) Wait() time.Duration {
	switch {
	case e.Since.IsZero():
		return 0
	case e.Kind == Acquired:
		return e.Time.Sub(e.Since)
	case e.Kind == Left && e.Acquired.IsZero():
		return e.Time.Sub(e.Since)
	}
	return 0
}

// Hold is how long a node that left had held; zero otherwise.
func (e Event) Hold() time.Duration {
	if e.Kind != Left || e.Acquired.IsZero() {
		return 0
	}
	return e.Time.Sub(e.Acquired)
}

// nodeState is what the history keeps of one node.
type nodeState struct {
	Name       string
	Mode       string
	Client     string
	Seq        int64
	Data       string
	QueuedAt   time.Time
	AcquiredAt time.Time
	WaitsFor   string
	WaitsOn    string
	Edge       string
	Watching   []string
	// rare holds what most nodes leave empty (nil when all is): a big
	// queue's state is 100,000 of these.
	rare *rareState
	// The flags side by side: one word for all, not one each (a big
	// queue's state is 100,000 of these).
	Foreign    bool
	DataBinary bool
	Holding    bool
	Zombie     bool
	// queuedAtMost: QueuedAt is when it was first seen, not its creation,
	// which was then or before (lockqueue's CtimeAtMost).
	queuedAtMost bool
	// acquiredUnseen: it was first seen already holding (at the reader's
	// start or after a gap), so when it acquired is not known. Kept
	// across segments by the keyframe's Acquired event ("after-gap").
	acquiredUnseen bool
}

// rareState is the part of a nodeState most nodes leave empty. States
// are cloned by copying their nodes, which then share it: it is written
// only through nodeState.setRare, on a copy.
type rareState struct {
	PartOf    string
	Folder    string
	Label     string
	Lease     string
	Source    string
	BlockedBy []string
	// leaseEnds is when the node's lease (an etcd lease, a Redis key's
	// TTL) runs out by the last snapshot that told its time left. Only
	// the recording process keeps it: it decides how a node left.
	leaseEnds time.Time
}

var noRare rareState

// more is n's rare part to read, never to write through (a node
// without one shares noRare): zero when it has none.
func (n *nodeState) more() *rareState {
	if n.rare == nil {
		return &noRare
	}
	return n.rare
}

// setRare sets n's rare part to r, kept only when not empty. Callers
// change a copy of n.more(), never the part n shares.
func (n *nodeState) setRare(r rareState) {
	if r.PartOf == "" && r.Folder == "" && r.Label == "" && r.Lease == "" && r.Source == "" && len(r.BlockedBy) == 0 && r.leaseEnds.IsZero() {
		n.rare = nil
		return
	}
	c := new(rareState) // allocated only here: most nodes have none
	*c = r
	n.rare = c
}

// State is a lock as the history knows it at one moment: what a Snapshot
// says about holders, waiters, edges and alerts, rebuilt from events.
type State struct {
	Lock       string
	Time       time.Time
	Connection lockqueue.Connection
	Error      string
	Exists     bool
	Recipe     lockqueue.Recipe
	beside     besideFigures
	nodes      []nodeState
	Alerts     []lockqueue.Alert
	// index finds a node in nodes by name; nil until needed, kept up to date
	// as nodes come and go.
	index map[string]int
	// seenLive: a live connection was recorded since the state's last
	// keyframe (the recording process's own state keeps it for as long as
	// it records the lock). A lock never seen live and empty knows nothing:
	// what it first shows live is a restatement (see changes).
	seenLive bool
}

// besideFigures are what a reader reads of a lock beside its nodes, as the live
// answer gave them (lockqueue.Snapshot's fields of the same names).
type besideFigures struct {
	Leases         int
	LeasesInferred bool
	Invisible      int
	Anonymous      int
	AnonymousSince time.Time
}

func besideOf(s *lockqueue.Snapshot) besideFigures {
	return besideFigures{Leases: s.Leases, LeasesInferred: s.LeasesInferred, Invisible: s.InvisibleChildWatches,
		Anonymous: s.AnonymousWaiters, AnonymousSince: s.AnonymousSince}
}

// besideChanges calls emit with the events that turn the figures from
// into to, at t.
func besideChanges(from, to besideFigures, t time.Time, emit func(Event)) {
	if from.Leases != to.Leases || from.LeasesInferred != to.LeasesInferred {
		e := Event{Time: t, Kind: Leases, Seq: int64(to.Leases)}
		if to.LeasesInferred {
			e.Value = "inferred"
		}
		emit(e)
	}
	if from.Invisible != to.Invisible {
		emit(Event{Time: t, Kind: Invisible, Seq: int64(to.Invisible)})
	}
	if from.Anonymous != to.Anonymous || !from.AnonymousSince.Equal(to.AnonymousSince) {
		emit(Event{Time: t, Kind: Anonymous, Seq: int64(to.Anonymous), Since: to.AnonymousSince})
	}
}

// Live reports whether the reader saw the lock at that moment.
func (s *State) Live() bool { return s.Connection == lockqueue.Connected && s.Error == "" }

func (s *State) node(name string) int {
	if s.index == nil {
		s.index = make(map[string]int, len(s.nodes))
		for i, n := range s.nodes {
			s.index[n.Name] = i
		}
	}
	if i, ok := s.index[name]; ok {
		return i
	}
	return -1
}

// restate empties s for keyframe e, with room for the nodes it restates
// (its Seq, when the writer said). reuse puts them where s's nodes were:
// only for a state that no copy shares, such as a fold's own.
func (s *State) restate(e Event, reuse bool) {
	nodes, index := s.nodes[:0], s.index
	*s = State{Lock: s.Lock, Time: e.Time}
	if reuse {
		clear(index)
		s.nodes, s.index = nodes, index
	}
	if e.Seq > 0 {
		s.reserve(int(e.Seq))
	}
}

// reserve makes room for n nodes at once: a queue of 100,000 restated
// node by node grew the list a quarter at a time, about five times the
// list's size allocated, and the index likewise.
func (s *State) reserve(n int) {
	if n > cap(s.nodes) {
		s.nodes = slices.Grow(s.nodes, n-len(s.nodes))
	}
	if s.index == nil {
		s.index = make(map[string]int, n)
		for i, n := range s.nodes {
			s.index[n.Name] = i
		}
	}
}

// Snapshot is the state as a lockqueue.Snapshot, as the live API would
// have shown it (less what the history does not keep: data past MaxData
// bytes, zxids, lease times), its holders stamped with HeldSince.
// Cluster is the cluster it was recorded on, UnknownCluster for a
// recording that does not say.
func (s *State) Snapshot() lockqueue.Snapshot {
	id := parseKey(s.Lock)
	snap := lockqueue.Snapshot{
		Path: id.Name, Recipe: s.Recipe, Connection: s.Connection, Exists: s.Exists,
		UpdatedAt: s.Time, Error: s.Error, Nodes: []lockqueue.Node{}, Alerts: slices.Clone(s.Alerts),
		WatchSource: "history", Cluster: ClusterOf(s.Lock),
		Leases: s.beside.Leases, LeasesInferred: s.beside.LeasesInferred, InvisibleChildWatches: s.beside.Invisible,
		AnonymousWaiters: s.beside.Anonymous, AnonymousSince: s.beside.AnonymousSince,
	}
	if snap.Alerts == nil {
		snap.Alerts = []lockqueue.Alert{}
	}
	snap.Service = id.WireService()
	for _, n := range s.nodes {
		node := lockqueue.Node{
			Name: n.Name, Seq: n.Seq, Mode: lockqueue.Mode(n.Mode), Recipe: s.Recipe, Holding: n.Holding,
			WaitsFor: n.WaitsFor, WaitsOn: lockqueue.WaitOn(n.WaitsOn), Watching: slices.Clone(n.Watching),
			Edge: lockqueue.Edge(n.Edge), Ctime: n.QueuedAt, CtimeAtMost: n.queuedAtMost, Foreign: n.Foreign, Zombie: n.Zombie,
			Data: n.Data, DataBinary: n.DataBinary,
		}
		m := n.more()
		rare := lockqueue.Rare{
			PartOf: m.PartOf, Folder: m.Folder, WaitsForSource: lockqueue.Provenance(m.Source), BlockedBy: slices.Clone(m.BlockedBy),
			Label: m.Label, LeaseID: m.Lease,
		}
		if n.Holding {
			// When the recorder saw it begin to hold (or first saw it
			// holding), so the page times a replayed holder as it does
			// a live one, by the snapshot.
			rare.HeldSince = n.AcquiredAt
			if n.acquiredUnseen {
				// First seen holding: its clock is the live one's.
				rare.HeldSince, rare.HeldBound = lockqueue.UnseenHold(&node, n.AcquiredAt)
			}
		}
		if id.Service == lockqueue.ZooKeeper {
			node.Session = n.Client
		} else {
			rare.Client = n.Client
		}
		node.SetRare(rare)
		snap.Nodes = append(snap.Nodes, node)
	}
	lockqueue.SortGroups(snap.Nodes)
	lockqueue.StampWatches(&snap)
	lockqueue.StampParent(&snap)
	return snap
}

// UnknownCluster names the cluster of a lock recorded without one: by a
// zklockviz that did not yet tell clusters apart. Such a recording may be
// of any cluster, so it is never answered as a known cluster's.
const UnknownCluster = "unknown"

// clusterSep ends the cluster part of a history key. It is a control
// character, so no lock key of a recording made before clusters were
// recorded (a znode path, "service:name") starts with a cluster part.
const clusterSep = "\x1f"

// Key is the key a lock's history is kept under: the cluster, then the
// lock's Snapshot.Key. The same path on two clusters is two histories.
// An empty cluster or UnknownCluster is the key of a recording made
// before clusters were recorded.
func Key(cluster, lock string) string {
	if cluster == "" || cluster == UnknownCluster {
		return lock
	}
	return cluster + clusterSep + lock
}

// KeyOf is the key snap's lock is recorded under.
func KeyOf(snap lockqueue.Snapshot) string { return Key(snap.Cluster, snap.Key()) }

// ClusterOf is the cluster of a history key, UnknownCluster when it
// names none.
func ClusterOf(key string) string {
	if c, _, ok := strings.Cut(key, clusterSep); ok {
		return c
	}
	return UnknownCluster
}

// parseKey turns a history key back into the lock's identity: after the
// cluster, a ZooKeeper path starts with '/', another service's key is
// "service:name".
func parseKey(key string) lockqueue.LockID {
	if _, k, ok := strings.Cut(key, clusterSep); ok {
		key = k
	}
	if svc, name, ok := strings.Cut(key, ":"); ok && !strings.HasPrefix(key, "/") {
		return lockqueue.LockID{Service: svc, Name: name}
	}
	return lockqueue.LockID{Service: lockqueue.ZooKeeper, Name: key}
}

// Apply is the state after evs, the lock's events recorded after s, in
// order, as At would rebuild it at the last one's time: a reader walking a
// window change by change (an incident export) follows the events instead
// of replaying a segment from its keyframe at every change. s is left as
// it was.
func (s State) Apply(evs []Event) State {
	s.nodes, s.Alerts, s.index = slices.Clone(s.nodes), slices.Clone(s.Alerts), nil
	for _, e := range evs {
		s.apply(e)
	}
	return s
}

// apply changes the state by one event.
func (s *State) apply(e Event) {
	if e.Time.After(s.Time) {
		s.Time = e.Time
	}
	switch e.Kind {
	case keyframe:
		s.restate(e, false)
	case AlertRaised:
		s.Alerts = append(s.Alerts, lockqueue.Alert{Kind: e.Alert, Nodes: e.Nodes, Message: e.Message, Since: e.Since})
	case AlertCleared:
		k := alertKey(lockqueue.Alert{Kind: e.Alert, Nodes: e.Nodes})
		s.Alerts = slices.DeleteFunc(s.Alerts, func(a lockqueue.Alert) bool { return alertKey(a) == k })
	case Connection:
		s.Connection, s.Error = lockqueue.Connection(e.Connection), e.Message
		s.seenLive = s.seenLive || s.Live()
	case Exists:
		s.Exists = e.Value == "yes"
	case Recipe:
		s.Recipe = lockqueue.Recipe(e.Value)
	case Leases:
		s.beside.Leases, s.beside.LeasesInferred = int(e.Seq), e.Value == "inferred"
	case Invisible:
		s.beside.Invisible = int(e.Seq)
	case Anonymous:
		s.beside.Anonymous, s.beside.AnonymousSince = int(e.Seq), e.Since
	case Gap:
		// What follows a gap is not known to be live until a reader says.
		s.Connection = ""
	case Queued:
		if e.Node == "" || s.node(e.Node) < 0 {
			n := nodeState{
				Name: e.Node, Mode: e.Mode, Client: e.Client, Seq: e.Seq, Foreign: e.Foreign,
				QueuedAt: e.Since, Data: e.Data, DataBinary: e.DataBinary, queuedAtMost: e.Value == queuedAtMost,
			}
			if e.PartOf != "" || e.Folder != "" || e.Label != "" || e.Lease != "" {
				n.rare = &rareState{PartOf: e.PartOf, Folder: e.Folder, Label: e.Label, Lease: e.Lease}
			}
			if len(s.nodes) == cap(s.nodes) {
				// Doubled, not the quarter append grows a long list
				// by: a restatement of 100,000 nodes that did not say
				// how many (a first sight's) allocated five times the
				// list, and copied as much.
				s.nodes = slices.Grow(s.nodes, max(len(s.nodes), 8))
			}
			s.nodes = append(s.nodes, n)
			if s.index != nil {
				s.index[e.Node] = len(s.nodes) - 1
			}
		}
	default:
		if e.Node != "" {
			if i := s.node(e.Node); i >= 0 {
				s.applyNode(i, e)
			}
		}
	}
}

// applyNode applies e, an event of a node already in the queue, to the
// node at i.
func (s *State) applyNode(i int, e Event) {
	n := &s.nodes[i]
	switch e.Kind {
	case Acquired:
		n.Holding, n.AcquiredAt, n.acquiredUnseen = true, e.Time, !e.SeenAcquired()
		if e.Synthetic && !e.Acquired.IsZero() {
			n.AcquiredAt = e.Acquired
		}
	case Unheld:
		// Still queued, it waits anew: its next wait counts from now,
		// not from when the node first queued (a PostgreSQL backend or
		// an etcd session's key that let go and asked again between two
		// reads would otherwise be told to have waited since its first).
		n.Holding, n.AcquiredAt, n.QueuedAt = false, time.Time{}, e.Time
	case Left:
		s.nodes = slices.Delete(s.nodes, i, i+1)
		if s.index != nil {
			// The nodes after it moved up by one: updated in place, as
			// building the index again cost a map of every node for each
			// node that leaves.
			delete(s.index, e.Node)
			for j := i; j < len(s.nodes); j++ {
				s.index[s.nodes[j].Name] = j
			}
		}
	case WaitsFor:
		n.WaitsFor, n.WaitsOn = e.To, e.Value
		r := *n.more()
		r.Source, r.BlockedBy = e.Source, e.Nodes
		n.setRare(r)
	case Who:
		n.Data, n.DataBinary = e.Data, e.DataBinary
		r := *n.more()
		r.Label, r.Lease, r.PartOf = e.Label, e.Lease, e.PartOf
		n.setRare(r)
	case Watch:
		n.Edge, n.Watching = e.Edge, e.Nodes
		if e.Value == watchesNone {
			n.Watching = []string{}
		}
	case Zombie:
		n.Zombie = e.Value == "zombie"
	}
}

// alertKey identifies an alert across snapshots: its kind and nodes. The
// message is left out because some messages count down (a zombie's
// "expires in 3s").
func alertKey(a lockqueue.Alert) string {
	return a.Kind + "\x00" + strings.Join(a.Nodes, "\x00")
}

// clientOf is who a node belongs to in its service's terms.
func clientOf(n *lockqueue.Node) string {
	if n.Client() != "" {
		return n.Client()
	}
	return n.Session
}

// diff calls emit with each event that turns prev into snap, at time t,
// in order; nodes that went come first, so a hand-off reads as released,
// then acquired. The events are told as they are found, not gathered: a
// big queue restated is three events a node, 300,000 for 100,000 nodes,
// which as one list was the recorder's largest allocation.
//
// emit may apply each event to prev before it returns (the store does, so
// that no second copy of the state is needed), or never do: what diff
// needs of prev as it was (whether it was live, its alerts, whether any
// watch was known) is read before the first event, and a node's state is
// read when its own events are found, before they are told.
func diff(prev *State, snap lockqueue.Snapshot, t time.Time, emit func(Event)) {
	live, slack := prev.Live(), leaseSlackOf(prev.Lock)
	prevAlerts := slices.Clone(prev.Alerts)
	// The watch table's first read of the lock (no node's watches known
	// yet, as when the reader has only listed the queue): a watch as the
	// recipe says is a restatement, like a keyframe's, not a change seen
	// happen. A finding (a watch missing, unexpected, dangling) is one.
	firstWatches := !slices.ContainsFunc(prev.nodes, watchesKnown)
	// Which of prev's nodes snap still has, by prev's own index: a map of
	// snap's names, made for each snapshot, was the recorder's largest
	// allocation on a big queue, where a change is one node.
	kept := make([]bool, len(prev.nodes))
	for i := range snap.Nodes {
		if j := prev.node(snap.Nodes[i].Name); j >= 0 {
			kept[j] = true
		}
	}
	if prev.Connection != snap.Connection || prev.Error != snap.Error {
		emit(Event{Time: t, Kind: Connection, Connection: string(snap.Connection), Message: snap.Error})
	}
	if prev.Exists != snap.Exists {
		emit(Event{Time: t, Kind: Exists, Value: yesNo(snap.Exists)})
	}
	if prev.Recipe != snap.Recipe {
		emit(Event{Time: t, Kind: Recipe, Value: string(snap.Recipe)})
	}
	besideChanges(prev.beside, besideOf(&snap), t, emit)
	// gone counts the nodes that left and were taken out of prev.nodes by
	// emit: the node that was at i is at i-gone.
	gone := 0
	for i := range kept {
		if kept[i] {
			continue
		}
		p := prev.nodes[i-gone]
		before := len(prev.nodes)
		emit(Event{Time: t, Kind: Left, Node: p.Name, How: howLeft(live, p, t, slack), Since: p.QueuedAt, Acquired: p.AcquiredAt})
		if len(prev.nodes) < before {
			gone++
		}
	}
	for ni := range snap.Nodes {
		n := &snap.Nodes[ni]
		i := prev.node(n.Name)
		var p nodeState
		if i < 0 {
			ev := queuedEvent(n, t)
			emit(ev)
			p = nodeState{QueuedAt: ev.Since}
		} else {
			p = prev.nodes[i]
		}
		nodeChanges(&p, n, t, firstWatches && i >= 0 && asRecipeSays(n.Edge), emit)
	}
	alertChanges(prevAlerts, snap.Alerts, t, emit)
}

// queuedEvent is the Queued event of n, first seen at t: when it queued
// is its creation, else t, which it was created at or before.
func queuedEvent(n *lockqueue.Node, t time.Time) Event {
	q, atMost := n.Ctime, n.CtimeAtMost
	if q.IsZero() || q.After(t) {
		q, atMost = t, true
	}
	data, binary := boundData(n.Data, n.DataBinary)
	ev := Event{
		Time: t, Kind: Queued, Node: n.Name, Mode: string(n.Mode), Client: clientOf(n), Seq: n.Seq,
		Foreign: n.Foreign, PartOf: n.PartOf(), Folder: n.Folder(), Since: q,
		Data: data, DataBinary: binary, Label: n.Label(), Lease: n.LeaseID(),
	}
	if atMost {
		ev.Value = queuedAtMost
	}
	return ev
}

// alertChanges calls emit with the events that turn the alerts prevAlerts
// into alerts, at t.
func alertChanges(prevAlerts, alerts []lockqueue.Alert, t time.Time, emit func(Event)) {
	prevKeys := make(map[string]bool, len(prevAlerts))
	for _, a := range prevAlerts {
		prevKeys[alertKey(a)] = true
	}
	now := make(map[string]bool, len(alerts))
	for _, a := range alerts {
		k := alertKey(a)
		now[k] = true
		if !prevKeys[k] {
			emit(Event{Time: t, Kind: AlertRaised, Alert: a.Kind, Nodes: a.Nodes, Message: a.Message, Since: a.Since})
		}
	}
	for _, a := range prevAlerts {
		if !now[alertKey(a)] {
			emit(Event{Time: t, Kind: AlertCleared, Alert: a.Kind, Nodes: a.Nodes, Message: a.Message})
		}
	}
}

// watchesNone is a Watch event's Value when its node's session is known
// to watch nothing (a holder's, as a rule): its Nodes are empty either way.
const watchesNone = "none"

// watchEvent is e made the Watch event of a node's edge and the paths its
// session watches (nil when unknown).
func watchEvent(e Event, edge string, watching []string) Event {
	e.Kind, e.Edge, e.Nodes = Watch, edge, watching
	if watching != nil && len(watching) == 0 {
		e.Value = watchesNone
	}
	return e
}

// watchesKnown reports whether what n's session watches is known.
func watchesKnown(n nodeState) bool {
	return n.Watching != nil || (n.Edge != string(lockqueue.EdgeNone) && n.Edge != string(lockqueue.EdgeUnknown))
}

// asRecipeSays reports whether e is no finding: the watch the recipe
// says, or nothing known of it.
func asRecipeSays(e lockqueue.Edge) bool {
	switch e {
	case lockqueue.EdgeMissing, lockqueue.EdgeUnexpected, lockqueue.EdgeDangling:
		return false
	}
	return true
}

// MaxData is how much of a node's data the history keeps: enough for the
// name, host or id a lock client writes there, not a whole payload. It is
// a quarter of lockqueue.MaxData, what a live snapshot carries (and so the
// most the history could keep), because the history keeps the data of every
// node ever queued, on disk and in its cache, where a snapshot holds only
// the nodes queued now.
const MaxData = lockqueue.MaxData / 4

// boundData is a node's data as recorded: its first MaxData bytes, text
// cut at a character's start, binary (base64, as the live API has it)
// decoded, cut and encoded again.
func boundData(data string, binary bool) (string, bool) {
	if !binary {
		if len(data) <= MaxData {
			return data, false
		}
		cut := MaxData
		for cut > 0 && !utf8.RuneStart(data[cut]) {
			cut--
		}
		return data[:cut], false
	}
	if base64.StdEncoding.DecodedLen(len(data)) <= MaxData {
		return data, binary
	}
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return "", false
	}
	return base64.StdEncoding.EncodeToString(raw[:min(len(raw), MaxData)]), true
}

// nodeChanges calls emit with each event that turns node state p into n.
// p is the caller's copy, so emit may apply the events to the state it
// was copied from. restateWatch: a change of the node's watch is a
// restatement (see diff).
func nodeChanges(p *nodeState, n *lockqueue.Node, t time.Time, restateWatch bool, emit func(Event)) {
	switch {
	case n.Holding && !p.Holding:
		emit(Event{Time: t, Kind: Acquired, Node: n.Name, Since: p.QueuedAt})
	case !n.Holding && p.Holding:
		emit(Event{Time: t, Kind: Unheld, Node: n.Name})
	}
	if n.WaitsFor != p.WaitsFor || string(n.WaitsForSource()) != p.more().Source || string(n.WaitsOn) != p.WaitsOn || !slices.Equal(n.BlockedBy(), p.more().BlockedBy) {
		emit(Event{Time: t, Kind: WaitsFor, Node: n.Name, To: n.WaitsFor, Source: string(n.WaitsForSource()), Value: string(n.WaitsOn), Nodes: n.BlockedBy()})
	}
	if string(n.Edge) != p.Edge || !slices.Equal(n.Watching, p.Watching) || (n.Watching == nil) != (p.Watching == nil) {
		emit(watchEvent(Event{Time: t, Node: n.Name, Synthetic: restateWatch}, string(n.Edge), n.Watching))
	}
	if whoChanged(p, n) {
		data, binary := boundData(n.Data, n.DataBinary)
		emit(Event{Time: t, Kind: Who, Node: n.Name, Data: data, DataBinary: binary, Label: n.Label(), Lease: n.LeaseID(), PartOf: n.PartOf()})
	}
	if n.Zombie != p.Zombie {
		v := "alive"
		if n.Zombie {
			v = "zombie"
		}
		emit(Event{Time: t, Kind: Zombie, Node: n.Name, Value: v})
	}
}

// whoChanged reports whether who node n is, as people know it, changed
// since p: its label (the words the views show in place of its data), its
// lease, or whose contender it also is (PartOf: a semaphore's lock node
// once its acquirer has made its lease node). Its data is not watched: where a service's reader writes it,
// it carries clocks that change at every read (a PostgreSQL session's
// query times, a Redlock token's time left on each master), which are no
// change of who it is, and a lock client's own data does not change.
func whoChanged(p *nodeState, n *lockqueue.Node) bool {
	if n.Rare == nil && p.rare == nil {
		return false // most nodes of a big queue: no label, lease or partOf
	}
	m := p.more()
	return n.Label() != m.Label || n.LeaseID() != m.Lease || n.PartOf() != m.PartOf
}

// leaseSlack: a node whose lease was due to run out within this of when it
// went is taken to have expired: etcd's reader reads a lease's time left
// once per poll, in whole seconds, so the snapshot that last told it may
// put the lease's end up to a second late.
const leaseSlack = time.Second

// pttlSlack is leaseSlack for a Redis key: its reader reads the key's
// PTTL, in milliseconds, with every snapshot, so its end is known to a
// read's round trip. A second of slack took a key released with up to a
// second of its TTL left for one that expired (the lab's word check saw
// clean releases of a 3 s key recorded as expired).
const pttlSlack = 100 * time.Millisecond

// leaseSlackOf is the slack of the leases of the lock kept under key.
func leaseSlackOf(key string) time.Duration {
	if parseKey(key).Service == "redis" {
		return pttlSlack
	}
	return leaseSlack
}

// howLeft decides from what the last snapshot showed how a node went at t;
// live: the last snapshot was live; slack: leaseSlackOf the lock.
func howLeft(live bool, n nodeState, t time.Time, slack time.Duration) How {
	switch {
	case !live:
		return Unseen
	case n.Zombie:
		return Expired
	case !n.more().leaseEnds.IsZero() && !t.Before(n.more().leaseEnds.Add(-slack)):
		return Expired
	case n.Holding:
		return Released
	case n.Foreign || n.more().PartOf != "":
		return Removed
	}
	return GaveUp
}

// noteLeases keeps when each node's lease runs out, by snap taken at t.
func (s *State) noteLeases(snap lockqueue.Snapshot, t time.Time) {
	if !snap.Live() {
		return // a last known lease, not a new reading of it
	}
	for ni := range snap.Nodes {
		n := &snap.Nodes[ni]
		if n.LeaseLeftMs() <= 0 {
			continue
		}
		if i := s.node(n.Name); i >= 0 {
			ends := t.Add(time.Duration(n.LeaseLeftMs()) * time.Millisecond)
			r := *s.nodes[i].more()
			r.leaseEnds = ends
			s.nodes[i].setRare(r)
		}
	}
}

// changes calls emit with each event snap, taken at t, records of its
// lock, whose state is st (nil when the lock is new), in order, as diff
// finds them: emit may apply each to st before it returns (see diff). The
// first snapshot of a lock is a keyframe: what was there before the
// recorder saw it is not a change it saw happen.
func changes(st *State, snap lockqueue.Snapshot, t time.Time, emit func(Event)) {
	if st == nil {
		emit(Event{Time: t, Kind: keyframe, Synthetic: true, Seq: int64(len(snap.Nodes))})
		diff(&State{}, snap, t, func(e Event) { emit(restated(e)) })
		return
	}
	if !snap.Live() {
		unseen(st, snap, t, emit)
		return
	}
	if !st.seenLive && len(st.nodes) == 0 {
		firstSight(st, snap, t, emit)
		return
	}
	// Live again after a gap: st is still the last state seen live, so
	// what changed while the reader could not see is told against it
	// (a node gone meanwhile leaves Unseen, see howLeft).
	if st.Live() {
		diff(st, snap, t, emit)
		return
	}
	diff(st, snap, t, func(e Event) {
		// Acquired during a gap: when exactly is not known, so the wait
		// is not measured.
		if e.Kind == Acquired {
			e.Value = "after-gap"
		}
		emit(e)
	})
}

// restated is e as a restatement of what was there before the recorder
// saw it, as a keyframe's events are.
func restated(e Event) Event {
	e.Synthetic = true
	if e.Kind == Acquired {
		e.Value = "after-gap" // held before the recorder saw it
	}
	return e
}

// firstSight tells what the first live snapshot of a lock records when all
// the history had of it was a sight that was not live and showed nothing
// (a reader that published the lock before it could read it): the queue
// it shows was there before the recorder saw it, so, as in a keyframe,
// its nodes are restated (Synthetic), not queued, acquired and edged one
// by one: a queue of 100,000 is not 300,000 changes. The reader coming
// back, the lock's existence, recipe and alerts are changes: the gap ends
// there.
func firstSight(st *State, snap lockqueue.Snapshot, t time.Time, emit func(Event)) {
	diff(st, snap, t, func(e Event) {
		switch e.Kind {
		case Connection, Exists, Recipe, Leases, Invisible, Anonymous, AlertRaised, AlertCleared:
			emit(e)
		default:
			emit(restated(e))
		}
	})
}

// unseen tells what a snapshot that is not live records: only that the
// reader's view changed (the gap, or why it goes on). Its nodes, existence
// and alerts are the reader's last known state or nothing it could read,
// so nothing left, expired, acquired or cleared by it: that is for the
// first live snapshot after the gap to tell.
func unseen(st *State, snap lockqueue.Snapshot, t time.Time, emit func(Event)) {
	if st.Connection == snap.Connection && st.Error == snap.Error {
		return
	}
	emit(Event{Time: t, Kind: Connection, Connection: string(snap.Connection), Message: snap.Error})
}

// changed is evs less the keyframe's restatements: what Record returns.
func changed(evs []Event) []Event {
	return slices.DeleteFunc(evs, func(e Event) bool { return e.Synthetic })
}

// keyframeEvents restates s as events at time t.
func keyframeEvents(s *State, t time.Time) []Event {
	var out []Event
	eachKeyframeEvent(s, t, func(e Event) { out = append(out, e) })
	return out
}

// eachKeyframeEvent calls fn with each event restating s at time t, in
// order, without collecting them: a keyframe of a queue of 100,000 nodes
// is 300,000 events, which a new segment writes one by one.
func eachKeyframeEvent(s *State, t time.Time, fn func(Event)) {
	emit := func(e Event) {
		e.Time, e.Synthetic = t, true
		fn(e)
	}
	// A keyframe's Seq is how many nodes it restates, so that a replay
	// makes room for them at once.
	emit(Event{Kind: keyframe, Seq: int64(len(s.nodes))})
	if s.Connection != "" || s.Error != "" {
		emit(Event{Kind: Connection, Connection: string(s.Connection), Message: s.Error})
	}
	if s.Exists {
		emit(Event{Kind: Exists, Value: "yes"})
	}
	if s.Recipe != "" {
		emit(Event{Kind: Recipe, Value: string(s.Recipe)})
	}
	besideChanges(besideFigures{}, s.beside, t, emit)
	for _, n := range s.nodes {
		m := n.more()
		ev := Event{Kind: Queued, Node: n.Name, Mode: n.Mode, Client: n.Client, Seq: n.Seq, Foreign: n.Foreign,
			PartOf: m.PartOf, Folder: m.Folder, Since: n.QueuedAt, Data: n.Data, DataBinary: n.DataBinary, Label: m.Label, Lease: m.Lease}
		if n.queuedAtMost {
			ev.Value = queuedAtMost
		}
		emit(ev)
		if n.Holding {
			ev := Event{Kind: Acquired, Node: n.Name, Since: n.QueuedAt, Acquired: n.AcquiredAt}
			if n.acquiredUnseen {
				ev.Value = "after-gap"
			}
			emit(ev)
		}
		if n.WaitsFor != "" || m.Source != "" || n.WaitsOn != "" || len(m.BlockedBy) > 0 {
			emit(Event{Kind: WaitsFor, Node: n.Name, To: n.WaitsFor, Source: m.Source, Value: n.WaitsOn, Nodes: m.BlockedBy})
		}
		if n.Edge != "" || n.Watching != nil {
			emit(watchEvent(Event{Node: n.Name}, n.Edge, n.Watching))
		}
		if n.Zombie {
			emit(Event{Kind: Zombie, Node: n.Name, Value: "zombie"})
		}
	}
	for _, a := range s.Alerts {
		emit(Event{Kind: AlertRaised, Alert: a.Kind, Nodes: a.Nodes, Message: a.Message, Since: a.Since})
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

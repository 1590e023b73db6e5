// Package lockqueue is the lock-queue model: pure functions from a lock parent's
// children (name, Stat, data) and the server's watch table to a Snapshot. It is
// the one place that knows each recipe's rules; the watcher, the simulator and
// the views all go through it. It imports nothing outside the standard library.
package lockqueue

import "time"

// Mode is what a queue node asks for.
type Mode string

const (
	Read      Mode = "read"
	Write     Mode = "write"
	Exclusive Mode = "exclusive"
	Lease     Mode = "lease"
	Unknown   Mode = "unknown"
)

// Recipe names the client library convention that made a node or a queue.
type Recipe string

const (
	Curator         Recipe = "curator"
	Kazoo           Recipe = "kazoo"
	GoZookeeper     Recipe = "go-zookeeper"
	ZookeeperRecipe Recipe = "zookeeper-recipe"
	SeedRW          Recipe = "seed-rw"
	Generic         Recipe = "generic"
	Mixed           Recipe = "mixed"
	// NoRecipe is a folder with no recognisable lock children (empty, or foreign only).
	NoRecipe Recipe = ""
)

// Connection is the watcher's ZooKeeper connection state. Anything but
// Connected means the snapshot is not live.
type Connection string

const (
	Connected    Connection = "connected"
	Reconnecting Connection = "reconnecting"
	Expired      Connection = "expired"
)

// Edge classifies what a waiter actually watches against what its recipe says.
type Edge string

const (
	EdgeNone       Edge = ""
	EdgeConfirmed  Edge = "confirmed"
	EdgeMissing    Edge = "missing"
	EdgeUnexpected Edge = "unexpected"
	EdgeDangling   Edge = "dangling"
	EdgeUnknown    Edge = "unknown"  // the server tells nothing (children watches, no 4lw/admin)
	EdgeChildWatch Edge = "children" // the rule is a children watch on the parent, which the server never lists
	// EdgeStalled is a watch's kind alone (Watch), never a node's: a
	// stalled holder's watch on the node its client still waits for.
	EdgeStalled Edge = "stalled"
)

// Watch is one watch of a node on its lock as the lane draws it: on the
// node named To, or on the parent's children when To is empty, and what
// that watch is (EdgeConfirmed, EdgeUnexpected, EdgeDangling, EdgeStalled,
// EdgeChildWatch, or EdgeUnknown when the watch's owner among a session's
// nodes is not known yet).
type Watch struct {
	To   string `json:"to,omitempty"`
	Kind Edge   `json:"kind"`
	// Cycle: the watch is a wait of the lock's deadlock cycle, on the
	// next node of it (markCycle); a cycle node's other watches are what
	// they are.
	Cycle bool `json:"cycle,omitempty"`
}

// Bound says how a clock's start bounds what it times.
type Bound string

const (
	// HeldAtMost: the hold began at or after HeldSince ("holds ≤").
	HeldAtMost Bound = "atMost"
	// HeldAtLeast: the hold began at or before HeldSince ("holds ≥").
	HeldAtLeast Bound = "atLeast"
)

// WaitOn is what a waiter's rule watches when it is not one sibling node.
type WaitOn string

const (
	// OnNode: the rule watches the sibling named in WaitsFor.
	OnNode WaitOn = ""
	// OnChildren: the rule is a children watch on the lock parent (herd
	// waiters, semaphore and N-holder standbys), which the server never lists.
	OnChildren WaitOn = "children"
)

// Alert kinds.
const (
	AlertDeadlock    = "deadlock"
	AlertZombie      = "zombie"
	AlertForeign     = "foreign-child"
	AlertPersistent  = "persistent-node"
	AlertSeqWrap     = "seq-wrap"
	AlertMixed       = "mixed"
	AlertNotALock    = "not-a-lock"
	AlertOverLeases  = "over-leases"
	AlertOrphan      = "orphan"
	AlertNoParent    = "no-parent"
	AlertDisconnect  = "disconnected"
	AlertWatchSource = "watch-source"
	// AlertStalled: a node holds by its recipe's rule, but its session
	// still watches another node of the queue: its client missed the
	// wake-up and does not know it holds.
	AlertStalled = "stalled-holder"
)

// Child is one child znode of a lock parent as read from ZooKeeper.
type Child struct {
	Name           string
	Data           []byte
	Czxid          int64
	Ctime          time.Time
	EphemeralOwner int64 // 0: persistent node

	// Folder is the folder the child lives in when that is not the lock
	// path itself: a semaphore keeps its state in more than one folder
	// (see SemaphoreFolders). Empty for the lock path's own children.
	Folder string
}

//go:generate go run ./internal/fieldgen

// Node is one queue entry as shown to users and scripts.
//
// Node, Rare and Snapshot are the one list of a lock's fields: what
// follows from them is generated (fields_gen.go: equality, Rare's
// accessors) or walks them (the socket's deltas and the browser, by their
// JSON). Adding a field is this one edit, plus how it is shown. Each field
// says by its tags
//
//   - json: how scripts and the browser read it;
//   - eq:"-": left out of NodesEqual (it follows from fields compared);
//   - history: what the history keeps of it: "kept" (a lock at a past
//     moment shows it as recorded), "client" (kept as the node's client:
//     ZooKeeper's Session, the other services' Client) or "-" (not kept,
//     or stamped by the history itself, as HeldSince).
//
// history's TestRecordsFieldsAsTagged holds the history to those tags and
// web's TestEveryFieldReachesTheBrowser every field to equality and the
// socket's frames.
type Node struct {
	Name    string `json:"name" history:"kept"`
	Seq     int64  `json:"seq" history:"kept"` // -1 when the name carries no sequence
	Mode    Mode   `json:"mode" history:"kept"`
	Recipe  Recipe `json:"recipe" history:"-"`
	Holding bool   `json:"holding" history:"kept"`
	// The unexported fields that fit in Holding's padding: where they
	// stand never shows in the JSON, and a node is copied whole on every
	// change of a queue.

	// parsed is Mode as the name alone says it, before Build's rules
	// (N-holder queues) change it: see parsedMode.
	parsed modeCode `eq:"-" history:"-"`
	// wrapped: the name carries a sequence past 2^31 (negative).
	wrapped bool `eq:"-" history:"-"`
	// unread: made by NamedNode from a listing alone; its data, Stat and
	// session are not read yet.
	unread     bool      `eq:"-" history:"-"`
	WaitsFor   string    `json:"waitsFor" history:"kept"`          // sibling name the recipe says it waits for
	WaitsOn    WaitOn    `json:"waitsOn,omitempty" history:"kept"` // OnChildren when the rule is a children watch on the parent
	Watching   []string  `json:"watching" history:"kept"`          // full paths its session watches; nil when unknown
	Edge       Edge      `json:"edge" history:"kept"`
	Session    string    `json:"session" history:"client"` // 0x<hex>, "0x0" for persistent nodes
	Data       string    `json:"data" history:"kept"`
	DataBinary bool      `json:"dataBinary,omitempty" history:"kept"` // Data is base64
	Ctime      time.Time `json:"ctime" history:"kept"`
	Czxid      int64     `json:"czxid" history:"-"`
	Foreign    bool      `json:"foreign,omitempty" history:"kept"`
	Zombie     bool      `json:"zombie,omitempty" history:"kept"`
	// CtimeAtMost: the service keeps no creation time and the node was
	// there before the reader looked, so Ctime is when the reader first
	// knew of it: it was made then or earlier, and a wait timed from
	// Ctime is at least that long.
	CtimeAtMost bool `json:"ctimeAtMost,omitempty" history:"kept"`
	// The fields most nodes leave empty, behind a pointer so that a node
	// of a big queue costs half: see Rare. Embedded so that the JSON is
	// the same as when they were Node's own, and last to keep its order.
	*Rare

	owner int64 `history:"-"`
}

// Rare holds the fields most nodes leave empty: a ZooKeeper node of a
// big queue sets none of them, while a node is copied whole at every
// change of its queue. Node embeds it by pointer, nil when every field is
// zero, for the JSON only: read them with Node's methods of the same
// names (a nil Rare reads as zero) and write them with its Set methods,
// which copy it first, since nodes copied from one another share it.
type Rare struct {
	// ExpiresInMs is set on zombie nodes when the server tells the session's expiry.
	ExpiresInMs int64 `json:"expiresInMs,omitempty" history:"-"`
	// StalledOn is set on a holder whose session has kept a data watch on
	// this sibling for longer than the stall grace: the server says it
	// holds, its client still waits (see AlertStalled).
	StalledOn string `json:"stalledOn,omitempty" history:"-"`
	// StalledSince is when the stall was first seen.
	StalledSince time.Time `json:"stalledSince,omitzero" history:"-"`
	// HeldSince is when a holder began to hold, as the reader saw it: the
	// read that first showed it holding, which followed the hand-off
	// within one read. Zero when the reader cannot tell: the node already
	// held at its first read (or its first read after a gap), when only
	// Ctime bounds it. Set by CarryHolds; a replay (history.State.Snapshot)
	// and the classroom (simulator.State) stamp their own.
	HeldSince time.Time `json:"heldSince,omitzero" history:"-"`
	// HeldBound says what HeldSince is when no one saw the hold begin:
	// HeldAtMost, the node's creation, which it held at most since (it
	// already held at the reader's first read, or first read after a
	// gap); HeldAtLeast, when it was first seen holding, its creation
	// unknown. Empty when HeldSince is the hand-off itself.
	HeldBound Bound `json:"heldBound,omitempty" history:"-"`
	// WaitSince is when a node that does not hold began to wait, where
	// its source knows that better than Ctime: a classroom run stamps its
	// client's join on the run's clock (simulator.runClocks), as it
	// stamps HeldSince, so every part of the page times a step as the
	// run does. Zero everywhere else: a waiter waits from Ctime.
	WaitSince time.Time `json:"waitSince,omitzero" history:"-"`

	// Folder is the folder the node lives in when it is not the lock
	// path (a semaphore's leases/ and locks/, kazoo's <path>-__lock__);
	// empty for the lock path's own children.
	Folder string `json:"folder,omitempty" history:"kept"`
	// PartOf names the node whose contender this node also is, when one
	// acquirer owns two nodes of the queue: a semaphore's acquirer holds
	// the internal lock by its node in the lock folder while it waits for
	// (or has just got) a lease by its lease node, named here. Such a node
	// is shown, but neither holds nor waits of its own: counts of waiters
	// are counts of contenders.
	PartOf string `json:"partOf,omitempty" history:"kept"`

	// The service-neutral fields (service.go). ZooKeeper leaves them
	// empty: its order is Seq, its client Session, its actual edges
	// Watching and Edge.

	// Order is the node's place by the service's own ordering when that
	// is not Seq (etcd: the key's create revision).
	Order int64 `json:"order,omitempty" history:"-"`
	// Client is who the node belongs to in the service's terms (a Redis
	// lock's token, an etcd lease, a PostgreSQL backend pid).
	Client string `json:"client,omitempty" history:"client"`
	// Label is how people know the node's client when Data is the
	// service's raw record (a PostgreSQL session: "psql · 10.0.0.7 ·
	// idle in transaction"); the views show it in place of Data.
	Label string `json:"label,omitempty" history:"kept"`
	// WaitsForSource is who vouches for WaitsFor when the service says
	// (ByServer for PostgreSQL's pg_blocking_pids, ByRule for etcd).
	WaitsForSource Provenance `json:"waitsForSource,omitempty" history:"kept"`
	// BlockedBy are the nodes the server itself reports this one waits
	// on, when it can tell (PostgreSQL); nil when it cannot.
	BlockedBy []string `json:"blockedBy,omitempty" history:"kept"`
	// LeaseID is the lease that keeps the node alive, when the service
	// has leases (an etcd lease in hex, a Redis key's expiry).
	LeaseID string `json:"leaseId,omitempty" history:"kept"`
	// LeaseTTLMs is the lease's granted time to live; LeaseLeftMs its
	// time left when the snapshot was taken.
	LeaseTTLMs  int64 `json:"leaseTtlMs,omitempty" history:"-"`
	LeaseLeftMs int64 `json:"leaseLeftMs,omitempty" history:"-"`
	// ShownEdges is WaitEdges as sent to the browser, set by
	// Snapshot.WithWaitEdges on the nodes of a snapshot that uses the
	// neutral fields; nil everywhere else.
	ShownEdges []WaitEdge `json:"waitEdges,omitempty" history:"-"`
	// Watches are the node's watches on its lock, each with its kind,
	// set by the join (and again on a replay: StampWatches) when they are
	// anything but the one watch on WaitsFor that confirms the rule, which
	// a waiter of a big queue has: nil says "that one watch when Edge is
	// EdgeConfirmed, else none", so such a node keeps no Rare for it.
	Watches []Watch `json:"watches,omitempty" history:"-"`
	// Lane is what a lane writes under the node's shape: set on the
	// nodes a page is sent (views.StampLane), and following from the
	// fields compared.
	Lane *Lane `json:"lane,omitempty" eq:"-" history:"-"`
}

// Lane is what a lane writes under a node's shape, in the views' words
// (views.LaneOf), so that the browser draws it as it comes.
type Lane struct {
	// State is its state as a class and a data-state, as the table's
	// rows have it: holding, waiting, part (of another contender) or
	// foreign. Persistent: no session owns it (a badge says so).
	State      string `json:"state"`
	Persistent bool   `json:"persistent,omitempty"`
	// Lines are its short name; who it is or its data; its session's
	// tail or its client.
	Lines []string `json:"lines"`
	// Its clock: Verb ("holds", "waits ≥", "lease"), counted up from
	// Since or down to Until (ms since the epoch; Since 0 when unknown),
	// Left the time left when the snapshot was taken (a classroom step
	// holds its clocks there), Hint how sure it is, Expired what it says
	// at 0, Kind "lease" or "zombie" for a clock of those.
	Verb    string `json:"verb,omitempty"`
	Since   int64  `json:"since,omitempty"`
	Until   int64  `json:"until,omitempty"`
	Left    int64  `json:"left,omitempty"`
	Hint    string `json:"hint,omitempty"`
	Expired string `json:"expired,omitempty"`
	Kind    string `json:"kind,omitempty"`
}

// modeCode is a Mode in a byte, for the one a node's name says.
type modeCode uint8

var modes = [...]Mode{"", Read, Write, Exclusive, Lease, Unknown}

func codeOf(m Mode) modeCode {
	for i, c := range modes {
		if c == m {
			return modeCode(i)
		}
	}
	return modeCode(len(modes) - 1) // never: every mode is listed
}

// parsedMode is Mode as the node's name alone says it.
func (n *Node) parsedMode() Mode { return modes[n.parsed] }

// Unread reports whether the node was made from its name alone
// (NamedNode): its order and mode are known, its data, creation and
// session not yet.
func (n *Node) Unread() bool { return n.unread }

// Owner is the node's session id (ephemeralOwner).
func (n *Node) Owner() int64 { return n.owner }

// Alert is something a user should look at.
type Alert struct {
	Kind    string   `json:"kind"`
	Nodes   []string `json:"nodes"`
	Message string   `json:"message"`
	// Locks are the other locks the alert is about, when it spans several
	// (a deadlock through them); the views link each.
	Locks []LockID `json:"locks,omitempty"`
	// Since is when what the alert tells began, where that is not when
	// it was raised: a stalled holder's stall (StalledSince), kept by the
	// history so that a past moment draws the stall as the live page did.
	Since time.Time `json:"since,omitzero"`
}

// Snapshot is a whole, consistent view of one lock parent.
type Snapshot struct {
	// Service is the lock service the snapshot comes from; empty means
	// ZooKeeper (ServiceName), which keeps ZooKeeper's JSON as it was.
	Service               string     `json:"service,omitempty" history:"kept"`
	Path                  string     `json:"path" history:"kept"`
	Recipe                Recipe     `json:"recipe" history:"kept"`
	Revision              int64      `json:"revision" history:"-"`
	Connection            Connection `json:"connection" history:"kept"`
	WatchSource           string     `json:"watchSource" history:"-"` // "4lw", "admin", "none", "simulator"
	Exists                bool       `json:"exists" history:"kept"`
	Leases                int        `json:"leases,omitempty" history:"kept"` // lease limit; 0 unknown or not a semaphore
	Nodes                 []Node     `json:"nodes" history:"kept"`
	Alerts                []Alert    `json:"alerts" history:"kept"`
	InvisibleChildWatches int        `json:"invisibleChildWatches" history:"kept"`
	UpdatedAt             time.Time  `json:"updatedAt" history:"kept"`
	// Error is set when the last read failed; the nodes are then the last known ones.
	Error string `json:"error,omitempty" history:"kept"`
	// UnknownSince is when the reader stopped knowing the lock's state: the
	// first read that failed, or the connection lost, after the last live
	// read. Set on every snapshot that is not Live and shows the last known
	// state (see LastKnown); zero on a live one, and left out of the JSON.
	UnknownSince time.Time `json:"unknownSince,omitzero" history:"-"`

	// LeasesInferred: Leases was neither given (--leases) nor stored
	// (kazoo) but read off a Curator semaphore's layout, where a pending
	// acquirer waits because every other lease node is held.
	LeasesInferred bool `json:"leasesInferred,omitempty" history:"kept"`

	// Service-neutral, for services that cannot show everything (see
	// service.go). Note says plainly what this lock's service cannot
	// show ("spin-lock waiters leave no trace on the server").
	Note string `json:"note,omitempty" history:"-"`
	// AnonymousWaiters counts waiters the server counts but cannot name or
	// order, so they are no nodes (Redisson: the subscribers of the lock's
	// unlock channel, one per waiting client, not per thread).
	AnonymousWaiters int `json:"anonymousWaiters,omitempty" history:"kept"`
	// AnonymousSince is when the reader first saw AnonymousWaiters above
	// none, zero while there are none: the longest of them has waited
	// since then at least (it began between that read and the one
	// before).
	AnonymousSince time.Time `json:"anonymousSince,omitzero" history:"kept"`

	// Filling is set while the reader has the lock's children by name
	// (order, holders and waits-for by rule) but has not read every
	// node's data and session yet: a big queue is published from its
	// listing first, then filled in. Nil once every node is read.
	Filling *Filling `json:"filling,omitempty" history:"-"`

	// Cluster says which cluster of its service the lock lives on: etcd's
	// cluster id, PostgreSQL's system identifier (else host, port and
	// database), the Redis masters' addresses, ZooKeeper's members and
	// chroot, or the name serve --cluster gives. The history keeps the
	// same path on two clusters apart by it. Empty until known.
	Cluster string `json:"cluster,omitempty" history:"kept"`

	// Parent is what the lock parent's bar says beside the path, set by
	// StampParent where a snapshot is made to be shown (the hub's
	// publish, a replay, a classroom step): of the whole queue, so a
	// window of it says the same.
	Parent Parent `json:"parent,omitzero" history:"-"`
}

// Parent is what a lock's parent bar says of what its lane cannot show.
type Parent struct {
	// Is is one of the Parent* states; empty when there is nothing to say.
	Is string `json:"is,omitempty"`
	// N counts what Is says: children watches the server cannot list
	// (ParentInvisible), or waiters on the children (ParentLeases,
	// ParentHerd).
	N int `json:"n,omitempty"`
	// ChildWatchers counts the queue's waiters whose rule is a children
	// watch on the parent, whatever Is says: every change to the children
	// wakes each of them.
	ChildWatchers int `json:"childWatchers,omitempty"`
}

// The states of Parent.Is, in the order they are looked for.
const (
	// ParentUnknown: not live; the lane is the last state known.
	ParentUnknown = "unknown"
	// ParentMissing: the lock's parent does not exist.
	ParentMissing = "missing"
	// ParentInvisible: the server counts children watches on the parent
	// that it cannot list (InvisibleChildWatches).
	ParentInvisible = "invisible"
	// ParentLeases: a semaphore's standbys wait on its children for a
	// free lease; not a herd.
	ParentLeases = "leases"
	// ParentHerd: waiters watch all the children, each woken by every change.
	ParentHerd = "herd"
)

// Filling says how far a snapshot published from a listing has its nodes
// read: Read of Of nodes have their data, creation and session.
type Filling struct {
	Read int `json:"read"`
	Of   int `json:"of"`
}

// Live reports whether the snapshot reflects ZooKeeper now.
func (s Snapshot) Live() bool { return s.Connection == Connected && s.Error == "" }

// Holders returns the names of the holding nodes in queue order.
func (s Snapshot) Holders() []string {
	var out []string
	for ni := range s.Nodes {
		n := &s.Nodes[ni]
		if n.Holding {
			out = append(out, n.Name)
		}
	}
	return out
}

// Oldest returns the earliest creation time among the holders and among the
// waiters (zero when there are none): the start of the longest hold and of
// the longest wait. Foreign children neither hold nor wait. Waiters with
// no node wait since AnonymousSince at least.
func (s Snapshot) Oldest() (holder, waiter time.Time) {
	if s.AnonymousWaiters > 0 {
		waiter = s.AnonymousSince
	}
	for ni := range s.Nodes {
		n := &s.Nodes[ni]
		if n.Foreign || n.Ctime.IsZero() {
			continue
		}
		t := &waiter
		if n.Holding {
			t = &holder
		}
		if t.IsZero() || n.Ctime.Before(*t) {
			*t = n.Ctime
		}
	}
	return holder, waiter
}

// Waiters returns the names of the waiting nodes in queue order, one per
// waiting contender.
func (s Snapshot) Waiters() []string {
	var out []string
	for ni := range s.Nodes {
		n := &s.Nodes[ni]
		if n.Waiting() {
			out = append(out, n.Name)
		}
	}
	return out
}

// Waiting reports whether a node is a waiting contender of its own: not a
// holder, not a foreign child, not part of another node's contender.
func (n *Node) Waiting() bool {
	return !n.Holding && !n.Foreign && n.PartOf() == ""
}

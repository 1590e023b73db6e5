package lockqueue

import (
	"net/url"
	"slices"
)

// The service-neutral part of the model. A Snapshot was ZooKeeper's lock
// parent first; other lock services (Redis, etcd, PostgreSQL) fill the same
// Snapshot and Node, using the fields below where ZooKeeper's own
// (Session, Czxid, Watching, Edge…) do not fit. Every field here is
// additive and left out of the JSON when empty, so a ZooKeeper snapshot
// reads exactly as it always did.

// ZooKeeper is the service a Snapshot belongs to when it names none.
const ZooKeeper = "zookeeper"

// LockID names one lock across services: the service and the lock's name
// in that service's own terms (a znode path, an etcd prefix, a Redis key).
type LockID struct {
	Service string `json:"service"`
	Name    string `json:"name"`
}

// Key is the lock's key in the hub and in frame caches. A ZooKeeper lock's
// key is its path, as it always was; another service's is prefixed with the
// service, so an etcd prefix /locks/orders never collides with the znode
// /locks/orders.
func (id LockID) Key() string {
	if w := id.WireService(); w != "" {
		return w + ":" + id.Name
	}
	return id.Name
}

// WireService is the service as everything zklockviz writes out names it
// (JSON answers, URLs, recorded and published snapshots): empty for
// ZooKeeper, so every URL and file from before other services still means
// what it did. This is the one place that rule lives.
func WireService(service string) string {
	if service == ZooKeeper {
		return ""
	}
	return service
}

// WireService is WireService(id.Service).
func (id LockID) WireService() string { return WireService(id.Service) }

// Query is the lock's URL query, service= (by WireService) and path=.
func (id LockID) Query() url.Values {
	q := url.Values{}
	if w := id.WireService(); w != "" {
		q.Set("service", w)
	}
	q.Set("path", id.Name)
	return q
}

// ServiceName is the snapshot's service, ZooKeeper when it names none.
func (s Snapshot) ServiceName() string {
	if s.Service == "" {
		return ZooKeeper
	}
	return s.Service
}

// Lock is the snapshot's lock identity.
func (s Snapshot) Lock() LockID { return LockID{Service: s.ServiceName(), Name: s.Path} }

// Key is Lock().Key().
func (s Snapshot) Key() string { return s.Lock().Key() }

// Provenance says who vouches for a waits-for edge.
type Provenance string

const (
	// ByRule: the edge follows from the recipe's rule; the server keeps no
	// record of it (etcd keeps no watcher list; a ZooKeeper watch the
	// server's table does not show).
	ByRule Provenance = "rule"
	// ByServer: the server itself reports the edge (PostgreSQL's
	// pg_blocking_pids, ZooKeeper's watch table confirming the rule).
	ByServer Provenance = "server"
)

// WaitEdge is one waits-for edge of a node, whatever the service.
type WaitEdge struct {
	To         string     `json:"to"`
	Provenance Provenance `json:"provenance"`
}

// WaitEdges is the node's waits-for edges in service-neutral form: the
// rule's target (vouched for by the server when ZooKeeper's watch table
// confirms it, or when the service set WaitsForSource to ByServer), then
// every blocker the server reports that the rule did not name.
func (n *Node) WaitEdges() []WaitEdge {
	var out []WaitEdge
	if n.WaitsFor != "" {
		p := ByRule
		if n.Edge == EdgeConfirmed || n.WaitsForSource() == ByServer {
			p = ByServer
		}
		out = append(out, WaitEdge{To: n.WaitsFor, Provenance: p})
	}
	for _, b := range n.BlockedBy() {
		if b != n.WaitsFor {
			out = append(out, WaitEdge{To: b, Provenance: ByServer})
		}
	}
	return out
}

// UsesNeutralFields reports whether any node carries the service-neutral
// fields, which is when the views show their columns and say who vouches
// for each edge: a ZooKeeper lock's stay as they always were. ZooKeeper's
// nodes never carry them (its order is Seq, its client Session), so its
// queues are not scanned: every frame asks, of the snapshot sent and the
// one before, and the scan of two 1,000-node queues was a fifth of a
// change's frame encoding in BenchmarkChangeToFrame's profile.
func (s Snapshot) UsesNeutralFields() bool {
	if s.ServiceName() == ZooKeeper {
		return false
	}
	return slices.ContainsFunc(s.Nodes, func(n Node) bool {
		return n.Order() != 0 || n.Client() != "" || n.LeaseID() != "" || n.LeaseTTLMs() != 0 || n.LeaseLeftMs() != 0 ||
			n.WaitsForSource() != "" || len(n.BlockedBy()) > 0
	})
}

// WithWaitEdges returns s with every node's WaitEdges in ShownEdges when s
// uses the neutral fields, the one case the views show them, so the browser
// draws the server's edges instead of deriving them again. A ZooKeeper
// snapshot comes back as it is and its JSON does not grow. The nodes are
// copied when stamped: s's may be shared with other readers.
func (s Snapshot) WithWaitEdges() Snapshot {
	if !s.UsesNeutralFields() {
		return s
	}
	nodes := slices.Clone(s.Nodes)
	for i := range nodes {
		nodes[i].SetShownEdges(nodes[i].WaitEdges())
	}
	s.Nodes = nodes
	return s
}

// OnPoll: the waiter retries on a timer (a Redis spin lock's SET NX); the
// server keeps no record of it, so the classroom, which runs the client,
// is the one to say so.
const OnPoll WaitOn = "poll"

// What a discovery below prefixes leaves unexplored, when it is not
// ZooKeeper's folders (lockservice.Unexplored.What): the views word each.
const (
	// UnexploredUnwalked: keys the first walk of a Redis keyspace (SCAN)
	// has still to look at.
	UnexploredUnwalked = "redis-unwalked"
	// UnexploredOverLimit: lock keys matching a pattern that are not
	// followed, past the limit of keys followed.
	UnexploredOverLimit = "redis-over-limit"
)

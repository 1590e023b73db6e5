package views

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/lockservice"
)

// Stalled is how a stalled holder's state reads; static/queue.js STALLED
// is the lane's copy.
const Stalled = "holds by rule, client still waiting for"

// NodeDetails is everything known about one node, for the detail pane of
// the lock page (with its parts) and of the classroom (with a run's socket's
// frames).
type NodeDetails struct {
	// Name is the node asked about; Empty what the pane says when there is
	// nothing to list.
	Name    string
	Empty   string
	Entries []Detail
}

// Detail is one term of the pane. Time marks the node's clock, which the
// page starts from when it saw the node start holding (Since is the
// server's guess: its creation); Until is a lease's end for a countdown.
type Detail struct {
	Term  string
	Value string
	Class string
	Time  bool
	Since int64
	Until int64
	// Title is the whole value where Value is shortened.
	Title string
}

// NewNodeDetails describes the node name of s, a lock of sv.
func NewNodeDetails(sv Service, s lockqueue.Snapshot, name string, now time.Time) NodeDetails {
	return newNodeDetails(sv, s, nil, name, now)
}

// newNodeDetails is NewNodeDetails finding the node through s's facts f
// (nil: a look through s's nodes).
func newNodeDetails(sv Service, s lockqueue.Snapshot, f *QueueFacts, name string, now time.Time) NodeDetails {
	d := NodeDetails{Name: name, Empty: "Click a node to see its details."}
	if name == "" {
		return d
	}
	i := -1
	if f == nil {
		i = slices.IndexFunc(s.Nodes, func(n lockqueue.Node) bool { return n.Name == name })
	} else if at, ok := f.Position(s.Nodes, name); ok {
		i = at
	}
	if i < 0 {
		d.Empty = name + " is gone from the queue."
		return d
	}
	n := s.Nodes[i]
	prefix := childPrefix(s.Path)
	d.addIdentity(n, prefix)
	d.addWaiting(sv.Words, s, n, prefix)
	neutral := s.UsesNeutralFields()
	if neutral {
		d.addNeutral(sv.Words, s, n, now)
	}
	if !d.addService(sv.Words, s, n) {
		d.addStored(n, neutral)
	}
	d.addClock(n, now)
	for _, a := range s.Alerts {
		if slices.Contains(a.Nodes, n.Name) {
			d.add("⚠ "+a.Kind, a.Message, "alert-text")
		}
	}
	return d
}

func (d *NodeDetails) add(term, value, class string) {
	d.Entries = append(d.Entries, Detail{Term: term, Value: value, Class: class})
}

// addIdentity adds what the node is: its name, path, mode and state.
func (d *NodeDetails) addIdentity(n lockqueue.Node, prefix string) {
	folder := prefix
	if n.Folder() != "" {
		folder = n.Folder() + "/"
	}
	d.add("node", n.Name, "mono")
	d.add("full path", folder+n.Name, "mono")
	mode := ModeLabel(n.Mode)
	if n.Recipe != "" {
		mode += " (" + string(n.Recipe) + ")"
	}
	d.add("mode", mode, "")
	state := stateClass(n)
	if n.PartOf() != "" {
		state = PartOfText(n) + ": one contender with it, not a waiter of its own"
	}
	if n.Zombie {
		state += ", zombie: its session has no live connection"
	}
	d.add("state", state, "")
}

// addWaiting adds what the node waits for by the recipe, whether it is
// stalled, what its session watches and its edge in the queue.
func (d *NodeDetails) addWaiting(w lockservice.Words, s lockqueue.Snapshot, n lockqueue.Node, prefix string) {
	if !n.Holding && !n.Foreign {
		waits := cmp.Or(n.WaitsFor, "-")
		if n.WaitsOn == lockqueue.OnChildren {
			waits = "the children of " + s.Path
		}
		d.add("recipe says it waits for", waits, "mono")
	}
	if n.StalledOn() != "" {
		d.add("stalled", fmt.Sprintf("%s %s, since %s: its client missed the wake-up and does not know it holds",
			Stalled, n.StalledOn(), When(n.StalledSince())), "edge-stalled")
	}
	// Only a service whose sessions watch nodes (ZooKeeper) says so;
	// another service's waits are its waits-for edges (addNeutral).
	if !w.Watches {
		return
	}
	d.add("its session watches", WatchText(n, prefix), "mono")
	if n.Edge != "" {
		d.add("edge", string(n.Edge), "edge-"+string(n.Edge))
	}
}

// addStored adds what the server stores with the node: session, data and
// creation. Only ZooKeeper has a czxid and a sequence, so a neutral
// service's node shows them only when it has a czxid.
func (d *NodeDetails) addStored(n lockqueue.Node, neutral bool) {
	if n.Session != "" {
		session := n.Session
		if session == "0x0" {
			session += " (persistent node)"
		}
		d.add("session", session, "mono")
	}
	data := cmp.Or(n.Data, "(empty)")
	if n.DataBinary {
		data = "base64 " + n.Data
	}
	d.add("data", data, "mono")
	created := When(n.Ctime) // the pages' one wording of a time, which tz.js turns local
	if n.Czxid != 0 || !neutral {
		created += fmt.Sprintf(" (czxid 0x%x, seq %d)", n.Czxid, n.Seq)
	}
	d.add("created", created, "")
}

// addClock adds the node's running clock and, for a zombie, when its
// session expires.
func (d *NodeDetails) addClock(n lockqueue.Node, now time.Time) {
	c := ClockOf(n)
	clock := Detail{Term: c.Term, Class: "time", Time: true, Since: c.SinceMs(), Value: Duration(now.Sub(c.Since)), Title: c.Hint}
	if c.Since.IsZero() {
		clock.Value = "unknown"
	}
	d.Entries = append(d.Entries, clock)
	if n.Zombie && n.ExpiresInMs() > 0 {
		d.add("session expires in", Duration(time.Duration(n.ExpiresInMs())*time.Millisecond)+" (at the last update)", "")
	}
}

// addNeutral adds the service-neutral fields: order, client, the waits-for
// edges with who vouches for them, the server's blockers, the lease.
func (d *NodeDetails) addNeutral(w lockservice.Words, s lockqueue.Snapshot, n lockqueue.Node, now time.Time) {
	if n.Order() != 0 {
		d.add("order", fmt.Sprint(n.Order()), "")
	}
	// A service may word the client itself (PostgreSQL's is its
	// backend's pid, which its Details show as pid).
	if n.Client() != "" && !w.HideClient {
		d.add(cmp.Or(w.Columns.Client, "client"), n.Client(), "mono")
	}
	for _, e := range waitEdges(n) {
		d.add("waits for ("+e.Provenance+")", e.To, "mono")
	}
	if len(n.BlockedBy()) > 0 {
		d.add("blocked by (server)", strings.Join(n.BlockedBy(), ", "), "mono")
	}
	if l := nodeLease(n, s.UpdatedAt, now); l != nil {
		value := l.ID
		if l.TTL != "" {
			value = strings.TrimPrefix(value+" · ttl "+l.TTL, " · ")
		}
		// In the service's own word: Redis's is the key's "TTL left".
		d.Entries = append(d.Entries, Detail{Term: cmp.Or(w.Columns.Lease, "lease"), Value: value, Class: "mono", Until: l.Until})
	}
}

// addService adds the service's own lines about n (w.Details), and
// reports whether they replace the stored ones.
func (d *NodeDetails) addService(w lockservice.Words, s lockqueue.Snapshot, n lockqueue.Node) bool {
	if w.Details == nil {
		return false
	}
	lines, replace := w.Details(s, n)
	for _, l := range lines {
		value := l.Value
		if !l.Since.IsZero() {
			value = sinceAt(l.Since, l.At)
		}
		d.Entries = append(d.Entries, Detail{Term: l.Term, Value: value, Class: l.Class, Title: l.Title})
	}
	return replace
}

// sinceAt is how long before at (a read) t was, and t.
func sinceAt(t, at time.Time) string {
	if at.IsZero() || at.Before(t) {
		return When(t)
	}
	return Duration(at.Sub(t)) + ", since " + When(t)
}

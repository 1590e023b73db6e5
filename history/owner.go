package history

import (
	"cmp"
	"slices"
	"time"
)

// Owner is who a node belongs to, as the history recorded it when the
// node queued: what the live view showed of its owner then.
type Owner struct {
	// Client is its ZooKeeper session, Redis token or Redisson owner,
	// etcd lease or PostgreSQL backend pid.
	Client string `json:"client,omitempty"`
	// Data is the node's data, its first MaxData bytes (base64 when
	// DataBinary); Label the service's name for its client (PostgreSQL:
	// application, client address, state); Lease its lease.
	Data       string `json:"data,omitempty"`
	DataBinary bool   `json:"dataBinary,omitempty"`
	Label      string `json:"label,omitempty"`
	Lease      string `json:"lease,omitempty"`
}

// Owner is who the node of a Queued event belongs to; empty for other
// kinds, which do not repeat it.
func (e Event) Owner() Owner {
	return Owner{Client: e.Client, Data: e.Data, DataBinary: e.DataBinary, Label: e.Label, Lease: e.Lease}
}

func (n nodeState) owner() Owner {
	return Owner{Client: n.Client, Data: n.Data, DataBinary: n.DataBinary, Label: n.more().Label, Lease: n.more().Lease}
}

// Held is one hold that ended in a window: the node, who held it, when
// and for how long (seconds).
type Held struct {
	Node string `json:"node"`
	Owner
	Acquired time.Time `json:"acquired"`
	Left     time.Time `json:"left"`
	Hold     float64   `json:"hold"`
}

// maxLongestHolds is how many holds Stats.LongestHolds names.
const maxLongestHolds = 5

// holdsFold keeps the longest holds one record at a time.
type holdsFold struct {
	owners map[string]Owner
	out    []Held
}

func newHoldsFold(before State) holdsFold {
	owners := make(map[string]Owner, len(before.nodes))
	for _, n := range before.nodes {
		owners[n.Name] = n.owner()
	}
	return holdsFold{owners: owners, out: []Held{}}
}

// add notes e: a Queued record (a restatement's too) says who a node
// belongs to; a Left that is a measured hold is one.
func (f *holdsFold) add(e Event) {
	switch e.Kind {
	case Queued:
		f.owners[e.Node] = e.Owner()
	case Left:
		if h, ok := e.MeasuredHold(); ok && !e.Synthetic {
			f.out = append(f.out, Held{Node: e.Node, Owner: f.owners[e.Node], Acquired: e.Acquired, Left: e.Time, Hold: h.Seconds()})
			delete(f.owners, e.Node)
			// Only the longest are named: the rest need not be kept.
			if len(f.out) > 4*maxLongestHolds {
				f.out = f.done()
			}
		}
	}
}

func (f *holdsFold) done() []Held {
	slices.SortStableFunc(f.out, func(a, b Held) int { return cmp.Compare(b.Hold, a.Hold) })
	return f.out[:min(len(f.out), maxLongestHolds)]
}

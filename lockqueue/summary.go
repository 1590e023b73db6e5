package lockqueue

import (
	"slices"
	"strings"
	"time"
)

// SummaryNames is how many holders, waiters and alerted nodes a Summary
// names; it counts them all.
const SummaryNames = 10

// Summary is a lock at a glance: what a list of many locks shows of each.
// It counts the holders and waiters and names only the first SummaryNames
// of each, so it stays small however long the queue: a list of 100,000
// locks is a sort over these, never over the snapshots. The snapshot's
// own fields (Path, Recipe, Connection, Revision…) are read through it;
// the Snapshot is shared and must not be changed.
type Summary struct {
	*Snapshot
	// Holders and Waiters are the first SummaryNames holders and waiting
	// contenders in queue order; HolderCount and WaiterCount count all,
	// WaiterCount the waiters without a node (AnonymousWaiters) too.
	Holders     []NodeName
	Waiters     []NodeName
	HolderCount int
	WaiterCount int
	// OldestWaiter is when the longest wait began (Snapshot.Oldest's
	// waiter); zero when nobody waits.
	OldestWaiter time.Time
	// Alerts are the snapshot's, each naming at most SummaryNames nodes.
	Alerts []Alert

	key string // Snapshot.Key, made once
}

// NodeName is a node as a summary names it.
type NodeName struct {
	Name   string
	Seq    int64
	Client string
	// Who is Node.Who: how people know its client.
	Who string
}

// Who is how people know the node's client, as the lane shows it: its
// label (a PostgreSQL session's application and address), else its data
// when that is a short line of text (kazoo's and Curator's identifiers, a
// worker's name), else its client (an etcd lease, a Redis token); empty
// when none is known.
func (n *Node) Who() string {
	if l := n.Label(); l != "" {
		return l
	}
	if !n.DataBinary && n.Data != "" && len(n.Data) <= maxWhoData && !strings.ContainsAny(n.Data, "\n\r") {
		return n.Data
	}
	return n.Client()
}

// maxWhoData is the longest data Who takes for a name: longer data is a
// record, not a name.
const maxWhoData = 40

// Summarize is s at a glance. It allocates only for the names it keeps:
// nothing for an empty lock. The summary points to s, which must not
// change afterwards.
func (s *Snapshot) Summarize() Summary {
	sum := Summary{Snapshot: s, Alerts: s.Alerts, key: s.Key()}
	for ni := range s.Nodes {
		n := &s.Nodes[ni]
		switch {
		case n.Holding:
			if sum.HolderCount < SummaryNames {
				sum.Holders = append(sum.Holders, NodeName{Name: n.Name, Seq: n.Seq, Client: n.Client(), Who: n.Who()})
			}
			sum.HolderCount++
		case n.Waiting():
			if sum.WaiterCount < SummaryNames {
				sum.Waiters = append(sum.Waiters, NodeName{Name: n.Name, Seq: n.Seq, Client: n.Client(), Who: n.Who()})
			}
			sum.WaiterCount++
		}
	}
	sum.WaiterCount += s.AnonymousWaiters
	_, sum.OldestWaiter = s.Oldest()
	copied := false
	for i, a := range s.Alerts {
		if len(a.Nodes) > SummaryNames {
			if !copied {
				// Copy before trimming: the snapshot's alerts are shared.
				sum.Alerts, copied = slices.Clone(s.Alerts), true
			}
			sum.Alerts[i].Nodes = a.Nodes[:SummaryNames:SummaryNames]
		}
	}
	return sum
}

// Held reports whether anyone holds the lock.
func (s *Summary) Held() bool { return s.HolderCount > 0 }

// Contended reports whether anyone waits for the lock.
func (s *Summary) Contended() bool { return s.WaiterCount > 0 }

// Alerting reports whether the lock has something to look at.
func (s *Summary) Alerting() bool { return len(s.Alerts) > 0 }

// Key is the lock's key, as Snapshot.Key.
func (s *Summary) Key() string {
	if s.key == "" {
		return s.Snapshot.Key()
	}
	return s.key
}

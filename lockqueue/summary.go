package lockqueue

import (
	"slices"
	"time"
)

// SummaryNames is how many holders, waiters and alerted nodes a Summary
// names; it counts them all.
const SummaryNames = 10

// Summary is a lock at a glance: what a list of many locks shows of each.
// It counts the holders and waiters and names only the first SummaryNames
// of each, so it stays small however long the queue: a list of 100,000
// locks is a sort over these, never over the snapshots.
type Summary struct {
	// Service is the snapshot's (empty for ZooKeeper).
	Service    string
	Path       string
	Recipe     Recipe
	Connection Connection
	Exists     bool
	Revision   int64
	UpdatedAt  time.Time
	Error      string
	// Holders and Waiters are the first SummaryNames holders and waiting
	// contenders in queue order; HolderCount and WaiterCount count all.
	Holders     []NodeName
	Waiters     []NodeName
	HolderCount int
	WaiterCount int
	// OldestHolder and OldestWaiter are Snapshot.Oldest's.
	OldestHolder time.Time
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
}

// Summarize is s at a glance. It allocates only for the names it keeps:
// nothing for an empty lock.
func (s Snapshot) Summarize() Summary {
	sum := Summary{
		Service: s.Service, Path: s.Path, Recipe: s.Recipe, Connection: s.Connection, Exists: s.Exists,
		Revision: s.Revision, UpdatedAt: s.UpdatedAt, Error: s.Error, Alerts: s.Alerts, key: s.Key(),
	}
	for ni := range s.Nodes {
		n := &s.Nodes[ni]
		switch {
		case n.Holding:
			if sum.HolderCount < SummaryNames {
				sum.Holders = append(sum.Holders, NodeName{Name: n.Name, Seq: n.Seq, Client: n.Client})
			}
			sum.HolderCount++
		case n.Waiting():
			if sum.WaiterCount < SummaryNames {
				sum.Waiters = append(sum.Waiters, NodeName{Name: n.Name, Seq: n.Seq, Client: n.Client})
			}
			sum.WaiterCount++
		}
	}
	sum.OldestHolder, sum.OldestWaiter = s.Oldest()
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
		return LockID{Service: s.Service, Name: s.Path}.Key()
	}
	return s.key
}

// ServiceName is the lock's service, ZooKeeper when it names none.
func (s *Summary) ServiceName() string {
	if s.Service == "" {
		return ZooKeeper
	}
	return s.Service
}

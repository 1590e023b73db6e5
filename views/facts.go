package views

import (
	"sync"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// QueueFacts are what the lock view says of a whole queue beside the page
// it shows: its counts, its oldest wait, and where a node named in the URL
// is. FactsOf reads them from the nodes; a server showing one
// snapshot to many requests keeps them (web's facts cache), so each request
// costs the page of rows it shows, not the queue.
type QueueFacts struct {
	Holding, Waiting, Stalled int
	// Oldest is when the longest wait began (lockqueue.Snapshot.Oldest's
	// waiter); OldestAtMost that it is only a bound: a waiter there before
	// the reader first saw it, or waiters without a node (oldestWait's "≥").
	Oldest       time.Time
	OldestAtMost bool

	positions Positions
}

// positionsFrom: a queue longer than this finds a node by its name through
// a map made on the first such question; a shorter one looks through its
// nodes.
const positionsFrom = 1000

// FactsOf reads s's facts (two passes over its nodes). s's nodes must not
// change afterwards.
func FactsOf(s lockqueue.Snapshot) *QueueFacts {
	f := &QueueFacts{}
	_, f.Oldest = s.Oldest()
	// Waiters without a node (a Redisson lock's subscribers) are known
	// only from when the reader first saw them.
	if s.AnonymousWaiters > 0 && !f.Oldest.IsZero() && f.Oldest.Equal(s.AnonymousSince) {
		f.OldestAtMost = true
	}
	for ni := range s.Nodes {
		n := &s.Nodes[ni]
		switch {
		case n.Holding:
			f.Holding++
			if n.StalledOn() != "" {
				f.Stalled++
			}
		case n.Waiting():
			f.Waiting++
		}
		// A waiter there before the reader first saw it, whose wait
		// may be the longest: only a bound of its start is known.
		if n.CtimeAtMost && !n.Holding && !n.Foreign && n.Ctime.Equal(f.Oldest) {
			f.OldestAtMost = true
		}
	}
	return f
}

// Position is where the node named name is among nodes, the nodes of the
// snapshot f was read from (the first node of that name).
func (f *QueueFacts) Position(nodes []lockqueue.Node, name string) (int, bool) {
	if name == "" {
		return 0, false
	}
	return f.positions.Of(nodes, name)
}

// Positions finds the nodes of one snapshot by name: a long queue through
// a map made on the first question, a shorter one by looking through it.
// The zero value is ready; every call must pass the same nodes.
type Positions struct {
	once sync.Once
	at   map[string]int
}

// Of is where the first node named name is among nodes.
func (p *Positions) Of(nodes []lockqueue.Node, name string) (int, bool) {
	if len(nodes) <= positionsFrom {
		for i := range nodes {
			if nodes[i].Name == name {
				return i, true
			}
		}
		return 0, false
	}
	p.once.Do(func() {
		p.at = make(map[string]int, len(nodes))
		for i := len(nodes) - 1; i >= 0; i-- {
			p.at[nodes[i].Name] = i
		}
	})
	i, ok := p.at[name]
	return i, ok
}

package lockqueue

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkBuildJoin is the model's share of one change to a 1,000-node
// go-zookeeper queue whose sessions are connected and watch nothing (every
// waiter an orphan, as in cmd/zklockviz's BenchmarkChangeToFrame): Build
// over the nodes, then the join with the watch table, as the watcher does
// per change.
//
//	go test ./lockqueue -run '^$' -bench BenchmarkBuildJoin
func BenchmarkBuildJoin(b *testing.B) {
	// sessions=1: one client owns every node (cmd/zklockviz's benchmark
	// fills its queue from one session); sessions=10: ten take turns.
	for _, sessions := range []int{1, 10} {
		b.Run(fmt.Sprintf("sessions=%d", sessions), func(b *testing.B) { benchBuildJoin(b, sessions) })
	}
}

func benchBuildJoin(b *testing.B, sessions int) {
	const n = 1000
	now := time.Now()
	table := WatchTable{Source: "4lw", Watches: map[int64][]string{}, Connected: map[int64]bool{}, ChildWatches: 1}
	var nodes []Node
	for i := range n {
		owner := int64(0x1000 + i%sessions)
		table.Connected[owner] = true
		nodes = append(nodes, NewNode(Child{Name: fmt.Sprintf("_c_%032x-lock-%010d", i, i), Czxid: int64(i + 1),
			Ctime: now.Add(-time.Hour), EphemeralOwner: owner, Data: []byte("worker")}))
	}
	var missing map[string]time.Time
	b.ReportAllocs()
	for b.Loop() {
		s := BuildNodes("/bench", nodes, Options{})
		missing = Join(&s, table, missing, now, JoinOptions{})
		nodes = s.Nodes
	}
}

// BenchmarkNamesFirst100k is the model's share of a 100,000-node queue's
// first snapshot from its listing alone (names in the server's order, not
// the queue's): a node per name, Build, the join with a watch table that
// knows the one session, as a big queue's first read does.
//
//	go test ./lockqueue -run '^$' -bench BenchmarkNamesFirst100k -benchmem
func BenchmarkNamesFirst100k(b *testing.B) {
	const n = 100_000
	names := make([]string, n)
	for i := range names {
		names[i] = SeqName("0123456789abcdef0123456789abcdef__lock__", int64(i))
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(n, func(i, j int) { names[i], names[j] = names[j], names[i] })
	table := WatchTable{Source: "4lw", Watches: map[int64][]string{}, Connected: map[int64]bool{0x1000: true}}
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		nodes := make([]Node, 0, n)
		for _, name := range names {
			nodes = append(nodes, NewNamedNode(name, ""))
		}
		s := BuildNodes("/bench", nodes, Options{})
		Join(&s, table, nil, now, JoinOptions{})
	}
}

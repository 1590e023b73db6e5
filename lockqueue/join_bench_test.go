package lockqueue

import (
	"fmt"
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
	const n = 1000
	now := time.Now()
	table := WatchTable{Source: "4lw", Watches: map[int64][]string{}, Connected: map[int64]bool{}, ChildWatches: 1}
	var nodes []Node
	for i := range n {
		owner := int64(0x1000 + i%10)
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

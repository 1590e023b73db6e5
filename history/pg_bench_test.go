package history_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/postgres/pglocal/pgtest"
)

// BenchmarkPGRecord is one hand-off in a 100-node queue recorded into a
// real PostgreSQL: the holder leaves, the next holds, a node joins.
//
//	go test ./history -run '^$' -bench BenchmarkPGRecord -count 5
func BenchmarkPGRecord(b *testing.B) {
	pg := pgtest.ForTest(b)
	s, err := history.OpenPG(b.Context(), history.PGOptions{URL: pg.DSN()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	nodes := make([]lockqueue.Node, 0, 200)
	for i := range 100 {
		nodes = append(nodes, lockqueue.Node{Name: fmt.Sprintf("lock-%010d", i), Data: "worker"})
	}
	at := time.Now()
	for i := 0; b.Loop(); i++ {
		nodes = append(nodes[1:], lockqueue.Node{Name: fmt.Sprintf("lock-%010d", 100+i), Data: "worker"})
		nodes[0].Holding = true
		at = at.Add(time.Millisecond)
		snap := lockqueue.Snapshot{Path: "/locks/bench", Connection: lockqueue.Connected, Exists: true, UpdatedAt: at, Nodes: nodes}
		if _, err := s.Record(snap); err != nil {
			b.Fatal(err)
		}
	}
}

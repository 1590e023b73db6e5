package lockqueue

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkNodesEqual is equality over a 1,000-node queue whose nodes all
// match but the last, as a delta and the watcher's publish check compare
// each snapshot with the one before: copies share their Rare, so rareEqual
// returns at once except for the neutral services' nodes, half here.
//
//	go test ./lockqueue -run '^$' -bench BenchmarkNodesEqual
func BenchmarkNodesEqual(b *testing.B) {
	now := time.Now()
	var a []Node
	for i := range 1000 {
		n := NewNode(Child{Name: fmt.Sprintf("_c_%032x-lock-%010d", i, i), Czxid: int64(i + 1),
			Ctime: now, EphemeralOwner: int64(0x1000 + i), Data: []byte("worker")})
		n.Watching = []string{"/bench/x"}
		if i%2 == 0 {
			n.SetRare(Rare{Client: "token", LeaseID: "lease", LeaseTTLMs: 30000})
		}
		a = append(a, n)
	}
	c := append([]Node(nil), a...)
	for i := range c {
		if c[i].Rare != nil {
			c[i].SetLeaseLeftMs(1) // a Rare of its own, equal in all but this
			c[i].SetLeaseLeftMs(0)
		}
	}
	c[len(c)-1].Data = "changed"
	b.ReportAllocs()
	for b.Loop() {
		if SameNodes(a, c) {
			b.Fatal("equal")
		}
	}
}

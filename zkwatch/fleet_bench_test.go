package zkwatch

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/third_party/zk"
)

var (
	fleetParents = flag.Int("fleet-parents", 100_000, "BenchmarkFleet: lock parents below the prefix")
	fleetHeld    = flag.Int("fleet-held", 10_000, "BenchmarkFleet: of them held, each with a waiter")
)

// makeFleet makes parents empty lock parents below prefix, held of them
// (every parents/held-th) with two lock nodes of c's session, in multis of
// a thousand creates. It returns the held parents.
func makeFleet(tb testing.TB, c *zk.Conn, prefix string, parents, held int) map[string]bool {
	tb.Helper()
	mkdirs(tb, c, prefix)
	var ops []any
	flush := func() {
		if len(ops) == 0 {
			return
		}
		if _, err := c.Multi(ops...); err != nil {
			tb.Fatalf("make the fleet: %v", err)
		}
		ops = ops[:0]
	}
	add := func(op any) {
		if ops = append(ops, op); len(ops) == 1000 {
			flush()
		}
	}
	name := func(i int) string { return fmt.Sprintf("%s/order-%07d", prefix, i) }
	for i := range parents {
		add(&zk.CreateRequest{Path: name(i), Acl: acl})
	}
	want := map[string]bool{}
	for i := range held {
		p := name(i * (parents / held))
		want[p] = true
		for range 2 {
			add(&zk.CreateRequest{Path: p + "/0123456789abcdef0123456789abcdef__lock__", Acl: acl, Flags: zk.FlagEphemeral | zk.FlagSequence})
		}
	}
	flush()
	return want
}

// BenchmarkFleet is discovery of a fleet through the watcher alone (no
// web, no history): parents below one prefix, held of them with a holder
// and a waiter. An op is a watcher's start until a snapshot of every held
// lock, with both nodes, is published (s-to-all-held); reads counts the
// requests it sent by then. The heap it keeps is measured after a GC, as
// the bytes per parent (B/parent) and, for a fleet of empty parents only
// (held 0), the bytes per idle empty parent.
//
//	go test -run '^$' -bench BenchmarkFleet -benchtime 1x ./zkwatch/
//	go test -run '^$' -bench BenchmarkFleet -benchtime 1x ./zkwatch/ -args -fleet-parents 20000 -fleet-held 2000
func BenchmarkFleet(b *testing.B) {
	s := sharedServer(b)
	c := connect(b, []string{s.Addr()}, 30*time.Second)
	for _, tc := range []struct {
		name         string
		held         int
		childrenOnly bool
	}{
		{"held", *fleetHeld, false},
		{"empty", 0, false},
	} {
		b.Run(tc.name, func(b *testing.B) {
			prefix := fresh("/fleet/locks")
			want := makeFleet(b, c, prefix, *fleetParents, tc.held)
			var took time.Duration
			var perParent float64
			var reads int64
			for range b.N {
				runtime.GC()
				var before runtime.MemStats
				runtime.ReadMemStats(&before)
				var mu sync.Mutex
				seen := map[string]bool{}
				all := make(chan struct{})
				publish := func(snap lockqueue.Snapshot) {
					mu.Lock()
					defer mu.Unlock()
					if !want[snap.Path] || seen[snap.Path] || len(snap.Nodes) != 2 {
						return
					}
					if seen[snap.Path] = true; len(seen) == len(want) {
						close(all)
					}
				}
				start := time.Now()
				w, err := New(Config{Servers: []string{s.Addr()}, Prefixes: []string{prefix}, Publish: publish, Poll: time.Hour,
					ChildrenWatchesOnly: tc.childrenOnly, DiscoverLimit: 2 * *fleetParents,
					Logger: slog.New(slog.DiscardHandler)})
				if err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- w.Run(ctx) }()
				if len(want) > 0 {
					select {
					case <-all:
					case <-time.After(5 * time.Minute):
						b.Fatalf("%d of %d held locks published after 5 minutes", len(seen), len(want))
					}
				}
				waitListed(b, w, *fleetParents-tc.held)
				took += time.Since(start)
				reads = w.Reads()
				runtime.GC()
				var after runtime.MemStats
				runtime.ReadMemStats(&after)
				perParent = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(*fleetParents)
				cancel()
				if err := <-done; err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(took.Seconds()/float64(b.N), "s-to-all-held")
			b.ReportMetric(perParent, "B/parent")
			b.ReportMetric(float64(reads), "reads")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// waitListed waits until discovery has listed n folders below its prefix
// and has none left to list.
func waitListed(tb testing.TB, w *Watcher, n int) {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		w.disc.mu.Lock()
		busy := len(w.disc.levels) < n+1
		for _, lv := range w.disc.levels {
			busy = busy || lv.dirty || lv.inflight
		}
		w.disc.mu.Unlock()
		if !busy {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("discovery has not listed %d folders after 5 minutes", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

package zkwatch

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/third_party/zk"
)

// BenchmarkChange measures one change (a waiter joining) to a 1,000-node
// queue: ns/op is the time from the create to the published snapshot that
// has the new node; reads/change is ZooKeeper requests the watcher sent for
// it, which must not grow with the number of viewers.
//
//	go test -run '^$' -bench BenchmarkChange -benchtime 200x ./zkwatch/
func BenchmarkChange(b *testing.B) {
	s := sharedServer(b)
	for _, viewers := range []int{1, 100} {
		b.Run(fmt.Sprintf("viewers=%d", viewers), func(b *testing.B) {
			path := fresh(fmt.Sprintf("/bench/viewers-%d", viewers))
			c := connect(b, []string{s.Addr()}, 30*time.Second)
			mkdirs(b, c, path)
			ops := make([]any, 1000)
			for i := range ops {
				ops[i] = &zk.CreateRequest{Path: path + "/W_", Acl: acl, Flags: zk.FlagEphemeral | zk.FlagSequence}
			}
			if _, err := c.Multi(ops...); err != nil {
				b.Fatal(err)
			}

			// Viewers behind a coalescing hub: each holds at most the
			// newest snapshot; viewer 0 is the benchmark.
			var mu sync.Mutex
			var latest lockqueue.Snapshot
			changed := make(chan struct{}, 1)
			others := make([]chan lockqueue.Snapshot, viewers-1)
			var wg sync.WaitGroup
			for i := range others {
				others[i] = make(chan lockqueue.Snapshot, 1)
				wg.Go(func() {
					for range others[i] {
					}
				})
			}
			publish := func(snap lockqueue.Snapshot) {
				mu.Lock()
				latest = snap
				mu.Unlock()
				select {
				case changed <- struct{}{}:
				default:
				}
				for _, ch := range others {
					select {
					case ch <- snap:
					default:
					}
				}
			}
			waitFor := func(pred func(lockqueue.Snapshot) bool) {
				deadline := time.After(waitTimeout)
				for {
					mu.Lock()
					ok := pred(latest)
					mu.Unlock()
					if ok {
						return
					}
					select {
					case <-changed:
					case <-deadline:
						b.Fatalf("no snapshot as wanted; last: %s", describe(latest))
					}
				}
			}
			// Registered first, so it runs after the watcher has stopped.
			b.Cleanup(func() {
				for _, ch := range others {
					close(ch)
				}
				wg.Wait()
			})
			w, _ := startWatcher(b, Config{Servers: []string{s.Addr()}, Paths: []string{path}, Poll: time.Second, Publish: publish})
			waitFor(func(s lockqueue.Snapshot) bool { return s.Live() && len(s.Nodes) == 1000 })

			var reads int64
			b.ResetTimer()
			for range b.N {
				before := w.Reads()
				p, err := c.Create(path+"/W_", nil, zk.FlagEphemeral|zk.FlagSequence, acl)
				if err != nil {
					b.Fatal(err)
				}
				name := p[strings.LastIndex(p, "/")+1:]
				waitFor(func(s lockqueue.Snapshot) bool {
					return s.Live() && len(s.Nodes) == 1001 && s.Nodes[1000].Name == name
				})
				reads += w.Reads() - before

				b.StopTimer()
				if err := c.Delete(p, -1); err != nil {
					b.Fatal(err)
				}
				waitFor(func(s lockqueue.Snapshot) bool { return s.Live() && len(s.Nodes) == 1000 })
				// Measure an isolated change, not the rate limit that
				// coalesces bursts (settle).
				time.Sleep(settle)
				b.StartTimer()
			}
			b.ReportMetric(float64(reads)/float64(b.N), "reads/change")
		})
	}
}

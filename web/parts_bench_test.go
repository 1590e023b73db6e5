package web

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/zklockviz/zklockviz/hub"
)

// BenchmarkLockPartsViewers is one change to a 1,000-node lock followed by
// the GET /parts/lock of each of 100 viewers, as their lock pages ask after
// every change the socket sends: "uncached" renders every GET, "cached"
// shares the newest snapshot's render. One op is one change; renders/change
// is how many times the parts were rendered for it.
//
//	go test -run '^$' -bench BenchmarkLockPartsViewers -count 5 ./web/
func BenchmarkLockPartsViewers(b *testing.B) {
	const (
		path    = "/locks/viewers"
		nodes   = 1000
		viewers = 100
	)
	for _, cached := range []bool{false, true} {
		name := "uncached"
		if cached {
			name = "cached"
		}
		b.Run(name, func(b *testing.B) {
			h := hub.New()
			f := gozkFolder(path, nodes)
			h.Publish(f.snapshot())
			p := testPages(b, h)
			if !cached {
				p.parts = nil
			}
			r := chi.NewRouter()
			p.routes(r)
			b.ReportAllocs()
			next := nodes
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				// A change: the holder goes, a new waiter queues.
				f.remove(f.kids[0].Name)
				f.add(next)
				next++
				f.rev++
				h.Publish(f.snapshot())
				b.StartTimer()
				var wg sync.WaitGroup
				for range viewers {
					wg.Go(func() {
						w := httptest.NewRecorder()
						r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/parts/lock?path="+path, nil))
						if w.Code != http.StatusOK {
							panic(fmt.Sprintf("GET /parts/lock: %d %s", w.Code, w.Body))
						}
					})
				}
				wg.Wait()
			}
			b.ReportMetric(float64(p.partRenders.Load())/float64(b.N), "renders/change")
		})
	}
}

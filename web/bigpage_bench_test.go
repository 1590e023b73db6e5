package web

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"weak"

	"github.com/go-chi/chi/v5"
	"github.com/zklockviz/zklockviz/hub"
)

// BenchmarkBigLockPage is the server's side of opening the lock page of a
// 100,000-node queue, one request kind at a time: the page's HTML, a page
// of its table (GET /parts/lock, rendered each time, not cached), the
// socket's first windowed frame, and that frame when a node far in the
// queue is selected, each on a lock whose other sockets have looked at
// the same snapshot before. What each costs should follow what the page shows
// (100 rows, a window of a few hundred nodes), not the queue: B/op and
// allocs/op say so on a shared machine, where ns/op is noise.
//
//	go test -run '^$' -bench BenchmarkBigLockPage -benchmem ./web/
func BenchmarkBigLockPage(b *testing.B) {
	const path, n = "/locks/big", 100_000
	h := hub.New()
	snap := gozkFolder(path, n).snapshot()
	h.Publish(snap)
	p := testPages(b, h)
	p.parts = nil
	r := chi.NewRouter()
	p.routes(r)
	get := func(b *testing.B, url string) {
		for b.Loop() {
			w := httptest.NewRecorder()
			r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, url, nil))
			if w.Code != http.StatusOK {
				b.Fatalf("GET %s: %d %s", url, w.Code, w.Body)
			}
		}
	}
	b.Run("page", func(b *testing.B) {
		b.ReportAllocs()
		get(b, "/lock?path="+path)
	})
	b.Run("table-page-537", func(b *testing.B) {
		b.ReportAllocs()
		get(b, "/parts/lock?page=537&size=100&path="+path)
	})
	far := snap.Nodes[73_210].Name
	b.Run("table-page-selected", func(b *testing.B) {
		b.ReportAllocs()
		get(b, fmt.Sprintf("/parts/lock?page=0&size=100&selected=%s&show=%s&path=%s", far, far, path))
	})
	for _, v := range []view{{on: true, from: 0, size: 100}, {on: true, from: 53_700, size: 100, node: far}} {
		b.Run(fmt.Sprintf("socket-window-%d-node-%t", v.from, v.node != ""), func(b *testing.B) {
			b.ReportAllocs()
			// The lock's frame cache, as its sockets share it; each
			// socket's first frame is computed, not taken from it.
			fc := &frameCache{}
			for b.Loop() {
				fc.weak, fc.kept = map[frameKey]weak.Pointer[frameEntry]{}, map[frameKey]*frameEntry{}
				fc.hot.Store(nil)
				f := sockFrames{cache: fc, view: v}
				if _, _, err := f.next(snap, 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

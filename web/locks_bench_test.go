package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/zklockviz/zklockviz/hub"
	"github.com/zklockviz/zklockviz/lockqueue"
)

// bigFleet is a hub with the fleet: 100,000 lock parents, idle and
// empty but one in ten, held with one waiter.
func bigFleet(b *testing.B) *hub.Hub {
	b.Helper()
	h := hub.New()
	now := time.Now()
	for i := range 100_000 {
		var kids []lockqueue.Child
		if i%10 == 0 {
			kids = []lockqueue.Child{
				{Name: gozk(2*i, 0), Czxid: int64(2 * i), Ctime: now.Add(-time.Hour), EphemeralOwner: int64(0x1000 + 2*i)},
				{Name: gozk(2*i+1, 1), Czxid: int64(2*i + 1), Ctime: now.Add(-time.Duration(i) * time.Millisecond), EphemeralOwner: int64(0x1001 + 2*i)},
			}
		}
		s := lockqueue.Build(fmt.Sprintf("/locks/order-%06d", i), kids, lockqueue.Options{})
		s.Revision, s.Connection, s.Exists, s.UpdatedAt = int64(i+1), lockqueue.Connected, true, now
		h.Publish(s)
	}
	return h
}

// BenchmarkLocksPage serves a page of GET /api/v1/locks and of the
// dashboard's live part (GET /parts/dashboard) from a hub of 100,000 locks
// (10,000 held with a waiter, the rest idle and empty), through the
// handlers without a network: one op is one request.
//
//	go test -run '^$' -bench BenchmarkLocksPage -benchmem -count 3 ./web/
func BenchmarkLocksPage(b *testing.B) {
	h := bigFleet(b)
	srv, err := New(Config{Hub: h, Services: zkRegistry(nil, nil), Pages: true, Logger: testLogger(b)})
	if err != nil {
		b.Fatal(err)
	}
	// Through the router without the server's logging middleware.
	r := chi.NewRouter()
	r.Get("/api/v1/locks", srv.handleLocks)
	srv.pages.routes(r)
	for _, tc := range []struct{ name, url string }{
		{"api/default", "/api/v1/locks"},
		{"api/needs-a-look-50", "/api/v1/locks?sort=alerts&limit=50"},
		{"api/oldest-wait-50", "/api/v1/locks?sort=oldest-wait&limit=50"},
		{"api/search-50", "/api/v1/locks?q=ORDER-0999&limit=50"},
		{"api/held-page-3", ""}, // filled in below: the third page of held locks
		{"dashboard-part", "/parts/dashboard"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			url := tc.url
			if url == "" {
				url = thirdPage(b, r, "/api/v1/locks?state=held&sort=path&limit=50")
			}
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, url, nil))
				if w.Code != 200 {
					b.Fatalf("GET %s = %d %s", url, w.Code, w.Body)
				}
			}
		})
	}
}

// thirdPage follows next twice from u.
func thirdPage(b *testing.B, h http.Handler, u string) string {
	for range 2 {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, u, nil))
		var r LocksResponse
		if err := json.Unmarshal(w.Body.Bytes(), &r); err != nil || r.Next == "" {
			b.Fatalf("GET %s: %v, next %q", u, err, r.Next)
		}
		u = "/api/v1/locks?state=held&sort=path&limit=50&cursor=" + r.Next
	}
	return u
}

package metrics_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/hub"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/metrics"
)

// BenchmarkScrapeBigQueue is one scrape of /metrics with a 100,000-node
// queue watched and unchanged between scrapes: what a scrape allocates
// should not grow with the queue.
//
//	go test -run '^$' -bench BenchmarkScrapeBigQueue -benchmem ./metrics/
func BenchmarkScrapeBigQueue(b *testing.B) {
	h := hub.New()
	kids := make([]lockqueue.Child, 100_000)
	at := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for i := range kids {
		kids[i] = lockqueue.Child{Name: fmt.Sprintf("_c_%032x-lock-%010d", i, i), Ctime: at.Add(time.Duration(i) * time.Millisecond), EphemeralOwner: int64(i + 1)}
	}
	s := lockqueue.Build("/locks/big", kids, lockqueue.Options{})
	s.Connection, s.Exists = lockqueue.Connected, true
	h.Publish(s)
	handler := metrics.Handler(metrics.Config{Hub: h})
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		if w.Code != http.StatusOK {
			b.Fatalf("status %d", w.Code)
		}
	}
}

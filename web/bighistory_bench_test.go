package web

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"runtime"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/hub"
	"github.com/zklockviz/zklockviz/lockqueue"
)

// BenchmarkBigQueuePageHistory is what the lock page of a 100,000-node
// queue asks of the history once it is shown, as lock.js asks it: the
// strip, the density, the moments and the figures of the hour up to now,
// live (fitted to where the lock's history starts). The history is the
// queue as a watcher records it: first unread, then listed whole, then
// with its watch table (a new segment, its keyframe the whole queue), then
// a few hand-offs. B/op and peak-MB (the heap's growth while the three are
// answered) are what a shared 2-core machine measures steadily:
//
//	go test -run '^$' -bench BenchmarkBigQueuePageHistory -benchtime 10x -benchmem ./web/
func BenchmarkBigQueuePageHistory(b *testing.B) {
	const path, n = "/locks/big", 100_000
	now := epoch
	store, err := history.Open(history.Options{Dir: b.TempDir(), Now: func() time.Time { return now }})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	record := func(s lockqueue.Snapshot) {
		b.Helper()
		now = s.UpdatedAt
		if _, err := store.Record(s); err != nil {
			b.Fatal(err)
		}
		if err := store.Flush(false); err != nil {
			b.Fatal(err)
		}
	}
	f := gozkFolder(path, n)
	record(lockqueue.Snapshot{Path: path, Connection: lockqueue.Reconnecting, UpdatedAt: epoch, Nodes: []lockqueue.Node{}})
	record(f.snapshot())
	// The watch table read: nobody watches (a queue left behind, as the
	// e2e benchmark's is), 100,000 findings at one moment.
	f.rev++
	f.watchNothing = true
	record(f.snapshot())
	for range 5 {
		f.rev++
		f.remove(f.kids[0].Name)
		f.add(n + int(f.rev))
		record(f.snapshot())
	}
	h := hub.New()
	last := f.snapshot()
	h.Publish(last)
	ts := pagesWithHistory(b, h, zkRegistry(nil, nil), store)

	to := last.UpdatedAt.Add(time.Second)
	from := to.Add(-time.Hour)
	ask := func(endpoint string, q url.Values) {
		q.Set("path", path)
		q.Set("from", fmt.Sprint(from.UnixMilli()))
		q.Set("to", fmt.Sprint(to.UnixMilli()))
		res, err := http.Get(ts.URL + endpoint + "?" + q.Encode())
		if err != nil {
			b.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			b.Fatalf("GET %s: %d %s", endpoint, res.StatusCode, body)
		}
	}
	var peak float64
	b.ReportAllocs()
	for b.Loop() {
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		ask("/api/v1/lock/strip", url.Values{"n": {"120"}, "fit": {"history"}})
		ask("/api/v1/lock/history/density", url.Values{"buckets": {"600"}, "fit": {"history"}})
		// The bar's live page: the one around the window's end.
		ask("/api/v1/lock/history/moments", url.Values{"buckets": {"600"}, "around": {fmt.Sprint(to.UnixMilli())}})
		ask("/parts/lock-figures", url.Values{})
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		peak = max(peak, float64(after.HeapInuse)-float64(before.HeapInuse))
	}
	b.ReportMetric(peak/(1<<20), "grown-MB")
}

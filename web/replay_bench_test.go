package web

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/hub"
	"github.com/zklockviz/zklockviz/lockqueue"
)

const (
	benchDay   = 86400 // seconds of history, one change a second
	benchQueue = 100   // nodes in the queue at every moment
)

// dayOfHandoffs records a day of the fixture's lock "orders" into a store
// under dir: a 100-node queue whose holder leaves and a newcomer queues
// behind every second, and returns the store reopened at the day's end,
// as a server started the next morning would.
func dayOfHandoffs(b *testing.B, dir string) *history.Store {
	b.Helper()
	now := fixtureEpoch
	clock := func() time.Time { return now }
	s, err := history.Open(history.Options{Dir: dir, Now: clock, SyncEvery: 24 * time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	for i := range benchDay {
		now = fixtureEpoch.Add(time.Duration(i) * time.Second)
		snap := lockqueue.Snapshot{Service: fixtureName, Path: "orders", Recipe: "fixture", Revision: int64(i + 1),
			Connection: lockqueue.Connected, WatchSource: "fixture", Exists: true, UpdatedAt: now}
		for j := range benchQueue {
			seq := i + j
			n := lockqueue.Node{Name: fmt.Sprintf("lock-%010d", seq), Seq: int64(seq), Mode: lockqueue.Exclusive,
				Recipe: "fixture", Rare: &lockqueue.Rare{Order: int64(seq), Client: fmt.Sprintf("client-%d", seq)},
				Ctime: fixtureEpoch.Add(time.Duration(seq-benchQueue) * time.Second)}
			if j == 0 {
				n.Holding = true
			} else {
				n.WaitsFor = snap.Nodes[j-1].Name
				n.SetWaitsForSource(lockqueue.ByRule)
			}
			snap.Nodes = append(snap.Nodes, n)
		}
		if _, err := s.Record(snap); err != nil {
			b.Fatal(err)
		}
		if i%60 == 0 {
			if err := s.Flush(false); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	now = fixtureEpoch.Add(benchDay * time.Second)
	s, err = history.Open(history.Options{Dir: dir, Now: clock})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// replayServer serves the fixture service's pages over a day of history.
func replayServer(b *testing.B) *httptest.Server {
	b.Helper()
	store := dayOfHandoffs(b, b.TempDir())
	h := hub.New()
	reg := zkRegistry(nil, nil)
	svc, _ := fixtureService(h)
	if err := reg.Register(svc); err != nil {
		b.Fatal(err)
	}
	return pagesWithHistory(b, h, reg, store)
}

// The server side of one scrub frame: the time bar asks for the lane's
// snapshot and the lock's parts with the table's page (one request,
// /parts/lock-at?parts=1) at the moment under the pointer, over real
// HTTP. "drag" moves the pointer a
// second a frame, as dragging does; "jump" lands anywhere in the day, as
// a click on the bar or a link does. p50 and p99 are per frame:
//
//	go test -run '^$' -bench ScrubFrame -benchtime 400x ./web/
func BenchmarkScrubFrame(b *testing.B) {
	ts := replayServer(b)
	for _, mode := range []string{"drag", "jump"} {
		b.Run(mode, func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			at := fixtureEpoch.Add(benchDay / 2 * time.Second)
			var frames []time.Duration
			for b.Loop() {
				if mode == "drag" {
					at = at.Add(time.Second)
				} else {
					at = fixtureEpoch.Add(time.Duration(r.Int64N(benchDay*1000)) * time.Millisecond)
				}
				ms := fmt.Sprint(at.UnixMilli())
				start := time.Now()
				scrubGet(b, ts.URL+"/parts/lock-at?service=fixture&path=orders&page=0&size=100&parts=1&at="+ms)
				frames = append(frames, time.Since(start))
			}
			slices.Sort(frames)
			b.ReportMetric(float64(frames[len(frames)/2])/1e6, "ms-p50/frame")
			b.ReportMetric(float64(frames[len(frames)*99/100])/1e6, "ms-p99/frame")
		})
	}
}

// scrubGet fetches url and returns the size of its body.
func scrubGet(b *testing.B, url string) int64 {
	resp, err := http.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || n == 0 {
		b.Fatalf("GET %s: %d, %d bytes", url, resp.StatusCode, n)
	}
	return n
}

// The incident export of a busy window: 500 changes (the most one file
// shows) of the 100-node queue, somewhere in the day; its time and the
// size of the file:
//
//	go test -run '^$' -bench ExportBusyWindow -benchtime 20x ./web/
func BenchmarkExportBusyWindow(b *testing.B) {
	ts := replayServer(b)
	r := rand.New(rand.NewPCG(3, 4))
	var took []time.Duration
	var size int64
	for b.Loop() {
		from := fixtureEpoch.Add(time.Duration(r.Int64N(benchDay-600)) * time.Second)
		to := from.Add((maxExportChanges - 1) * time.Second)
		start := time.Now()
		size = scrubGet(b, fmt.Sprintf("%s/api/v1/lock/export?service=fixture&path=orders&from=%d&to=%d",
			ts.URL, from.UnixMilli(), to.UnixMilli()))
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2])/1e6, "ms-p50")
	b.ReportMetric(float64(size)/1e6, "MB/file")
}

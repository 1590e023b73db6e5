package e2e

import (
	"fmt"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/lockqueue"
)

// dayRecorded writes into a data directory a day of path at one change a
// second, ending a minute ago: a 100-node queue whose holder leaves and a
// newcomer queues each second, node lock-<n> holding during second n of the
// day. It returns the directory and the day's start.
func dayRecorded(b *testing.B, path string) (string, time.Time) {
	b.Helper()
	const day, queue = 86400, 100
	start := time.Now().Add(-time.Minute - day*time.Second).Truncate(time.Second)
	now := start
	dir := b.TempDir()
	s, err := history.Open(history.Options{Dir: dir, Now: func() time.Time { return now }, SyncEvery: 24 * time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	for i := range day {
		now = start.Add(time.Duration(i) * time.Second)
		snap := lockqueue.Snapshot{Path: path, Recipe: lockqueue.Kazoo, Connection: lockqueue.Connected, Exists: true, UpdatedAt: now}
		for j := range queue {
			n := lockqueue.Node{Name: fmt.Sprintf("lock-%010d", i+j), Seq: int64(i + j), Mode: lockqueue.Exclusive,
				Holding: j == 0, Session: fmt.Sprintf("0x%x", i+j), Ctime: start.Add(time.Duration(i+j-queue) * time.Second)}
			if j > 0 {
				n.WaitsFor = snap.Nodes[j-1].Name
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
	return dir, start
}

// BenchmarkScrubRedraw drives the lock view's time bar in headless
// Chromium over a day of history (one change a second, a 100-node queue)
// and reports, per frame, the milliseconds (performance.now()) from the bar
// moving a second on to the view showing that moment: the lane with the
// holder then and the status naming the moment.
//
//	go test ./e2e -run '^$' -bench ScrubRedraw -benchtime 100x
func BenchmarkScrubRedraw(b *testing.B) {
	need(b)
	const path = "/e2e/bench/day"
	dir, start := dayRecorded(b, path)
	ensurePath(b, connect(b), path)
	srv := startServer(b, "--watch", path, "--data-dir", dir)
	tb := newTab(b)
	at := start.Add(12 * time.Hour)
	tb.open(fmt.Sprintf("%s/lock?path=%s&at=%d", srv.URL, url.QueryEscape(path), at.UnixMilli()))
	tb.until("the view at the moment", `document.getElementById('replay-status').dataset.at === '`+fmt.Sprint(at.UnixMilli())+`'`)
	tb.until("the time bar's window loaded", `Number(document.getElementById('timebar').dataset.moments) > 0`)

	var frames, lanes []float64
	for b.Loop() {
		at = at.Add(time.Second)
		holder := fmt.Sprintf("lock-%010d", int(at.Sub(start)/time.Second))
		f := evalAwait[[]float64](tb, fmt.Sprintf(`(async () => {
  const s = document.getElementById('tb-scrub'), want = '%d', holder = %s;
  const t0 = performance.now();
  s.value = want;
  s.dispatchEvent(new Event('input'));
  s.dispatchEvent(new Event('change'));
  const lane = () => document.querySelector('#lane [data-node][data-state=holding]')?.dataset.node === holder;
  const status = () => document.getElementById('replay-status').dataset.at === want;
  let laneAt = 0;
  while (!(lane() && status())) {
    if (!laneAt && lane()) laneAt = performance.now() - t0;
    if (performance.now() - t0 > 10000) throw new Error('not redrawn at ' + want + ' in 10 s');
    await new Promise((r) => requestAnimationFrame(r));
  }
  const all = performance.now() - t0;
  return [all, laneAt || all];
})()`, at.UnixMilli(), jsString(holder)))
		frames, lanes = append(frames, f[0]), append(lanes, f[1])
	}
	slices.Sort(frames)
	slices.Sort(lanes)
	b.ReportMetric(frames[len(frames)/2], "ms-p50/frame")
	b.ReportMetric(frames[len(frames)*99/100], "ms-p99/frame")
	b.ReportMetric(lanes[len(lanes)/2], "ms-p50/lane")
	b.ReportMetric(0, "ns/op")
}

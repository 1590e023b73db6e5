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
	r := recordQueue(b, path, 86400, time.Second, 100)
	return r.dir, r.start
}

// queueRecord is a history written by recordQueue.
type queueRecord struct {
	dir        string
	start      time.Time
	events     int       // the events the store recorded
	first      time.Time // the first change (the first snapshot is a keyframe)
	last       time.Time // the last change
	changes    int       // the moments with events
	lastHolder string
}

// recordQueue writes into a data directory, through the recorder's public
// API, changes snapshots of path one every apart, ending a minute ago: a
// queue of size nodes whose holder leaves and a newcomer queues at each,
// node lock-<i> holding from change i on.
func recordQueue(tb testing.TB, path string, changes int, every time.Duration, size int) queueRecord {
	tb.Helper()
	start := time.Now().Add(-time.Minute - time.Duration(changes)*every).Truncate(time.Second)
	now := start
	r := queueRecord{dir: tb.TempDir(), start: start}
	s, err := history.Open(history.Options{Dir: r.dir, Now: func() time.Time { return now }, SyncEvery: 24 * time.Hour})
	if err != nil {
		tb.Fatal(err)
	}
	for i := range changes {
		now = start.Add(time.Duration(i) * every)
		snap := lockqueue.Snapshot{Path: path, Recipe: lockqueue.Kazoo, Connection: lockqueue.Connected, Exists: true, UpdatedAt: now}
		for j := range size {
			n := lockqueue.Node{Name: fmt.Sprintf("lock-%010d", i+j), Seq: int64(i + j), Mode: lockqueue.Exclusive,
				Holding: j == 0, Session: fmt.Sprintf("0x%x", i+j), Ctime: start.Add(time.Duration(i+j-size) * every)}
			if j > 0 {
				n.WaitsFor = snap.Nodes[j-1].Name
			}
			snap.Nodes = append(snap.Nodes, n)
		}
		evs, err := s.Record(snap)
		if err != nil {
			tb.Fatal(err)
		}
		if len(evs) > 0 {
			if r.changes == 0 {
				r.first = now
			}
			r.events += len(evs)
			r.changes++
			r.last, r.lastHolder = now, snap.Nodes[0].Name
		}
		if i%60 == 0 {
			if err := s.Flush(false); err != nil {
				tb.Fatal(err)
			}
		}
	}
	if err := s.Close(); err != nil {
		tb.Fatal(err)
	}
	return r
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

// A scrub frame draws a past moment's lane only near the part in view:
// with a 100-node queue a frame has fewer nodes than the queue, and once
// the scrub rests the lane is drawn whole, and stays so.
func TestScrubbedLaneIsWholeAtRest(t *testing.T) {
	need(t)
	const path, size = "/e2e/scrub/whole", 100
	r := recordQueue(t, path, 60, time.Second, size)
	srv := startServer(t, "--data-dir", r.dir)
	tb := newTab(t)
	at := r.start.Add(20 * time.Second)
	tb.open(fmt.Sprintf("%s/lock?path=%s&at=%d", srv.URL, url.QueryEscape(path), at.UnixMilli()))
	tb.until("the time bar's window loaded", `Number(document.getElementById('timebar').dataset.moments) > 0`)
	whole := fmt.Sprintf(`document.querySelectorAll('#lane [data-node]').length === %d`, size)
	tb.until("the lane at the moment, whole", whole)

	least := size
	for range 10 {
		at = at.Add(time.Second)
		holder := fmt.Sprintf("lock-%010d", int(at.Sub(r.start)/time.Second))
		n := evalAwait[int](tb, fmt.Sprintf(`(async () => {
  const s = document.getElementById('tb-scrub'), want = '%d', holder = %s;
  s.value = want;
  s.dispatchEvent(new Event('input'));
  s.dispatchEvent(new Event('change'));
  const t0 = performance.now();
  while (!(document.querySelector('#lane [data-node][data-state=holding]')?.dataset.node === holder && document.getElementById('replay-status').dataset.at === want)) {
    if (performance.now() - t0 > 10000) throw new Error('not redrawn at ' + want + ' in 10 s');
    await new Promise((r) => requestAnimationFrame(r));
  }
  return document.querySelectorAll('#lane [data-node]').length;
})()`, at.UnixMilli(), jsString(holder)))
		least = min(least, n)
	}
	if least >= size {
		t.Errorf("every scrub frame drew all %d nodes, want only those near the view", size)
	}
	tb.until("the lane whole once the scrub rests", whole)
	time.Sleep(time.Second)
	if n := eval[int](tb, `document.querySelectorAll('#lane [data-node]').length`); n != size {
		t.Errorf("a second after the scrub rested the lane has %d nodes, want all %d", n, size)
	}
	if got := eval[string](tb, `document.querySelector('#lane [data-node][data-state=holding]')?.dataset.node`); got != fmt.Sprintf("lock-%010d", int(at.Sub(r.start)/time.Second)) {
		t.Errorf("the whole lane's holder is %s, want the moment's", got)
	}
}

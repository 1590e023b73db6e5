package e2e

import (
	"fmt"
	"slices"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/zklockviz/zklockviz/third_party/zk"
	"github.com/zklockviz/zklockviz/zookeeper/zklocal/zktest"
)

// BenchmarkLockViewFirstPaintCold is the lock page of a 100,000-node queue
// beside a 10-node one on the same server (history on, default flags), each
// opened in a tab whose browser caches nothing, as a person's browser opens
// the page the first time: from open to the first node drawn, every load
// of both, in turns. It reports each one's median and slowest load, and
// the most the big lock's load took over the small one's opened just
// before it.
//
//	CI=true go test ./e2e -run '^$' -bench FirstPaintCold -benchtime 8x
func BenchmarkLockViewFirstPaintCold(b *testing.B) {
	need(b)
	const big, small, n = "/e2e/bench/cold100k", "/e2e/bench/cold10", 100_000
	zks := zktest.ForTest(b)
	c := connectTo(b, zks)
	hugeQueue(b, c, big, n)
	ensurePath(b, c, small)
	for i := range 10 {
		if _, err := c.Create(fmt.Sprintf("%s/_c_%032x-lock-", small, i+1), []byte(fmt.Sprintf("worker-%d", i)), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
			b.Fatal(err)
		}
	}
	srv := startServerOn(b, zks, "--watch", big, "--watch", small)
	waitReadAndRecorded(b, srv.URL, n)

	// open is one cold load of the page of path: ms to its first node.
	open := func(path string) float64 {
		b.StopTimer()
		tb := newTab(b)
		if _, err := chromedp.Call(tb.ctx, network.Enable, network.EnableParams{}); err != nil {
			b.Fatalf("network on: %v", err)
		}
		if _, err := chromedp.Call(tb.ctx, network.SetCacheDisabled, network.SetCacheDisabledParams{CacheDisabled: true}); err != nil {
			b.Fatalf("cache off: %v", err)
		}
		b.StartTimer()
		tb.open(srv.URL + "/lock?path=" + path)
		tb.until("queue drawn", `document.body.dataset.firstDraw`)
		ms := eval[float64](tb, `Number(document.body.dataset.firstDraw)`)
		b.StopTimer()
		tb.close()
		b.StartTimer()
		return ms
	}
	var smalls, bigs []float64
	gap := 0.0
	b.ResetTimer()
	for b.Loop() {
		s, l := open(small), open(big)
		b.Logf("first node drawn: 10 nodes %.0f ms, 100,000 nodes %.0f ms", s, l)
		smalls, bigs = append(smalls, s), append(bigs, l)
		gap = max(gap, l-s)
	}
	slices.Sort(smalls)
	slices.Sort(bigs)
	b.ReportMetric(smalls[len(smalls)/2], "ms/small-median")
	b.ReportMetric(smalls[len(smalls)-1], "ms/small-max")
	b.ReportMetric(bigs[len(bigs)/2], "ms/big-median")
	b.ReportMetric(bigs[len(bigs)-1], "ms/big-max")
	b.ReportMetric(gap, "ms/big-over-small-max")
	b.ReportMetric(0, "ns/op")
}

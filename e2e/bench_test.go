package e2e

import (
	"fmt"
	"testing"

	"github.com/zklockviz/zklockviz/third_party/zk"
)

// BenchmarkLockViewFirstPaint10k opens the lock view of a 10,000-node queue
// in headless Chromium and reports, per page load, the milliseconds from
// navigation start to the queue lane being drawn (ms/queue-drawn) and to the
// first contentful paint (ms/fcp).
//
//	go test ./e2e -run '^$' -bench FirstPaint10k -benchtime 5x
func BenchmarkLockViewFirstPaint10k(b *testing.B) {
	need(b)
	const path, n = "/e2e/bench/big", 10000
	c := connect(b)
	ensurePath(b, c, path)
	acl := zk.WorldACL(zk.PermAll)
	for start := 0; start < n; start += 500 {
		var ops []any
		for i := start; i < start+500; i++ {
			ops = append(ops, &zk.CreateRequest{Path: fmt.Sprintf("%s/_c_%032x-lock-", path, i*7919+1), Data: []byte(fmt.Sprintf("worker-%d", i)), Acl: acl, Flags: zk.FlagEphemeral | zk.FlagSequence})
		}
		if _, err := c.Multi(ops...); err != nil {
			b.Fatalf("create children: %v", err)
		}
	}
	srv := startServer(b, "--watch", path)
	tb := newTab(b)
	// Wait until the watcher has read the whole folder, so what is measured
	// is the page, not the first read.
	tb.open(srv.URL + "/lock?path=" + path)
	tb.until("10,000 nodes read", fmt.Sprintf(`document.getElementById('lane').dataset.count === '%d'`, n))

	var drawn, fcp float64
	b.ResetTimer()
	for b.Loop() {
		tb.open(srv.URL + "/lock?path=" + path)
		tb.until("queue drawn", `document.body.dataset.firstDraw`)
		drawn += eval[float64](tb, `Number(document.body.dataset.firstDraw)`)
		fcp += eval[float64](tb, `(performance.getEntriesByName('first-contentful-paint')[0] || {startTime: 0}).startTime`)
	}
	b.ReportMetric(drawn/float64(b.N), "ms/queue-drawn")
	b.ReportMetric(fcp/float64(b.N), "ms/fcp")
	b.ReportMetric(0, "ns/op")
}

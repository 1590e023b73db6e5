package e2e

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/heapprofiler"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/zklockviz/zklockviz/third_party/zk"
	"github.com/zklockviz/zklockviz/zookeeper/zklocal"
	"github.com/zklockviz/zklockviz/zookeeper/zklocal/zktest"
)

// hugeQueue makes n ephemeral sequential go-zookeeper lock nodes under path
// with c's session, a thousand to a multi, and returns their names in queue
// order.
func hugeQueue(t testing.TB, c *zk.Conn, path string, n int) []string {
	t.Helper()
	ensurePath(t, c, path)
	acl := zk.WorldACL(zk.PermAll)
	names := make([]string, 0, n)
	for start := 0; start < n; start += 1000 {
		var ops []any
		for i := start; i < min(n, start+1000); i++ {
			ops = append(ops, &zk.CreateRequest{Path: fmt.Sprintf("%s/_c_%032x-lock-", path, i*7919+1), Data: []byte(fmt.Sprintf("worker-%d", i)), Acl: acl, Flags: zk.FlagEphemeral | zk.FlagSequence})
		}
		res, err := c.Multi(ops...)
		if err != nil {
			t.Fatalf("create children %d-%d: %v", start, start+len(ops)-1, err)
		}
		for _, r := range res {
			names = append(names, strings.TrimPrefix(r.String, path+"/"))
		}
	}
	// go-zookeeper's queue is in sequence order, the name's last 10 digits.
	sort.Slice(names, func(i, j int) bool { return names[i][len(names[i])-10:] < names[j][len(names[j])-10:] })
	return names
}

// hugeZK starts a ZooKeeper of its own for a 100,000-node queue and
// connects the client that makes it. Deleting 100,000 ephemeral nodes when
// the session ends keeps a server busy for a while, which the next test
// should not wait on. The queue and the watcher's reads keep about 160 MB
// in the server's heap (jcmd GC.heap_info during the test), most of the
// default 256 MB: a 1 GB heap keeps its collections short and rare. The
// client's session is long: in one CI run on a busy machine the server
// stalled past a 4 s session and the queue vanished mid-test; nothing here
// is about expiry.
func hugeZK(t testing.TB) (*zklocal.Server, *zk.Conn) {
	t.Helper()
	zks := zktest.ForTestWith(t, zklocal.Options{JVMFlags: []string{"-Xmx1g"}})
	return zks, connectFor(t, zks, 30*time.Second)
}

// socketBytes counts the websocket payload bytes the tab receives, as the
// browser's network domain reports them.
func socketBytes(t testing.TB, tb *tab) *atomic.Int64 {
	n, _ := socketTraffic(t, tb)
	return n
}

// socketTraffic counts the websocket payload bytes the tab receives and
// the sockets it opens (a view moved is a socket of its own).
func socketTraffic(t testing.TB, tb *tab) (bytes, opened *atomic.Int64) {
	t.Helper()
	var n, open atomic.Int64
	if err := chromedp.Listen(tb.ctx, func(ev any) {
		switch ev := ev.(type) {
		case *network.EventWebSocketFrameReceived:
			if ev.Response != nil {
				n.Add(int64(len(ev.Response.PayloadData)))
			}
		case *network.EventWebSocketCreated:
			open.Add(1)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(tb.ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatalf("network on: %v", err)
	}
	return &n, &open
}

// The lock page of a 100,000-node queue made by a real client gets the
// part it shows over its socket: the first nodes drawn, the counts of the
// whole queue said, the table's next page and a fold picked in the lane
// bringing their nodes, a node picked by name drawn wherever it is, changes followed, and the
// socket's bytes a few hundred KB where the whole queue is tens of MB.
func TestHundredThousandNodeLockWindow(t *testing.T) {
	need(t)
	const path, n = "/e2e/huge100k", 100_000
	zks, c := hugeZK(t)
	names := hugeQueue(t, c, path, n)
	srv := startServerOn(t, zks, "--watch", path)
	tb := newTab(t)
	got, opened := socketTraffic(t, tb)
	tb.open(srv.URL + "/lock?path=" + path)
	tb.until("100,000 nodes read", fmt.Sprintf(`document.getElementById('lane').dataset.count === '%d'`, n))
	tb.until("first painted", `document.body.dataset.firstDraw`)

	l := eval[map[string]string](tb, `({...document.getElementById('lane').dataset})`)
	if l["window"] != "0-100" {
		t.Errorf("lane window %q, want 0-100", l["window"])
	}
	drawn, folded := 0, 0
	fmt.Sscan(l["drawn"], &drawn)
	fmt.Sscan(l["folded"], &folded)
	if drawn+folded != n || drawn < 150 || drawn > 400 {
		t.Errorf("drawn %d + folded %d: want 100,000 with 150–400 drawn", drawn, folded)
	}
	if first := eval[string](tb, `document.querySelector('#lane [data-node]').dataset.node`); first != names[0] {
		t.Errorf("first node drawn %s, want the queue's first, %s", first, names[0])
	}
	tb.until("the holder is drawn", fmt.Sprintf(`document.querySelector('#lane [data-node=%s][data-state=holding]')`, jsString(names[0])))
	tb.until("the last node is drawn", fmt.Sprintf(`document.querySelector('#lane [data-node=%s]')`, jsString(names[n-1])))
	// The note and its count read together, as the page wrote them: an
	// alert that comes meanwhile (these nodes watch nothing: orphans, once
	// the watch table is read) draws the nodes it names, so the count
	// read above may be an older drawing's.
	shown := eval[map[string]string](tb, `({note: document.getElementById('fold-note').textContent, folded: document.getElementById('fold-note').dataset.folded})`)
	note := shown["note"]
	fmt.Sscan(shown["folded"], &folded)
	for _, want := range []string{"Showing nodes 1–100 of 100,000", fmt.Sprintf("%s of 100,000 nodes are folded", formatThousands(folded)), "lists every node"} {
		if !strings.Contains(note, want) {
			t.Errorf("fold note %q lacks %q", note, want)
		}
	}
	tb.until("table page 1", `document.querySelector('#table .page-info').textContent.startsWith('rows 1–100 of 100,000')`)
	if b := got.Load(); b > 512<<10 {
		t.Errorf("the socket brought %d bytes to draw the first page; want at most 512 KB", b)
	}
	t.Logf("first page: %d nodes drawn, %d socket bytes", drawn, got.Load())

	// The table's next page moves the window: its nodes come and are drawn.
	tb.click("next page", `#table .table-bar button:last-of-type`)
	tb.until("table page 2", `document.querySelector('#table .page-info').textContent.startsWith('rows 101–200 of 100,000')`)
	tb.until("lane window 100-200", `document.getElementById('lane').dataset.window === '100-200'`)
	tb.until("node 101 drawn", fmt.Sprintf(`document.querySelector('#lane [data-node=%s]')`, jsString(names[100])))
	tb.until("node 200 drawn", fmt.Sprintf(`document.querySelector('#lane [data-node=%s]')`, jsString(names[199])))
	tb.until("the note says the window", `document.getElementById('fold-note').textContent.includes('Showing nodes 101–200 of 100,000')`)
	// The rows of the page tick from the window's nodes.
	tb.until("row 101's clock", fmt.Sprintf(`document.querySelector('#table tr[data-row=%s] td.time').dataset.since > 0`, jsString(names[100])))

	// A fold picked in the lane brings its first nodes, with the table's
	// page that lists them.
	// The click is the fold's own handler, dispatched in the page: a
	// pointer click at the fold's centre can land on the lane redrawn
	// under it on a loaded machine (its columns are culled and placed
	// anew on each frame). A click that found the lane mid-redraw is
	// given again.
	moved := `document.getElementById('lane').dataset.window === '200-300'`
	for try := 1; ; try++ {
		tb.until("the fold after the window", `document.querySelector('#lane [data-group^="200-"]')`)
		tb.run(`document.querySelector('#lane [data-group^="200-"]').dispatchEvent(new MouseEvent('click', {bubbles: true}))`)
		deadline := time.Now().Add(15 * time.Second)
		for !eval[bool](tb, `!!(`+moved+`)`) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if eval[bool](tb, `!!(`+moved+`)`) || try == 3 {
			break
		}
		t.Logf("the fold's click did not move the window within 15s (try %d); clicking again", try)
	}
	tb.until("lane window 200-300", moved)
	tb.until("node 201 drawn", fmt.Sprintf(`document.querySelector('#lane [data-node=%s]')`, jsString(names[200])))
	tb.until("table page 3", `document.querySelector('#table .page-info').textContent.startsWith('rows 201–300 of 100,000')`)

	// A node far in the fold, found by name in the table and picked, is drawn.
	far := names[73_210]
	// Typed a key at a time, the name is asked for once the typing
	// pauses: a socket or two for the whole name, not one a key (each a
	// window of the queue, 80 KB and more).
	before := opened.Load()
	tb.do("filter by name", chromedp.SendKeys(chromedp.CSS(`#table input[type=search]`), far))
	tb.until("the row found", fmt.Sprintf(`document.querySelector('#table tr[data-row=%s] td.name button')`, jsString(far)))
	if n := opened.Load() - before; n < 1 || n > 4 {
		t.Errorf("typing the %d-letter name opened %d sockets; want one once the typing paused (at most 4 on a loaded machine)", len(far), n)
	}
	tb.click("pick it", fmt.Sprintf(`#table tr[data-row=%s] td.name button`, jsString(far)))
	tb.until("the far node drawn and selected", fmt.Sprintf(`document.querySelector('#lane [data-node=%s].selected')`, jsString(far)))
	tb.until("its details", fmt.Sprintf(`document.querySelector('#details .node-details[data-node=%s]')`, jsString(far)))

	// A change inside the window is followed, with the counts.
	if err := c.Delete(path+"/"+names[250], -1); err != nil {
		t.Fatalf("delete %s: %v", names[250], err)
	}
	tb.until("99,999 nodes", `document.getElementById('lane').dataset.count === '99999'`)
	tb.until("the deleted node gone", fmt.Sprintf(`!document.querySelector('#lane [data-node=%s]')`, jsString(names[250])))
	if b := got.Load(); b > 2<<20 {
		t.Errorf("the socket brought %d bytes in all; want at most 2 MB (the whole queue is about 40 MB)", b)
	}
	t.Logf("in all: %d socket bytes", got.Load())

	// The page carries its first window: a tab whose socket cannot open
	// (every WebSocket it makes closes at once, as a refused one does)
	// draws the queue from it, and says it is not live.
	cut := newTab(t)
	refuse := `window.WebSocket = class { constructor() { this.readyState = 3; setTimeout(() => this.onclose && this.onclose({ code: 1006 }), 0); } close() {} };`
	if _, err := chromedp.Call(cut.ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: refuse}); err != nil {
		t.Fatalf("refuse the socket: %v", err)
	}
	cut.open(srv.URL + "/lock?path=" + path)
	cut.until("drawn without a socket", `document.body.dataset.firstDraw && document.getElementById('lane').dataset.count === '99999'`)
	cut.until("the holder drawn", fmt.Sprintf(`document.querySelector('#lane [data-node=%s][data-state=holding]')`, jsString(names[0])))
	// The socket fails and is tried again: the page says so.
	cut.until("the socket retried", `document.body.dataset.socket === 'reconnecting'`)
	cut.until("said not live", `document.body.dataset.live === 'false' && !document.getElementById('banner').hidden && document.getElementById('banner').textContent.startsWith('NOT LIVE')`)
}

// BenchmarkLockViewFirstPaint100k opens the lock page of a 100,000-node
// queue (server warm) in headless Chromium and reports, per page load, the
// milliseconds from navigation start to the first node drawn
// (ms/queue-drawn, and the loads' median), the page's JavaScript heap then (MB/heap, as
// Runtime.getHeapUsage says, and MB/heap-gc after a collection) and the
// socket's payload bytes up to then (KB/socket).
//
//	CI=true go test ./e2e -run '^$' -bench FirstPaint100k -benchtime 5x -count 3
func BenchmarkLockViewFirstPaint100k(b *testing.B) {
	need(b)
	const path, n = "/e2e/bench/huge100k", 100_000
	zks, c := hugeZK(b)
	hugeQueue(b, c, path, n)
	srv := startServerOn(b, zks, "--watch", path)
	waitReadAndRecorded(b, srv.URL, n)
	var drawn, mb, mbgc, kb, html float64
	var each []float64
	b.ResetTimer()
	for b.Loop() {
		// A tab of its own per load, as a person opens the page: its heap
		// is this page's alone, and it is closed once measured, so that
		// the next load is a page opened alone, not beside the tabs
		// before it (each still drawing its live queue). The server
		// still answers what they asked of its history meanwhile.
		b.StopTimer()
		tb := newTab(b)
		got := socketBytes(b, tb)
		b.StartTimer()
		tb.open(srv.URL + "/lock?path=" + path)
		tb.until("queue drawn", `document.body.dataset.firstDraw`)
		ms := eval[float64](tb, `Number(document.body.dataset.firstDraw)`)
		// When the page's own HTML had come: what the server took for the
		// first paint, before any script ran.
		htmlIn := eval[float64](tb, `performance.getEntriesByType('navigation')[0].responseEnd`)
		if count := eval[string](tb, `document.getElementById('lane').dataset.count`); count != fmt.Sprint(n) {
			b.Fatalf("the lane counts %s nodes, want %d", count, n)
		}
		used := tabHeap(b, tb)
		if _, err := chromedp.Call(tb.ctx, heapprofiler.CollectGarbage, cdp.Empty{}); err != nil {
			b.Fatalf("collect garbage: %v", err)
		}
		afterGC := tabHeap(b, tb)
		hwm := peakRSS(b, srv.cmd.Process.Pid)
		b.Logf("first node drawn %.0f ms (the page's HTML in at %.0f ms), heap %.1f MB (%.1f MB after GC), socket %d bytes, serve's peak RSS %.0f MB", ms, htmlIn, used, afterGC, got.Load(), hwm)
		b.StopTimer()
		tb.close()
		b.StartTimer()
		drawn += ms
		each = append(each, ms)
		mb += used
		mbgc += afterGC
		kb += float64(got.Load()) / 1024
		html += htmlIn
	}
	b.ReportMetric(drawn/float64(b.N), "ms/queue-drawn")
	slices.Sort(each)
	b.ReportMetric(each[len(each)/2], "ms/queue-drawn-median")
	b.ReportMetric(mb/float64(b.N), "MB/heap")
	b.ReportMetric(mbgc/float64(b.N), "MB/heap-gc")
	b.ReportMetric(kb/float64(b.N), "KB/socket")
	b.ReportMetric(html/float64(b.N), "ms/html")
	// Once the loads are done, the figures, the density and the strip they
	// asked of the history included.
	time.Sleep(5 * time.Second)
	hwm := peakRSS(b, srv.cmd.Process.Pid)
	b.Logf("serve's peak RSS after the loads: %.0f MB", hwm)
	b.ReportMetric(hwm, "MB/serve-hwm")
	b.ReportMetric(0, "ns/op")
}

// peakRSS is process pid's peak resident set (VmHWM), in MB.
func peakRSS(t testing.TB, pid int) float64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("peak RSS: %v", err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err != nil {
				t.Fatalf("peak RSS %q: %v", line, err)
			}
			return kb / 1024
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

// tabHeap is the tab's JavaScript heap in use, in MB.
func tabHeap(t testing.TB, tb *tab) float64 {
	t.Helper()
	r, err := chromedp.Call(tb.ctx, runtime.GetHeapUsage, cdp.Empty{})
	if err != nil {
		t.Fatalf("heap usage: %v", err)
	}
	return r.UsedSize / (1 << 20)
}

// waitReadAndRecorded waits until the server at url has read a queue of n
// nodes, every node's data included (no "filling"), and recorded what it
// read (the history's event count still for two seconds: the watch
// table's first whole read of a big queue is as many findings, and a page
// waits up to half a second for the recorder to say whether the history
// records). A page opened then is the page of a warm server, and a loaded
// machine's slow first read does not eat the tab's time.
func waitReadAndRecorded(b *testing.B, url string, n int) {
	b.Helper()
	read := fmt.Sprintf(`"queueLength":%d`, n)
	recorded := regexp.MustCompile(`(?m)^zklockviz_history_events_total (\d+)$`)
	for deadline, last, still := time.Now().Add(10*time.Minute), "", 0; ; time.Sleep(time.Second) {
		if body := get(b, url+"/api/v1/locks"); strings.Contains(body, read) && !strings.Contains(body, `"filling"`) {
			m := recorded.FindStringSubmatch(get(b, url+"/metrics"))
			if m != nil && m[1] == last {
				still++
			} else {
				still = 0
			}
			if m != nil {
				last = m[1]
			}
			if still == 2 {
				return
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("the server did not read and record the %d nodes in 10 minutes", n)
		}
	}
}

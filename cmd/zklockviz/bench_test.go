package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	rtmetrics "runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/zklockviz/zklockviz/hub"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/third_party/zk"
	"github.com/zklockviz/zklockviz/web"
)

// The end-to-end benchmarks: a real ZooKeeper (zklocal), the real serve
// path, real websocket viewers (coder/websocket clients offering
// permessage-deflate, as browsers do).
//
//	go test ./cmd/zklockviz -run '^$' -bench BenchmarkChangeToFrame -benchtime 200x
//	go test ./cmd/zklockviz -run '^$' -bench BenchmarkMemory -benchtime 3x

var (
	benchRun = strconv.FormatInt(time.Now().UnixNano()%1e9, 36) // fresh paths per process
	benchSeq atomic.Int64                                       // and per invocation (-count)
)

// benchRoot is a fresh parent path for one benchmark invocation.
func benchRoot() string { return fmt.Sprintf("/bench-%s-%d", benchRun, benchSeq.Add(1)) }

// lockName is a go-zookeeper lock node prefix for client i; ZooKeeper adds
// the sequence number.
func lockName(i int) string { return fmt.Sprintf("_c_%032x-lock-", i) }

// fillQueue creates n go-zookeeper lock nodes under path, owned by c's
// session.
func fillQueue(b testing.TB, c *zk.Conn, path string, n, first int) {
	b.Helper()
	acl := zk.WorldACL(zk.PermAll)
	p := ""
	for _, part := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		p += "/" + part
		if _, err := c.Create(p, nil, 0, acl); err != nil && err != zk.ErrNodeExists {
			b.Fatalf("create %s: %v", p, err)
		}
	}
	for start := 0; start < n; start += 500 {
		var ops []any
		for i := start; i < min(n, start+500); i++ {
			ops = append(ops, &zk.CreateRequest{Path: path + "/" + lockName(first+i), Data: []byte(fmt.Sprintf("worker-%d", i)),
				Acl: acl, Flags: zk.FlagEphemeral | zk.FlagSequence})
		}
		if _, err := c.Multi(ops...); err != nil {
			b.Fatalf("create children of %s: %v", path, err)
		}
	}
}

// startMain runs the serve command in-process on a free loopback port.
func startMain(b testing.TB, args ...string) *Main {
	b.Helper()
	m := NewMain(io.Discard, io.Discard)
	m.Getenv = func(string) string { return "" }
	if err := m.ParseFlags(append([]string{"--addr", "127.0.0.1:0", "--log-level", "error"}, args...)); err != nil {
		b.Fatalf("ParseFlags: %v", err)
	}
	if err := m.Run(context.Background()); err != nil {
		b.Fatalf("Run: %v", err)
	}
	b.Cleanup(func() { m.Close() })
	return m
}

// waitQueues waits until every path is served with n nodes.
func waitQueues(b testing.TB, base string, paths []string, n int) {
	b.Helper()
	var list web.LocksResponse
	ready := 0
	pollJSON(b, base+"/api/v1/locks", &list, func() bool {
		ready = 0
		for _, l := range list.Locks {
			if slices.Contains(paths, l.Path) && l.QueueLength == n && l.Connection == "connected" {
				ready++
			}
		}
		return ready == len(paths)
	}, func() string { return fmt.Sprintf("%d of %d queues read with %d nodes", ready, len(paths), n) })
}

// waitVerdict waits until the watcher has judged path's queue by the
// ensemble's watch table: fillQueue's nodes belong to no client that
// watches, so once the table has been read (twice, to tell a missing watch
// from one not set yet) every waiter is an orphan and every node's edge
// known. That is the watcher's start-up, once per lock and changing every
// node, not a change of the queue: measured inside the loop, it put one
// whole 1,000-node snapshot, deflated per socket, among the changes, 100 of
// the 200 samples above the p99 of 200 changes × 100 viewers.
func waitVerdict(b testing.TB, base, path string) {
	b.Helper()
	var s lockqueue.Snapshot
	pollJSON(b, base+"/api/v1/lock?path="+path, &s, func() bool {
		return slices.ContainsFunc(s.Alerts, func(a lockqueue.Alert) bool { return a.Kind == lockqueue.AlertOrphan })
	}, func() string {
		return fmt.Sprintf("%s: no watch-table verdict (orphan alert) yet; alerts %v", path, s.Alerts)
	})
}

// pollJSON decodes url into v until ready says so, failing with what after
// a generous bound.
func pollJSON(b testing.TB, url string, v any, ready func() bool, what func() string) {
	b.Helper()
	deadline := time.Now().Add(5 * waitTimeout)
	for {
		resp, err := http.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(v)
		resp.Body.Close()
		if err != nil {
			b.Fatal(err)
		}
		if ready() {
			return
		}
		if time.Now().After(deadline) {
			b.Fatal(what())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// benchViewer is one websocket viewer. It waits for a frame that shows a
// change: the creation of a node whose name starts with a prefix, or the
// removal of a node.
type benchViewer struct {
	c      *websocket.Conn
	frames atomic.Int64
	shows  func(frame []byte, name string) bool // may the frame still show the node

	mu      sync.Mutex
	created []byte // awaiting a frame that names this prefix
	removed string // awaiting a frame without this node
	since   time.Time
	done    func(time.Duration)
}

func dialViewer(b testing.TB, base, path string, wg *sync.WaitGroup) *benchViewer {
	return dialWS(b, "ws"+strings.TrimPrefix(base, "http")+"/ws?path="+path, showsNode, nil, wg)
}

// dialWS dials a viewer of url; shows reads its frames, and wire, when not
// nil, counts the bytes it receives on the TCP connection (after any
// compression: what crossed the wire).
func dialWS(b testing.TB, url string, shows func([]byte, string) bool, wire *atomic.Int64, wg *sync.WaitGroup) *benchViewer {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	opts := &websocket.DialOptions{CompressionMode: websocket.CompressionNoContextTakeover}
	if wire != nil {
		var d net.Dialer
		opts.HTTPClient = &http.Client{Transport: &http.Transport{
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				c, err := d.DialContext(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				return &countingConn{Conn: c, n: wire}, nil
			},
		}}
	}
	c, _, err := websocket.Dial(ctx, url, opts)
	if err != nil {
		b.Fatalf("dial %s: %v", url, err)
	}
	c.SetReadLimit(64 << 20)
	v := &benchViewer{c: c, shows: shows}
	wg.Go(v.loop)
	return v
}

// countingConn counts the bytes read from a connection.
type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// expect arms the viewer; done gets the time from since to the frame.
func (v *benchViewer) expect(created []byte, removed string, since time.Time, done func(time.Duration)) {
	v.mu.Lock()
	v.created, v.removed, v.since, v.done = created, removed, since, done
	v.mu.Unlock()
}

func (v *benchViewer) loop() {
	var buf bytes.Buffer
	for {
		typ, r, err := v.c.Reader(context.Background())
		if err != nil {
			return
		}
		buf.Reset()
		if _, err := buf.ReadFrom(r); err != nil || typ != websocket.MessageText {
			return
		}
		at := time.Now()
		v.frames.Add(1)
		v.mu.Lock()
		var hit bool
		switch {
		case v.created != nil:
			// The prefix is new, so the first frame naming it is the one
			// that carries the creation.
			hit = bytes.Contains(buf.Bytes(), v.created)
		case v.removed != "":
			hit = !v.shows(buf.Bytes(), v.removed)
		}
		var done func(time.Duration)
		if hit {
			done = v.done
			v.created, v.removed, v.done = nil, "", nil
		}
		since := v.since
		v.mu.Unlock()
		if done != nil {
			done(at.Sub(since))
		}
		if buf.Cap() > 64<<10 {
			buf = bytes.Buffer{} // a whole snapshot: do not keep its room
		}
	}
}

// showsNode reports whether a frame may still show name: a snapshot that
// lists it, or a delta that does not remove it.
func showsNode(b []byte, name string) bool {
	var f web.Frame
	if json.Unmarshal(b, &f) != nil {
		return true
	}
	if f.Snapshot != nil {
		return slices.ContainsFunc(f.Snapshot.Nodes, func(n lockqueue.Node) bool { return n.Name == name })
	}
	return f.Delta == nil || !slices.Contains(f.Remove, name)
}

func percentile(sorted []time.Duration, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p)
	return float64(sorted[i]) / float64(time.Millisecond)
}

// change creates one node per queue (viewers[i] watches paths[i]), waits
// until every viewer has the frame showing it, then deletes them and waits
// the same way. It returns the latencies of the creation, one per viewer.
func change(b testing.TB, c *zk.Conn, paths []string, viewers [][]*benchViewer, id int, probe *hubProbe) []time.Duration {
	b.Helper()
	return slices.Concat(changeByGroup(b, c, paths, viewers, id, probe)...)
}

// changeByGroup is change answering each group of viewers' latencies
// apart. Groups may watch the same path (paths may repeat): its lock gets
// one node, which every group watching it must see.
func changeByGroup(b testing.TB, c *zk.Conn, paths []string, viewers [][]*benchViewer, id int, probe *hubProbe) [][]time.Duration {
	b.Helper()
	var mu sync.Mutex
	lat := make([][]time.Duration, len(viewers))
	var wg sync.WaitGroup
	n := 0
	for _, vs := range viewers {
		n += len(vs)
	}
	wg.Add(n)
	record := func(g int) func(time.Duration) {
		return func(d time.Duration) {
			mu.Lock()
			lat[g] = append(lat[g], d)
			mu.Unlock()
			wg.Done()
		}
	}
	prefix := lockName(0xbe000000 + id)
	start := time.Now()
	if probe != nil {
		probe.expect(prefix, start)
	}
	for g, vs := range viewers {
		for _, v := range vs {
			v.expect([]byte(prefix), "", start, record(g))
		}
	}
	created := map[string]string{}
	for _, p := range paths {
		if _, ok := created[p]; ok {
			continue
		}
		full, err := c.Create(p+"/"+prefix, nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
		if err != nil {
			b.Fatalf("create: %v", err)
		}
		created[p] = full
	}
	waitGroup(b, &wg, "every viewer to see the new node")
	if probe != nil {
		probe.wait(b)
	}

	wg.Add(n)
	for i, vs := range viewers {
		full := created[paths[i]]
		name := full[strings.LastIndex(full, "/")+1:]
		for _, v := range vs {
			v.expect(nil, name, time.Now(), func(time.Duration) { wg.Done() })
		}
	}
	for _, full := range created {
		if err := c.Delete(full, -1); err != nil {
			b.Fatalf("delete: %v", err)
		}
	}
	waitGroup(b, &wg, "every viewer to see the node go")
	return lat
}

func waitGroup(b testing.TB, wg *sync.WaitGroup, what string) {
	b.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(waitTimeout):
		b.Fatalf("timed out waiting for %s", what)
	}
}

// hubProbe times the publish of a snapshot with a new node: the watcher's
// share of the latency (or, for the naive broadcaster, its listing's).
type hubProbe struct {
	sub *hub.Sub // nil for the naive broadcaster's
	mu  sync.Mutex
	pre string
	at  time.Time
	hit chan struct{}
	lat []time.Duration
}

// newHubProbe subscribes to the hub directly.
func newHubProbe(sub *hub.Sub) *hubProbe {
	p := &hubProbe{sub: sub}
	go func() {
		for {
			select {
			case <-sub.Done():
				return
			case <-sub.C():
			}
			snap, ok := sub.Next()
			now := time.Now()
			if ok {
				p.see(now, func(pre string) bool {
					return slices.ContainsFunc(snap.Nodes, func(n lockqueue.Node) bool { return strings.HasPrefix(n.Name, pre) })
				})
			}
		}
	}()
	return p
}

// see records a state seen at now; has tells whether it names a prefix.
func (p *hubProbe) see(now time.Time, has func(prefix string) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pre != "" && has(p.pre) {
		p.lat = append(p.lat, now.Sub(p.at))
		p.pre = ""
		close(p.hit)
	}
}

func (p *hubProbe) expect(prefix string, since time.Time) {
	p.mu.Lock()
	p.pre, p.at, p.hit = prefix, since, make(chan struct{})
	p.mu.Unlock()
}

func (p *hubProbe) wait(b testing.TB) {
	p.mu.Lock()
	hit := p.hit
	p.mu.Unlock()
	select {
	case <-hit:
	case <-time.After(waitTimeout):
		b.Fatal("the hub never published the new node")
	}
}

// BenchmarkChangeToFrame measures a one-node change (a waiter joining) in a
// 1,000-node go-zookeeper queue, from the create sent to ZooKeeper to the
// frame showing it read at each viewer: p50-ms and p99-ms over every
// (change, viewer) pair. reads/change is the ZooKeeper reads the watcher
// sent per change (the join and the leave both count), which must not grow
// with viewers. publish-p50-ms and publish-p99-ms time the same changes to
// the snapshot's publish in the hub: the watcher's share, before any
// viewer. ns/op is not meaningful and reported as 0. The vs-naive
// sub-benchmark measures the same against a naive broadcaster in one run
// (benchVsNaive).
//
//	go test ./cmd/zklockviz -run '^$' -bench BenchmarkChangeToFrame -benchtime 200x
func BenchmarkChangeToFrame(b *testing.B) {
	zks := sharedZK(b)
	for _, viewers := range []int{1, 100} {
		b.Run(fmt.Sprintf("viewers=%d", viewers), func(b *testing.B) {
			path := fmt.Sprintf("%s/latency-%d", benchRoot(), viewers)
			c := connect(b, zks.Addr())
			fillQueue(b, c, path, 1000, 0)
			m := startMain(b, "--zk", zks.Addr(), "--watch", path)
			waitQueues(b, m.URL(), []string{path}, 1000)
			waitVerdict(b, m.URL(), path)

			vs := dialViewers(b, viewers, func(wg *sync.WaitGroup) *benchViewer { return dialViewer(b, m.URL(), path, wg) })

			probe := newHubProbe(m.hub.Subscribe(path))
			b.Cleanup(probe.sub.Close)
			var all []time.Duration
			var reads int64
			changes := 0
			for b.Loop() {
				before := m.watcher.Reads()
				all = append(all, change(b, c, []string{path}, [][]*benchViewer{vs}, changes, probe)...)
				reads += m.watcher.Reads() - before
				changes++
				// An isolated change, not the watcher's rate limit on
				// bursts (zkwatch settle, 10ms).
				time.Sleep(20 * time.Millisecond)
			}
			slices.Sort(all)
			b.ReportMetric(percentile(all, 0.50), "p50-ms")
			b.ReportMetric(percentile(all, 0.99), "p99-ms")
			slices.Sort(probe.lat)
			b.ReportMetric(percentile(probe.lat, 0.50), "publish-p50-ms")
			b.ReportMetric(percentile(probe.lat, 0.99), "publish-p99-ms")
			b.ReportMetric(float64(reads)/float64(2*changes), "reads/change")
			b.ReportMetric(0, "ns/op")
		})
	}
	for _, v := range []vsNaive{
		{name: "vs-naive"},
		{name: "vs-naive-binary", binary: true},
		{name: "vs-naive-binary-shared", binary: true, shared: true},
		// The lock page's socket: the window its lane draws and its parts.
		{name: "vs-naive-page", view: "&window=0:100&parts=1"},
		{name: "vs-naive-binary-page", binary: true, view: "&window=0:100&parts=1"},
	} {
		v.viewers = 100
		b.Run(fmt.Sprintf("%s,viewers=%d", v.name, v.viewers), func(b *testing.B) { benchVsNaive(b, zks.Addr(), v) })
	}
}

// dialViewers dials n viewers, closes them at the end of b, and returns once
// each has its first frame.
func dialViewers(b testing.TB, n int, dial func(*sync.WaitGroup) *benchViewer) []*benchViewer {
	b.Helper()
	var wg sync.WaitGroup
	vs := make([]*benchViewer, n)
	for i := range vs {
		vs[i] = dial(&wg)
	}
	b.Cleanup(func() {
		for _, v := range vs {
			v.c.CloseNow()
		}
		wg.Wait()
	})
	for _, v := range vs {
		for v.frames.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	return vs
}

// benchWarmChanges is how many changes each side of benchVsNaive makes
// before it measures.
const benchWarmChanges = 10

// benchVsNaive runs zklockviz and the naive broadcaster (naive_test.go) side
// by side on one ZooKeeper, each with its own 1,000-node queue and the same
// number of viewers, alternating changes between them (which goes first
// alternates too), so that the machine's load, which changes by the second
// on a shared box, weighs on both alike. p50-ms and p99-ms are zklockviz's,
// naive-p50-ms and naive-p99-ms the baseline's, and the ratios are
// zklockviz's over the naive one's. B/change is the bytes every viewer
// together received on the wire per change (a create and a delete are two).
// publish-p50-ms is when a hub subscriber beside the viewers read the new
// node, so it includes that subscriber's wake-up among the 100 sockets';
// naive-list-p50-ms is when the naive broadcaster had its listing, before
// any write.
//
// With shared, both watch one queue and every change is measured on both
// sides at once: a moment the machine stalls, which lands on one side's
// change when they alternate, lands on both. Which side ZooKeeper tells
// first is its own choice.
//
// With binary, zklockviz is the binary as a user starts it, `zklockviz
// serve` with its default flags (the history on, under the tests'
// $XDG_STATE_HOME) in a process of its own, and the naive broadcaster is in
// a process of its own too (TestNaiveProcess), so that neither shares the
// viewers' runtime; there are no publish or listing probes. view is
// added to each viewer's /ws URL: "&window=0:100&parts=1" is a lock page's
// socket.
//
//	go test ./cmd/zklockviz -run '^$' -bench 'BenchmarkChangeToFrame/vs-naive,' -benchtime 200x -count 5
//	go test ./cmd/zklockviz -run '^$' -bench 'BenchmarkChangeToFrame/vs-naive-binary' -benchtime 30x -count 5
//
// vsNaive is one way to run benchVsNaive.
type vsNaive struct {
	name    string
	viewers int
	binary  bool
	view    string
	shared  bool
}

func benchVsNaive(b *testing.B, zkAddr string, v vsNaive) {
	viewers, binary, view := v.viewers, v.binary, v.view
	type side struct {
		path  string
		vs    []*benchViewer
		wire  atomic.Int64
		bytes int64
		lat   []time.Duration
		probe *hubProbe
	}
	root := benchRoot()
	var zkl, naive side
	zkl.path, naive.path = root+"/zklockviz", root+"/naive"
	if v.shared {
		naive.path = zkl.path
	}
	c := connect(b, zkAddr)
	fillQueue(b, c, zkl.path, 1000, 0)
	if !v.shared {
		fillQueue(b, c, naive.path, 1000, 0)
	}

	var base string
	if binary {
		s := startServe(b, "--zk", zkAddr, "--watch", zkl.path, "--addr", "127.0.0.1:0")
		base = s.url
	} else {
		m := startMain(b, "--zk", zkAddr, "--watch", zkl.path)
		base = m.URL()
		zkl.probe = newHubProbe(m.hub.Subscribe(zkl.path))
		b.Cleanup(zkl.probe.sub.Close)
	}
	waitQueues(b, base, []string{zkl.path}, 1000)
	waitVerdict(b, base, zkl.path)
	url := "ws" + strings.TrimPrefix(base, "http") + "/ws?path=" + zkl.path + view
	zkl.vs = dialViewers(b, viewers, func(wg *sync.WaitGroup) *benchViewer { return dialWS(b, url, showsNode, &zkl.wire, wg) })
	naiveURL := ""
	if binary {
		naiveURL = startNaiveProcess(b, zkAddr, naive.path)
	} else {
		naive.probe = &hubProbe{}
		naiveURL = startNaive(b, zkAddr, naive.path, naive.probe).url
	}
	naive.vs = dialViewers(b, viewers, func(wg *sync.WaitGroup) *benchViewer { return dialWS(b, naiveURL, naiveShows, &naive.wire, wg) })

	// Changes not counted, on each side: the shared ZooKeeper's JVM compiles
	// the requests each side makes (zklockviz's reads of a new node and its
	// persistent watch's events, the naive broadcaster's listings) as it
	// first serves them, which a production server did long ago. Without
	// them a set's first run measured the JIT (p99 ratio 1.44 and 2.21 in
	// the first runs of two sets, 0.45–1.0 in the runs after).
	both := func(id int) {
		before := []int64{zkl.wire.Load(), naive.wire.Load()}
		lat := changeByGroup(b, c, []string{zkl.path, naive.path}, [][]*benchViewer{zkl.vs, naive.vs}, id, nil)
		if id < 0 {
			return
		}
		for k, s := range []*side{&zkl, &naive} {
			s.lat = append(s.lat, lat[k]...)
			s.bytes += s.wire.Load() - before[k]
		}
	}
	for w := range benchWarmChanges {
		if v.shared {
			both(-1 - w)
			time.Sleep(20 * time.Millisecond)
			continue
		}
		for _, s := range []*side{&zkl, &naive} {
			change(b, c, []string{s.path}, [][]*benchViewer{s.vs}, -1-w, nil)
			time.Sleep(20 * time.Millisecond)
		}
	}
	i := 0
	for b.Loop() {
		if v.shared {
			both(i)
			time.Sleep(20 * time.Millisecond)
			i++
			continue
		}
		order := []*side{&zkl, &naive}
		if i%2 == 1 {
			order[0], order[1] = order[1], order[0]
		}
		for _, s := range order {
			before := s.wire.Load()
			s.lat = append(s.lat, change(b, c, []string{s.path}, [][]*benchViewer{s.vs}, i, s.probe)...)
			s.bytes += s.wire.Load() - before
			// An isolated change, not the watcher's rate limit on bursts.
			time.Sleep(20 * time.Millisecond)
		}
		i++
	}
	slices.Sort(zkl.lat)
	slices.Sort(naive.lat)
	p50, p99 := percentile(zkl.lat, 0.50), percentile(zkl.lat, 0.99)
	np50, np99 := percentile(naive.lat, 0.50), percentile(naive.lat, 0.99)
	perChange := func(s *side) float64 { return float64(s.bytes) / float64(2*i) }
	b.ReportMetric(p50, "p50-ms")
	b.ReportMetric(p99, "p99-ms")
	b.ReportMetric(np50, "naive-p50-ms")
	b.ReportMetric(np99, "naive-p99-ms")
	if zkl.probe != nil {
		slices.Sort(zkl.probe.lat)
		b.ReportMetric(percentile(zkl.probe.lat, 0.50), "publish-p50-ms")
		b.ReportMetric(percentile(zkl.probe.lat, 0.99), "publish-p99-ms")
	}
	if naive.probe != nil {
		slices.Sort(naive.probe.lat)
		b.ReportMetric(percentile(naive.probe.lat, 0.50), "naive-list-p50-ms")
		b.ReportMetric(percentile(naive.probe.lat, 0.99), "naive-list-p99-ms")
	}
	b.ReportMetric(p50/np50, "p50-ratio")
	b.ReportMetric(p99/np99, "p99-ratio")
	b.ReportMetric(perChange(&zkl), "B/change")
	b.ReportMetric(perChange(&naive), "naive-B/change")
	b.ReportMetric(perChange(&zkl)/perChange(&naive), "bytes-ratio")
	b.ReportMetric(0, "ns/op")
}

// procStatus reads kB fields of /proc/<pid>/status as MB.
func procStatus(pid string, keys ...string) map[string]float64 {
	out := map[string]float64{}
	f, err := os.Open("/proc/" + pid + "/status")
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || !slices.Contains(keys, k) {
			continue
		}
		kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
		out[k] = kb / 1024
	}
	return out
}

// BenchmarkMemory serves 100 locks of 1,000 nodes each to 100 viewers (one
// per lock), and each op changes every lock once (a node joins and leaves).
// The in-process variant runs Main in this process and reports the peak
// heap in use (sampled), the live heap after a GC at the end and at its
// peak (as each collection marked it, sampled), and VmRSS and VmHWM; the
// viewers' side is in the same process and included. The
// binary variant runs `zklockviz serve` as its own process and reports its
// VmHWM and peak heap in use (from its /metrics), the server alone. The
// target is 200 MB. The in-process figures are only clean for the first
// run in a process: run it with -count 1.
//
//	go test ./cmd/zklockviz -run '^$' -bench BenchmarkMemory -benchtime 3x
func BenchmarkMemory(b *testing.B) {
	zks := sharedZK(b)
	const locks, nodes = 100, 1000
	root := benchRoot() + "/mem"
	paths := make([]string, locks)
	for i := range paths {
		paths[i] = fmt.Sprintf("%s/lock-%03d", root, i)
	}
	c := connect(b, zks.Addr())
	for i, p := range paths {
		fillQueue(b, c, p, nodes, i*nodes)
	}
	args := []string{"--zk", zks.Addr()}
	for _, p := range paths {
		args = append(args, "--watch", p)
	}

	run := func(b *testing.B, base string, sample func()) {
		waitQueues(b, base, paths, nodes)
		var wg sync.WaitGroup
		vs := make([][]*benchViewer, locks)
		for i, p := range paths {
			vs[i] = []*benchViewer{dialViewer(b, base, p, &wg)}
		}
		defer func() {
			for _, v := range vs {
				v[0].c.CloseNow()
			}
			wg.Wait()
		}()
		for _, v := range vs {
			for v[0].frames.Load() == 0 {
				time.Sleep(time.Millisecond)
			}
		}
		stop := make(chan struct{})
		var sampled sync.WaitGroup
		sampled.Go(func() {
			t := time.NewTicker(50 * time.Millisecond)
			defer t.Stop()
			for {
				sample()
				select {
				case <-stop:
					return
				case <-t.C:
				}
			}
		})
		i := 0
		for b.Loop() {
			change(b, c, paths, vs, 1_000_000+i, nil)
			i++
		}
		close(stop)
		sampled.Wait()
		b.ReportMetric(0, "ns/op")
	}

	b.Run("in-process", func(b *testing.B) {
		m := startMain(b, args...)
		var peak uint64
		var ms runtime.MemStats
		prof := os.Getenv("ZKLOCKVIZ_BENCH_HEAPPROFILE") // where to write a heap profile at the peak
		// The live heap as the last collection marked it: what the peak
		// is made of, apart from the collector's headroom.
		live := []rtmetrics.Sample{{Name: "/gc/heap/live:bytes"}}
		var peakLive uint64
		run(b, m.URL(), func() {
			rtmetrics.Read(live)
			peakLive = max(peakLive, live[0].Value.Uint64())
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak && prof != "" {
				if f, err := os.Create(prof); err == nil {
					pprof.Lookup("heap").WriteTo(f, 0)
					f.Close()
				}
			}
			peak = max(peak, ms.HeapInuse)
		})
		runtime.GC()
		runtime.ReadMemStats(&ms)
		st := procStatus("self", "VmRSS", "VmHWM")
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-inuse-MB")
		b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "live-heap-MB")
		b.ReportMetric(float64(peakLive)/(1<<20), "peak-live-heap-MB")
		b.ReportMetric(st["VmRSS"], "rss-MB")
		b.ReportMetric(st["VmHWM"], "hwm-MB")
	})

	b.Run("binary", func(b *testing.B) {
		s := startServe(b, append(args, "--addr", "127.0.0.1:0", "--log-level", "error")...)
		pid := strconv.Itoa(s.cmd.Process.Pid)
		var peak float64
		run(b, s.url, func() {
			if v := metricValue(s.url, "go_memstats_heap_inuse_bytes"); v > peak {
				peak = v
			}
		})
		st := procStatus(pid, "VmRSS", "VmHWM")
		b.ReportMetric(peak/(1<<20), "peak-heap-inuse-MB")
		b.ReportMetric(st["VmRSS"], "rss-MB")
		b.ReportMetric(st["VmHWM"], "hwm-MB")
	})
}

// metricValue reads one unlabelled metric from /metrics; 0 when missing.
func metricValue(base, name string) float64 {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}

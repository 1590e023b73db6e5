package main

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkChangeToFrameRecording measures what recording costs the live
// view: two servers on one ZooKeeper, one with --history=off and one
// recording, each with its own 1,000-node queue and the same viewers,
// changes alternating between them (which goes first alternates too) so
// the machine's load weighs on both alike. p99-ratio is the recording
// server's change→frame p99 over the other's; the issue wants it within
// 1.10.
//
//	go test ./cmd/zklockviz -run '^$' -bench BenchmarkChangeToFrameRecording -benchtime 200x
func BenchmarkChangeToFrameRecording(b *testing.B) {
	zks := sharedZK(b)
	const viewers = 10
	type side struct {
		path  string
		vs    []*benchViewer
		lat   []time.Duration
		probe *hubProbe
	}
	root := benchRoot()
	c := connect(b, zks.Addr())
	var off, on side
	off.path, on.path = root+"/off", root+"/on"
	for _, s := range []*side{&off, &on} {
		fillQueue(b, c, s.path, 1000, 0)
		args := []string{"--zk", zks.Addr(), "--watch", s.path, "--history=off"}
		if s == &on {
			args = []string{"--zk", zks.Addr(), "--watch", s.path, "--data-dir", b.TempDir()}
		}
		m := startMain(b, args...)
		if (s == &on) != (m.hist.recorder != nil) {
			b.Fatalf("%s: recording %v", s.path, m.hist.recorder != nil)
		}
		waitQueues(b, m.URL(), []string{s.path}, 1000)
		s.vs = dialViewers(b, viewers, func(wg *sync.WaitGroup) *benchViewer { return dialViewer(b, m.URL(), s.path, wg) })
		s.probe = newHubProbe(m.hub.Subscribe(s.path))
		b.Cleanup(s.probe.sub.Close)
	}
	i := 0
	for b.Loop() {
		order := []*side{&off, &on}
		if i%2 == 1 {
			order[0], order[1] = order[1], order[0]
		}
		for _, s := range order {
			s.lat = append(s.lat, change(b, c, []string{s.path}, [][]*benchViewer{s.vs}, i, s.probe)...)
			// An isolated change, not the watcher's rate limit on bursts.
			time.Sleep(20 * time.Millisecond)
		}
		i++
	}
	slices.Sort(off.lat)
	slices.Sort(on.lat)
	b.ReportMetric(percentile(off.lat, 0.50), "off-p50-ms")
	b.ReportMetric(percentile(off.lat, 0.99), "off-p99-ms")
	b.ReportMetric(percentile(on.lat, 0.50), "on-p50-ms")
	b.ReportMetric(percentile(on.lat, 0.99), "on-p99-ms")
	b.ReportMetric(percentile(on.lat, 0.99)/percentile(off.lat, 0.99), "p99-ratio")
	b.ReportMetric(0, "ns/op")
}

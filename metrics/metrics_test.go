package metrics_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/zklockviz/zklockviz/hub"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/lockservice"
	"github.com/zklockviz/zklockviz/metrics"
)

// stateReader is a lockservice.Reader that only reports a fixed
// connection state: all the collector asks of a reader. Its other methods
// are the nil interface's and would panic if the collector called them.
type stateReader struct {
	lockservice.Reader
	state lockqueue.Connection
}

func (r stateReader) Connection() lockqueue.Connection { return r.state }

// services is a registry's All over services with readers in the given
// states (by service name, in order) and one classroom-only service.
func services(t *testing.T, states ...[2]string) func() []lockservice.Service {
	t.Helper()
	reg := &lockservice.Registry{}
	for _, st := range states {
		svc := lockservice.Service{Name: st[0], CheckName: func(string) error { return nil },
			Reader: stateReader{state: lockqueue.Connection(st[1])}}
		if err := reg.Register(svc); err != nil {
			t.Fatal(err)
		}
	}
	if err := reg.Register(lockservice.Service{Name: "classroom-only", CheckName: func(string) error { return nil }}); err != nil {
		t.Fatal(err)
	}
	return reg.All
}

// scrape serves the handler and parses what Prometheus would read.
func scrape(t *testing.T, h http.Handler) map[string][]sample {
	t.Helper()
	ts := httptest.NewServer(h)
	defer ts.Close()
	resp, err := http.Get(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("not the Prometheus text format: %v", err)
	}
	out := map[string][]sample{}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			s := sample{labels: map[string]string{}}
			for _, l := range m.GetLabel() {
				s.labels[l.GetName()] = l.GetValue()
			}
			switch {
			case m.Gauge != nil:
				s.value = m.GetGauge().GetValue()
			case m.Counter != nil:
				s.value = m.GetCounter().GetValue()
			}
			out[name] = append(out[name], s)
		}
	}
	return out
}

type sample struct {
	labels map[string]string
	value  float64
}

func value(t *testing.T, got map[string][]sample, name string, labels map[string]string) (float64, bool) {
	t.Helper()
next:
	for _, s := range got[name] {
		for k, v := range labels {
			if s.labels[k] != v {
				continue next
			}
		}
		return s.value, true
	}
	return 0, false
}

// series is one expected sample: a metric, the labels it must have (others
// may be there too), its value.
type series struct {
	name   string
	labels map[string]string
	want   float64
}

func checkSeries(t *testing.T, got map[string][]sample, tests []series) {
	t.Helper()
	for _, tc := range tests {
		v, ok := value(t, got, tc.name, tc.labels)
		if !ok {
			t.Errorf("%s%v missing", tc.name, tc.labels)
			continue
		}
		if v != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, v, tc.want)
		}
	}
}

func TestLockMetrics(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	h := hub.New()
	h.Publish(lockqueue.Snapshot{
		Path: "/locks/orders", Connection: lockqueue.Connected,
		Nodes: []lockqueue.Node{
			{Name: "W_0000000001", Holding: true, Ctime: now.Add(-90 * time.Second)},
			{Name: "W_0000000002", Ctime: now.Add(-60 * time.Second)},
			{Name: "R_0000000003", Ctime: now.Add(-10 * time.Second)},
			{Name: "junk", Foreign: true, Ctime: now.Add(-time.Hour)},
		},
		Alerts: []lockqueue.Alert{
			{Kind: lockqueue.AlertZombie, Nodes: []string{"W_0000000001"}},
			{Kind: lockqueue.AlertZombie, Nodes: []string{"W_0000000002"}},
			{Kind: lockqueue.AlertForeign, Nodes: []string{"junk"}},
		},
	})
	h.Publish(lockqueue.Snapshot{Path: "/locks/idle", Connection: lockqueue.Reconnecting})
	sub := h.Subscribe("/locks/orders")
	defer sub.Close()

	got := scrape(t, metrics.Handler(metrics.Config{
		Hub: h, Now: func() time.Time { return now },
		Services: services(t, [2]string{lockqueue.ZooKeeper, string(lockqueue.Reconnecting)}),
	}))

	orders := map[string]string{"service": "zookeeper", "path": "/locks/orders"}
	idle := map[string]string{"service": "zookeeper", "path": "/locks/idle"}
	tests := []series{
		{"zklockviz_lock_queue_length", orders, 3},
		{"zklockviz_lock_holders", orders, 1},
		{"zklockviz_lock_waiters", orders, 2},
		{"zklockviz_lock_oldest_wait_seconds", orders, 60},
		{"zklockviz_lock_holder_age_seconds", orders, 90},
		{"zklockviz_lock_live", orders, 1},
		{"zklockviz_lock_alerts", map[string]string{"service": "zookeeper", "path": "/locks/orders", "kind": "zombie"}, 2},
		{"zklockviz_lock_alerts", map[string]string{"service": "zookeeper", "path": "/locks/orders", "kind": "foreign-child"}, 1},
		{"zklockviz_lock_queue_length", idle, 0},
		{"zklockviz_lock_oldest_wait_seconds", idle, 0},
		{"zklockviz_lock_holder_age_seconds", idle, 0},
		{"zklockviz_lock_live", idle, 0},
		{"zklockviz_zookeeper_connection", map[string]string{"state": "reconnecting"}, 1},
		{"zklockviz_zookeeper_connection", map[string]string{"state": "connected"}, 0},
		{"zklockviz_zookeeper_connection", map[string]string{"state": "expired"}, 0},
		{"zklockviz_connection", map[string]string{"service": "zookeeper", "state": "reconnecting"}, 1},
		{"zklockviz_connection", map[string]string{"service": "zookeeper", "state": "connected"}, 0},
		{"zklockviz_locks", nil, 2},
		{"zklockviz_viewers", nil, 1},
		{"zklockviz_snapshots_published_total", nil, 2},
		{"zklockviz_snapshots_coalesced_total", nil, 0},
	}
	checkSeries(t, got, tests)
	if _, ok := value(t, got, "zklockviz_lock_alerts", idle); ok {
		t.Error("a lock without alerts has an alerts series")
	}
	if len(got["go_goroutines"]) == 0 || len(got["process_resident_memory_bytes"]) == 0 {
		t.Error("the Go runtime and process collectors are missing")
	}
}

func TestNoWatcherNoConnectionSeries(t *testing.T) {
	for _, cfg := range []metrics.Config{
		{Hub: hub.New()},
		{Hub: hub.New(), Services: services(t)}, // a classroom-only service
	} {
		got := scrape(t, metrics.Handler(cfg))
		for _, name := range []string{"zklockviz_zookeeper_connection", "zklockviz_connection"} {
			if n := len(got[name]); n != 0 {
				t.Errorf("%d %s series without a reader, want none", n, name)
			}
		}
	}
	got := scrape(t, metrics.Handler(metrics.Config{Hub: hub.New()}))
	if v, ok := value(t, got, "zklockviz_locks", nil); !ok || v != 0 {
		t.Errorf("zklockviz_locks = %v, %v; want 0", v, ok)
	}
}

// TestSecondService: a lock of another service is labelled with it, apart
// from a ZooKeeper lock of the same path, and each service's reader has
// its own connection series, the ZooKeeper-only gauge staying ZooKeeper's.
func TestSecondService(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	h := hub.New()
	h.Publish(lockqueue.Snapshot{Path: "/locks/orders", Connection: lockqueue.Connected,
		Nodes: []lockqueue.Node{{Name: "lock-0000000001", Holding: true, Ctime: now.Add(-5 * time.Second)}}})
	h.Publish(lockqueue.Snapshot{Service: "etcd", Path: "/locks/orders", Connection: lockqueue.Expired,
		Nodes: []lockqueue.Node{
			{Name: "/locks/orders/694d7a1b2c3d", Holding: true, Ctime: now.Add(-30 * time.Second)},
			{Name: "/locks/orders/694d7a1b2c3e", Ctime: now.Add(-20 * time.Second)},
		},
		Alerts: []lockqueue.Alert{{Kind: lockqueue.AlertDisconnect, Nodes: []string{}}}})

	got := scrape(t, metrics.Handler(metrics.Config{
		Hub: h, Now: func() time.Time { return now },
		Services: services(t, [2]string{lockqueue.ZooKeeper, "connected"}, [2]string{"etcd", "expired"}),
	}))

	zk := map[string]string{"service": "zookeeper", "path": "/locks/orders"}
	etcd := map[string]string{"service": "etcd", "path": "/locks/orders"}
	tests := []series{
		{"zklockviz_lock_queue_length", zk, 1},
		{"zklockviz_lock_queue_length", etcd, 2},
		{"zklockviz_lock_waiters", etcd, 1},
		{"zklockviz_lock_holder_age_seconds", zk, 5},
		{"zklockviz_lock_holder_age_seconds", etcd, 30},
		{"zklockviz_lock_oldest_wait_seconds", etcd, 20},
		{"zklockviz_lock_live", zk, 1},
		{"zklockviz_lock_live", etcd, 0},
		{"zklockviz_lock_alerts", map[string]string{"service": "etcd", "path": "/locks/orders", "kind": "disconnected"}, 1},
		{"zklockviz_connection", map[string]string{"service": "zookeeper", "state": "connected"}, 1},
		{"zklockviz_connection", map[string]string{"service": "etcd", "state": "expired"}, 1},
		{"zklockviz_connection", map[string]string{"service": "etcd", "state": "connected"}, 0},
		{"zklockviz_zookeeper_connection", map[string]string{"state": "connected"}, 1},
		{"zklockviz_locks", nil, 2},
	}
	checkSeries(t, got, tests)
	if n := len(got["zklockviz_zookeeper_connection"]); n != 3 {
		t.Errorf("%d zklockviz_zookeeper_connection series, want ZooKeeper's 3 states only", n)
	}
	if n := len(got["zklockviz_connection"]); n != 6 {
		t.Errorf("%d zklockviz_connection series, want 3 states × 2 services with readers", n)
	}
}

// A Redisson lock's waiters, which the server counts but names no one of,
// are waiters of the lock, waiting since the reader first saw them; the
// queue's length counts its nodes.
func TestUnnamedWaiters(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	h := hub.New()
	h.Publish(lockqueue.Snapshot{Service: "redis", Path: "inventory", Connection: lockqueue.Connected,
		AnonymousWaiters: 2, AnonymousSince: now.Add(-7 * time.Second),
		Nodes: []lockqueue.Node{{Name: "8c1e:57", Holding: true, Ctime: now.Add(-9 * time.Second)}}})
	got := scrape(t, metrics.Handler(metrics.Config{Hub: h, Now: func() time.Time { return now }}))
	redis := map[string]string{"service": "redis", "path": "inventory"}
	checkSeries(t, got, []series{
		{"zklockviz_lock_waiters", redis, 2},
		{"zklockviz_lock_oldest_wait_seconds", redis, 7},
		{"zklockviz_lock_queue_length", redis, 1},
	})
}

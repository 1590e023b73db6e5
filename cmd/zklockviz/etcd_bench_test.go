package main

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/zklockviz/zklockviz/etcd/etcdlocal/etcdtest"
)

// BenchmarkEtcdViewers measures what the etcd reader costs the server with
// 1 and with 100 websocket viewers of one lock held by a
// concurrency.Mutex, behind which a waiter's key comes and goes once per
// iteration, each change reaching every viewer before the next. etcd's own /metrics count the watchers and the
// reader's Range and LeaseTimeToLive requests. The watch is one per lock
// and lease reads follow --poll (100ms here; one LeaseTimeToLive per shown
// key's lease per poll), not the viewers.
//
//	go test ./cmd/zklockviz -run '^$' -bench BenchmarkEtcdViewers -benchtime 50x
func BenchmarkEtcdViewers(b *testing.B) {
	zks := sharedZK(b)
	srv := etcdtest.ForTest(b)
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.Endpoint()}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cli.Close() })
	const prefix = "/locks/bench"
	session := func() *concurrency.Session {
		s, err := concurrency.NewSession(cli, concurrency.WithTTL(30))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s
	}
	if err := concurrency.NewMutex(session(), prefix).Lock(context.Background()); err != nil {
		b.Fatal(err)
	}
	// The waiter comes and goes as a Mutex waiter does: a key under the
	// prefix on its session's lease, put and deleted.
	waiter := session()
	key := prefix + "/" + strconv.FormatInt(int64(waiter.Lease()), 16)
	m := startMain(b, "--zk", zks.Addr(), "--etcd", srv.Endpoint(), "--watch", "etcd:"+prefix, "--poll", "100ms")
	wsURL := "ws" + strings.TrimPrefix(m.URL(), "http") + "/ws?service=etcd&path=" + url.QueryEscape(prefix)
	metric := func(name, label string) float64 { return etcdMetric(b, srv, name, label) }
	queued := false
	for _, viewers := range []int{1, 100} {
		b.Run("viewers="+strconv.Itoa(viewers), func(b *testing.B) {
			vs := dialViewers(b, viewers, func(wg *sync.WaitGroup) *benchViewer { return dialWS(b, wsURL, naiveShows, nil, wg) })
			watchers := metric("etcd_debugging_mvcc_watcher_total", "")
			ranges0 := metric("grpc_server_started_total", `grpc_method="Range"`)
			leases0 := metric("grpc_server_started_total", `grpc_method="LeaseTimeToLive"`)
			start := time.Now()
			changes := 0
			for b.Loop() {
				changes++
				changeReachesViewers(b, vs, changes, func() error {
					var err error
					if queued {
						_, err = cli.Delete(context.Background(), key)
					} else {
						_, err = cli.Put(context.Background(), key, "", clientv3.WithLease(waiter.Lease()))
					}
					queued = !queued
					return err
				})
			}
			secs := time.Since(start).Seconds()
			b.ReportMetric(metric("etcd_debugging_mvcc_watcher_total", ""), "watchers")
			if w := metric("etcd_debugging_mvcc_watcher_total", ""); w != watchers {
				b.Errorf("etcd watchers went from %v to %v during the run", watchers, w)
			}
			b.ReportMetric((metric("grpc_server_started_total", `grpc_method="Range"`)-ranges0)/secs, "ranges/s")
			b.ReportMetric((metric("grpc_server_started_total", `grpc_method="LeaseTimeToLive"`)-leases0)/secs, "lease-reads/s")
			b.ReportMetric(float64(changes)/secs, "changes/s")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// changeReachesViewers makes one change and waits until every viewer has
// had a frame since: the viewer benchmarks' step, so that each change is
// delivered before the next.
func changeReachesViewers(b *testing.B, vs []*benchViewer, n int, change func() error) {
	b.Helper()
	before := make([]int64, len(vs))
	for i, v := range vs {
		before[i] = v.frames.Load()
	}
	if err := change(); err != nil {
		b.Fatalf("change %d: %v", n, err)
	}
	deadline := time.Now().Add(waitTimeout)
	for i, v := range vs {
		for v.frames.Load() == before[i] {
			if time.Now().After(deadline) {
				b.Fatalf("viewer %d got no frame for change %d", i, n)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

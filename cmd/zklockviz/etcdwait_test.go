package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/lockqueue"
)

// etcdKeys counts the keys under prefix.
func etcdKeys(t *testing.T, cli *clientv3.Client, prefix string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	resp, err := cli.Get(ctx, prefix+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return int(resp.Count)
}

// `etcdctl lock` contenders queued before zklockviz started have no
// creation time in etcd: their waits are timed from when the reader first
// saw them, said as "at least" (never "?" or "—"), and the holder already
// holding is not an acquisition (its clock too says "at least"); the waiter's acquisition after a hand-off
// is, with its wait measured; a waiter queued while watching is timed from
// its creation.
func TestEtcdWaitsTimedFromFirstSight(t *testing.T) {
	needEtcd(t)
	srv, cli := etcdForTest(t)
	const prefix = "/locks/timed"
	a := etcdctlLock(t, srv.Endpoint(), prefix, 30)
	waitFor(t, "a's key", func() bool { return etcdKeys(t, cli, prefix) == 1 })
	etcdctlLock(t, srv.Endpoint(), prefix, 30)
	waitFor(t, "b's key", func() bool { return etcdKeys(t, cli, prefix) == 2 })
	started := time.Now()

	s := startServe(t, "--etcd", srv.Endpoint(), "--addr", "127.0.0.1:0", "--watch", "etcd:"+prefix,
		"--data-dir", t.TempDir(), "--poll", "100ms", "--log-level", "warn")
	api := historyAPI{t: t, base: s.url, service: "etcd"}
	var snap lockqueue.Snapshot
	api.waitLive(prefix, "a holding, b waiting", func(s lockqueue.Snapshot) bool {
		snap = s
		return s.Live() && len(s.Nodes) == 2 && s.Nodes[0].Holding && !s.Nodes[1].Holding
	})
	firstRead := time.Now()
	aName, bName := snap.Nodes[0].Name, snap.Nodes[1].Name
	for _, n := range snap.Nodes {
		if !n.CtimeAtMost || n.Ctime.Before(started) || n.Ctime.After(firstRead) {
			t.Errorf("%s: ctime %s (at most: %v), want when the reader first saw it, between %s and %s",
				n.Name, n.Ctime.Format(time.StampMilli), n.CtimeAtMost, started.Format(time.StampMilli), firstRead.Format(time.StampMilli))
		}
	}
	// Its hold began unseen: at least since the reader first saw it.
	if a := snap.Nodes[0]; a.HeldBound() != lockqueue.HeldAtLeast || a.HeldSince().Before(started) || a.HeldSince().After(firstRead) {
		t.Errorf("a held before the reader looked, yet its hold is stamped from %s (%q), want at least since its first sight, between %s and %s",
			a.HeldSince().Format(time.StampMilli), a.HeldBound(), started.Format(time.StampMilli), firstRead.Format(time.StampMilli))
	}

	// The dashboard, the API's summary and /metrics give the oldest wait.
	time.Sleep(1100 * time.Millisecond)
	page := httpText(t, s.url+"/")
	row := page[strings.Index(page, `data-lock="`+prefix+`"`):]
	row = row[:strings.Index(row, "</tr>")]
	if !strings.Contains(row, `<td class="num">≥ `) {
		t.Errorf("the dashboard's row does not say the oldest wait is at least its first sight: %s", row)
	}
	var sum struct {
		Locks []struct {
			Path         string
			OldestWaitMs int64
		}
	}
	getJSON(t, s.url+"/api/v1/locks", &sum)
	for _, l := range sum.Locks {
		if l.Path == prefix && l.OldestWaitMs < 1000 {
			t.Errorf("/api/v1/locks: oldest wait %d ms, want at least the second since the first read", l.OldestWaitMs)
		}
	}
	if v := metricValue(s.url, `zklockviz_lock_oldest_wait_seconds{path="`+prefix+`",service="etcd"}`); v < 1 {
		t.Errorf("zklockviz_lock_oldest_wait_seconds = %v, want at least 1", v)
	}

	etcdctlLock(t, srv.Endpoint(), prefix, 30)
	cQueued := time.Now()
	api.waitLive(prefix, "c queued", func(s lockqueue.Snapshot) bool {
		snap = s
		return len(s.Nodes) == 3
	})
	cNode := snap.Nodes[2]
	if cNode.CtimeAtMost || cNode.Ctime.Before(cQueued) || cNode.Ctime.After(time.Now()) {
		t.Errorf("c queued while watched: ctime %s (at most: %v), want its creation, after %s", cNode.Ctime.Format(time.StampMilli), cNode.CtimeAtMost, cQueued.Format(time.StampMilli))
	}

	if err := a.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	bHolds := api.waitLive(prefix, "b holding after a's release", func(s lockqueue.Snapshot) bool {
		return s.Live() && len(s.Nodes) == 2 && s.Nodes[0].Name == bName && s.Nodes[0].Holding
	})

	var st history.Stats
	api.get("/api/v1/lock/stats", prefix, map[string]string{"from": ms(started.Add(-time.Minute)), "to": ms(time.Now())}, &st)
	if st.Acquisitions != 1 || st.Released != 1 || st.Wait.Count != 1 {
		t.Errorf("figures %+v: want 1 acquisition (b's; a held before zklockviz looked), 1 release, 1 wait", st)
	}
	// b's wait is timed from the first read, a lower bound of its real one.
	if min, max := bHolds.Sub(firstRead).Seconds(), bHolds.Sub(started).Seconds()+figureTolerance.Seconds(); st.Wait.Max < min-figureTolerance.Seconds() || st.Wait.Max > max {
		t.Errorf("b's wait %.2fs, want between %.2fs and %.2fs", st.Wait.Max, min, max)
	}
	if e, ok := findEvent(api.events(prefix, started.Add(-time.Minute)), history.Acquired, aName); ok {
		t.Errorf("a, holding before zklockviz looked, recorded as acquiring: %+v", e)
	}
	if v := metricValue(s.url, `zklockviz_lock_acquisitions_total{path="`+prefix+`",service="etcd"}`); v != 1 {
		t.Errorf("zklockviz_lock_acquisitions_total = %v, want 1", v)
	}
}

func httpText(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

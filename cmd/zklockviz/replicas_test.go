package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/postgres/pglocal/pgtest"
	"github.com/zklockviz/zklockviz/third_party/zk"
)

// handOffs keeps a lock changing hands between two go-zookeeper clients
// until the test ends, so a recorder's death falls among changes.
func handOffs(t testing.TB, addr, path string) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 2 {
		conn := connect(t, addr)
		wg.Go(func() {
			for ctx.Err() == nil {
				l := zk.NewLock(conn, path, zk.WorldACL(zk.PermAll))
				if err := l.Lock(); err != nil {
					return
				}
				time.Sleep(100 * time.Millisecond)
				l.Unlock()
			}
		})
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
}

func recorderRole(t testing.TB, base string) history.Role {
	var st history.Status
	if code := getJSON(t, base+"/api/v1/history/status", &st); code != 200 || st.Role == nil {
		return history.Role{}
	}
	return *st.Role
}

func waitRoleOf(t testing.TB, base, what string, ok func(history.Role) bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !ok(recorderRole(t, base)) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s: %+v", what, recorderRole(t, base))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// takeoverGap kills the recording serve with kill -9 while the lock
// changes and returns the gap the standby, which takes over, records.
func takeoverGap(t testing.TB, recorder, standby *server, recName, lock string, from time.Time) history.Event {
	t.Helper()
	killed := time.Now()
	if err := recorder.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-recorder.done
	waitRoleOf(t, standby.url, "the standby to take over", func(r history.Role) bool { return r.Recording })
	var resp struct{ Events []history.Event }
	q := url.Values{"path": {lock}, "from": {fmt.Sprint(from.UnixMilli())}, "to": {fmt.Sprint(time.Now().UnixMilli())}}
	if code := getJSON(t, standby.url+"/api/v1/lock/history?"+q.Encode(), &resp); code != 200 {
		t.Fatalf("history: status %d", code)
	}
	i := slices.IndexFunc(resp.Events, func(e history.Event) bool {
		return e.Kind == history.Gap && strings.Contains(e.Message, "took over from "+recName) && !e.Time.Before(killed)
	})
	if i < 0 {
		t.Fatalf("no gap saying the standby took over from %s after the kill at %s: %+v", recName, killed.Format(time.StampMilli), resp.Events)
	}
	gap := resp.Events[i]
	if gap.Since.After(killed) {
		t.Errorf("the gap starts at %s, after the kill at %s: the history claims to have seen what came between",
			gap.Since.Format(time.StampMilli), killed.Format(time.StampMilli))
	}
	return gap
}

// Two serve processes on one PostgreSQL history: the first records, the
// second serves the same history and says who records; each change is
// recorded once; kill -9 of the recorder while the lock changes hands
// lets the second take over, recording the gap from the first's last
// heartbeat, and recording again after it.
func TestTwoReplicasOneRecorder(t *testing.T) {
	zks := sharedZK(t)
	pg := pgtest.ForTest(t)
	const lock = "/replicas/orders"
	args := func(name string) []string {
		return []string{"--zk", zks.Addr(), "--addr", "127.0.0.1:0", "--watch", lock, "--history-db", pg.DSN(),
			"--history-replica", name, "--log-level", "warn"}
	}
	a := startServe(t, args("a")...)
	b := startServe(t, args("b")...)
	waitRoleOf(t, a.url, "a to record", func(r history.Role) bool { return r.Recording && r.Recorder == "a" })
	waitRoleOf(t, b.url, "b to stand by behind a", func(r history.Role) bool { return !r.Recording && r.Recorder == "a" })

	page := func(s *server) string {
		resp, err := http.Get(s.url + "/")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	if p := page(b); !strings.Contains(p, "history recorded by replica a since") || !strings.Contains(p, "this replica (b) stands by") {
		t.Errorf("b's dashboard does not say that a records and b stands by")
	}

	// zklockviz watching its own recorder's lock: a holds it, b waits.
	watcher := startServe(t, "--postgres", pg.DSN(), "--watch", fmt.Sprintf("postgres:advisory/%d", history.RecorderLockKey),
		"--addr", "127.0.0.1:0", "--history=off", "--log-level", "warn")
	recLock := url.Values{"service": {"postgres"}, "path": {fmt.Sprintf("advisory/%d", history.RecorderLockKey)}}
	waitFor(t, "the recorder's lock held by a, b waiting", func() bool {
		var snap lockqueue.Snapshot
		getJSON(t, watcher.url+"/api/v1/lock?"+recLock.Encode(), &snap)
		var held, waiting []string
		for _, n := range snap.Nodes {
			if n.Holding {
				held = append(held, n.Who())
			} else {
				waiting = append(waiting, n.Who())
			}
		}
		// Who is the application, then the client's address and state.
		return len(held) == 1 && strings.HasPrefix(held[0], "zklockviz recorder a ") &&
			len(waiting) == 1 && strings.HasPrefix(waiting[0], "zklockviz recorder b ")
	})

	start := time.Now()
	handOffs(t, zks.Addr(), lock)
	time.Sleep(2 * time.Second)
	gap := takeoverGap(t, a, b, "a", lock, start)
	t.Logf("takeover gap: %v", gap.Time.Sub(gap.Since))
	time.Sleep(time.Second)

	var resp struct{ Events []history.Event }
	q := url.Values{"path": {lock}, "from": {fmt.Sprint(start.UnixMilli())}, "to": {fmt.Sprint(time.Now().UnixMilli())}}
	getJSON(t, b.url+"/api/v1/lock/history?"+q.Encode(), &resp)
	acquired := map[string]int{}
	var before, after int
	for _, e := range resp.Events {
		if e.Kind != history.Acquired {
			continue
		}
		acquired[e.Node]++
		if e.Time.Before(gap.Since) {
			before++
		} else if e.Time.After(gap.Time) {
			after++
		}
	}
	for node, n := range acquired {
		if n > 1 {
			t.Errorf("%s acquired %d times in the history: two replicas recorded it", node, n)
		}
	}
	if before == 0 || after == 0 {
		t.Errorf("%d acquisitions recorded before the kill and %d after the takeover, want some of each", before, after)
	}
	if p := page(b); !strings.Contains(p, "history recorded by this replica (b)") {
		t.Errorf("b's dashboard does not say it records now")
	}
}

// BenchmarkRecorderTakeover measures the gap a kill -9 of the recording
// serve leaves in a shared PostgreSQL history: from the dead recorder's
// last heartbeat to the standby's first write, as the standby records it.
// Each round kills the recorder and starts a new standby.
//
//	go test ./cmd/zklockviz -run '^$' -bench BenchmarkRecorderTakeover -benchtime 10x
func BenchmarkRecorderTakeover(b *testing.B) {
	zks := sharedZK(b)
	pg := pgtest.ForTest(b)
	const lock = "/replicas/bench"
	start := func(name string) *server {
		return startServe(b, "--zk", zks.Addr(), "--addr", "127.0.0.1:0", "--watch", lock, "--history-db", pg.DSN(),
			"--history-replica", name, "--log-level", "warn")
	}
	names := []string{"r0", "r1"}
	recorder, standby := start(names[0]), start(names[1])
	waitRoleOf(b, standby.url, "a standby", func(r history.Role) bool { return r.Recorder == names[0] })
	handOffs(b, zks.Addr(), lock)
	from := time.Now()
	var gaps []time.Duration
	for i := 0; b.Loop(); i++ {
		time.Sleep(time.Second)
		gap := takeoverGap(b, recorder, standby, names[i], lock, from)
		gaps = append(gaps, gap.Time.Sub(gap.Since))
		names = append(names, fmt.Sprintf("r%d", i+2))
		recorder, standby = standby, start(names[i+2])
		waitRoleOf(b, standby.url, "a new standby", func(r history.Role) bool { return r.Recorder == names[i+1] })
	}
	slices.Sort(gaps)
	b.ReportMetric(float64(gaps[len(gaps)/2].Milliseconds()), "median-gap-ms")
	b.ReportMetric(float64(gaps[len(gaps)-1].Milliseconds()), "max-gap-ms")
	b.Logf("gaps: %v", gaps)
}

package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	neturl "net/url"
	"os"
	"strconv"
	"testing"
	"time"
)

var (
	fleetParents = flag.Int("fleet-parents", 100_000, "BenchmarkFleetDiscovery: lock parents below the prefix")
	fleetHeld    = flag.Int("fleet-held", 10_000, "BenchmarkFleetDiscovery: of them held, each with a waiter")
)

// BenchmarkFleetDiscovery: a fleet of lock parents below one prefix, one
// in ten held with a waiter (two kazoo lock nodes), made by kazoo in
// transactions, and the real binary started with --watch-under on it. An
// op is one serve start until GET /api/v1/locks lists every held lock
// (polled every 500 ms: the list is large, and reading it often took the
// CPU the start needs): reported as s-to-all-held. hwm-MB is the serve
// process's peak RSS (VmHWM) until 5 s later, and rss-MB its RSS then.
//
//	go test ./cmd/zklockviz -run '^$' -bench BenchmarkFleetDiscovery -benchtime 1x -timeout 30m
//	go test ./cmd/zklockviz -run '^$' -bench BenchmarkFleetDiscovery -benchtime 1x -args -fleet-parents 100000 -fleet-held 10000
func BenchmarkFleetDiscovery(b *testing.B) {
	zks := sharedZK(b)
	prefix, want := kazooFleet(b, zks.Addr(), *fleetParents, *fleetHeld)
	for _, mode := range []struct {
		name string
		args []string
	}{
		{"persistent-watch", nil},
	} {
		b.Run(mode.name, func(b *testing.B) {
			var took time.Duration
			var hwm, rss float64
			for range b.N {
				start := time.Now()
				s := startServe(b, append([]string{"--zk", zks.Addr(), "--addr", "127.0.0.1:0", "--log-level", "error",
					"--watch-under", prefix}, mode.args...)...)
				deadline := start.Add(5 * time.Minute)
				for {
					if got, err := fetchLocks(s.url); err == nil && len(got.held()) == len(want) {
						break
					}
					if time.Now().After(deadline) {
						b.Fatalf("not every held lock listed after 5 minutes")
					}
					time.Sleep(500 * time.Millisecond)
				}
				took1 := time.Since(start)
				took += took1
				pid := strconv.Itoa(s.cmd.Process.Pid)
				hwm = max(hwm, procStatus(pid, "VmHWM")["VmHWM"])
				time.Sleep(5 * time.Second)
				st := procStatus(pid, "VmRSS", "VmHWM")
				rss, hwm = st["VmRSS"], max(hwm, st["VmHWM"])
				b.Logf("every held lock after %.2fs; peak RSS %.0f MB, RSS %.0f MB 5 s later", took1.Seconds(), st["VmHWM"], rss)
				b.StopTimer()
				s.cmd.Process.Signal(os.Interrupt)
				<-s.done
				b.StartTimer()
			}
			b.ReportMetric(took.Seconds()/float64(b.N), "s-to-all-held")
			b.ReportMetric(hwm, "hwm-MB")
			b.ReportMetric(rss, "rss-MB")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// fetchLocks reads GET /api/v1/locks, every page of it when it pages
// (?cursor= from next), the locks with a holder first asked for: a
// server that does not page or filter sends them all at once.
func fetchLocks(base string) (fleetLocks, error) {
	var all fleetLocks
	url := base + "/api/v1/locks?state=held&limit=5000"
	for {
		var page fleetLocks
		resp, err := http.Get(url)
		if err != nil {
			return all, err
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return all, fmt.Errorf("GET /api/v1/locks: %s", resp.Status)
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil {
			return all, err
		}
		all.Locks = append(all.Locks, page.Locks...)
		if all.Unexplored == nil {
			all.Unexplored = page.Unexplored
		}
		if page.Next == "" {
			return all, nil
		}
		url = base + "/api/v1/locks?state=held&limit=5000&cursor=" + neturl.QueryEscape(page.Next)
	}
}

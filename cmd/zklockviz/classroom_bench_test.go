package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/web"
)

// benchRuns are the classroom runs the benchmarks start, one per service
// (Redis twice: one shared server, and Redlock's five masters of its own).
var benchRuns = []struct{ service, scenario string }{
	{"zookeeper", "lock1-5"},
	{"redis", "redis-px-pause"},
	{"redis", "redis-redlock-restart"},
	{"etcd", "etcd-mutex-queue"},
	{"postgres", "pg-row-fifo"},
}

// BenchmarkClassroomFirstStep times, through the HTTP API of one
// `zklockviz serve --sim`, what a teacher waits for after pressing start:
// POST /api/v1/sim/runs?service=… and then the first step's answer. The
// first run of a service also starts its throwaway server; cold-ms is that
// run, p50-ms the later ones (the server already up). The target is 1 s.
//
//	go test ./cmd/zklockviz -run '^$' -bench BenchmarkClassroomFirstStep -benchtime 5x
func BenchmarkClassroomFirstStep(b *testing.B) {
	zks := sharedZK(b)
	for _, br := range benchRuns {
		b.Run(br.scenario, func(b *testing.B) {
			s := startServe(b, "--zk", zks.Addr(), "--addr", "127.0.0.1:0", "--sim")
			var took []time.Duration
			for range b.N + 1 {
				start := time.Now()
				id := startRun(b, s.url, br.service, br.scenario)
				st := simPost(b, s.url, br.service, "/runs/"+id+"/step", "")
				took = append(took, time.Since(start))
				if st["step"] != float64(1) {
					b.Fatalf("%s after one step: step %v, error %v", br.scenario, st["step"], st["error"])
				}
				simDelete(b, s.url, br.service, id)
			}
			b.ReportMetric(msOf(took[0]), "cold-ms")
			rest := took[1:]
			slices.Sort(rest)
			b.ReportMetric(msOf(rest[len(rest)/2]), "p50-ms")
			b.ReportMetric(msOf(rest[len(rest)-1]), "max-ms")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkClassroomMemory opens one run of every service at once in one
// `zklockviz serve --sim` and reports the resident memory (VmRSS) of the
// zklockviz process and of it with every process it started (the servers:
// ZooKeeper is the test's own, shared, and not counted).
//
//	go test ./cmd/zklockviz -run '^$' -bench BenchmarkClassroomMemory -benchtime 1x
func BenchmarkClassroomMemory(b *testing.B) {
	zks := sharedZK(b)
	for range b.N {
		s := startServe(b, "--zk", zks.Addr(), "--addr", "127.0.0.1:0", "--sim")
		for _, br := range benchRuns {
			id := startRun(b, s.url, br.service, br.scenario)
			simPost(b, s.url, br.service, "/runs/"+id+"/step", "")
		}
		pid := s.cmd.Process.Pid
		own := rssKB(pid)
		all := own
		for _, c := range descendants(pid) {
			all += rssKB(c)
		}
		b.ReportMetric(float64(own)/1024, "zklockviz-MB")
		b.ReportMetric(float64(all)/1024, "with-servers-MB")
		b.ReportMetric(float64(len(descendants(pid))), "children")
		b.ReportMetric(0, "ns/op")
		s.cmd.Process.Signal(os.Interrupt)
		<-s.done
	}
}

func msOf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func simPost(b testing.TB, url, service, path, body string) map[string]any {
	b.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/api/v1/sim"+path+"?service="+service, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	// Only a run's starter moves it: a run's path sends its owner secret.
	if parts := strings.Split(path, "/"); len(parts) > 2 {
		if owner, ok := benchOwners.Load(parts[2]); ok {
			req.Header.Set(web.RunOwnerHeader, fmt.Sprint(owner))
		}
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	var st map[string]any
	if err := json.NewDecoder(res.Body).Decode(&st); err != nil || res.StatusCode/100 != 2 {
		b.Fatalf("POST %s (%s): %d %v %v", path, service, res.StatusCode, err, st)
	}
	return st
}

func startRun(b testing.TB, url, service, scenario string) string {
	b.Helper()
	body, _ := json.Marshal(map[string]string{"scenario": scenario})
	st := simPost(b, url, service, "/runs", string(body))
	id, _ := st["id"].(string)
	if id == "" {
		b.Fatalf("start %s: no run id in %v", scenario, st)
	}
	benchOwners.Store(id, st["owner"])
	return id
}

// benchOwners are the started runs' owner secrets, by run id: only a
// run's starter may delete it.
var benchOwners sync.Map

func simDelete(b testing.TB, url, service, id string) {
	b.Helper()
	req, _ := http.NewRequest(http.MethodDelete, url+"/api/v1/sim/runs/"+id+"?service="+service, nil)
	if owner, ok := benchOwners.Load(id); ok {
		req.Header.Set(web.RunOwnerHeader, fmt.Sprint(owner))
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	res.Body.Close()
}

// rssKB is a process's VmRSS in kB, 0 when it is gone.
func rssKB(pid int) int {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	return 0
}

// descendants lists every process under pid, read from /proc.
func descendants(pid int) []int {
	parent := map[int]int{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		raw, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// The command name in parentheses may hold spaces: ppid is the
		// second field after its closing parenthesis.
		i := bytes.LastIndexByte(raw, ')')
		f := strings.Fields(string(raw[i+1:]))
		if len(f) < 2 {
			continue
		}
		me, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		pp, _ := strconv.Atoi(f[1])
		parent[me] = pp
	}
	var out []int
	for p := range parent {
		for q := parent[p]; q > 1; q = parent[q] {
			if q == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

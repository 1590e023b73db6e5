package main

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkBigQueueIdle serves BenchmarkBigQueue's 100,000-node lock and,
// once every node is read, measures the server's CPU (user+system, from
// /proc/PID/stat) over 30 s in which nothing changes: the watch-table
// polls of an idle queue. idle-cpu-% is that CPU time over the 30 s.
//
//	go test ./cmd/zklockviz -run '^$' -bench BenchmarkBigQueueIdle -benchtime 1x
func BenchmarkBigQueueIdle(b *testing.B) {
	zks := sharedZK(b)
	const nodes = 100_000
	const idle = 30 * time.Second
	path := benchRoot() + "/big-idle"
	kazooBigQueue(b, zks.Addr(), path, nodes)
	var pct []float64
	for b.Loop() {
		s := startServe(b, "--zk", zks.Addr(), "--addr", "127.0.0.1:0", "--log-level", "error", "--watch", path, "--data-dir", b.TempDir())
		deadline := time.Now().Add(5 * waitTimeout)
		for {
			var ls bigQueueLocks
			getJSON(b, s.url+"/api/v1/locks", &ls)
			if len(ls.Locks) == 1 && ls.Locks[0].QueueLength == nodes && ls.Locks[0].Filling == nil {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("not complete: %+v", ls.Locks)
			}
			time.Sleep(100 * time.Millisecond)
		}
		time.Sleep(3 * time.Second) // past the first polls' debounce
		pid := strconv.Itoa(s.cmd.Process.Pid)
		before := cpuTicks(b, pid)
		time.Sleep(idle)
		used := cpuTicks(b, pid) - before
		pct = append(pct, float64(used)/100/idle.Seconds()*100) // USER_HZ is 100 on Linux
		s.cmd.Process.Signal(os.Interrupt)
		<-s.done
	}
	b.Logf("idle-cpu-%% %v", pct)
	b.ReportMetric(median(pct), "idle-cpu-%")
	b.ReportMetric(0, "ns/op")
}

// cpuTicks is a process's utime+stime, in clock ticks.
func cpuTicks(b *testing.B, pid string) int64 {
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the command name, which is in parentheses: state is
	// the 3rd field, utime the 14th, stime the 15th.
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("/proc/%s/stat: %q", pid, stat)
	}
	return u + s
}

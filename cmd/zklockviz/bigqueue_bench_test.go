package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// kazooBigQueue has testdata/clients/kazoo_bigqueue.py make nodes
// persistent sequential kazoo lock nodes with a few bytes of data under
// path, one session, and delete them when the test ends. It returns the
// first node's name: the holder.
func kazooBigQueue(tb testing.TB, servers, path string, nodes int) string {
	tb.Helper()
	var first string
	took := kazooHeld(tb, "kazoo_bigqueue.py", func(line string) {
		if n, ok := strings.CutPrefix(line, "first "); ok {
			first = n
		}
	}, servers, path, fmt.Sprint(nodes))
	if first == "" {
		tb.Fatal("kazoo_bigqueue.py made no nodes")
	}
	tb.Logf("kazoo made %d nodes under %s in %ss", nodes, path, took)
	return first
}

// bigQueueLocks is what the big-queue benchmark reads of GET
// /api/v1/locks: the summary, small however long the queue, so that
// polling it does not weigh on the server measured.
type bigQueueLocks struct {
	Locks []struct {
		Path        string   `json:"path"`
		Holders     []string `json:"holders"`
		QueueLength int      `json:"queueLength"`
		Filling     *struct {
			Read int `json:"read"`
			Of   int `json:"of"`
		} `json:"filling"`
	} `json:"locks"`
}

// BenchmarkBigQueue serves one lock parent with 100,000 children
// (persistent sequential kazoo lock nodes, one session, a few bytes of data
// each, made by kazoo in transactions), `zklockviz serve` as its own
// process, and times from its start to GET /api/v1/locks showing the lock
// with every node and its holder (order-ms) and to the lock no longer
// filling, every node's data read (complete-ms), polling every 20 ms;
// hwm-MB is the server's peak RSS (VmHWM) then. One GET /api/v1/lock of
// the whole queue then checks the data is there.
//
//	go test ./cmd/zklockviz -run '^$' -bench BenchmarkBigQueue -benchtime 3x
func BenchmarkBigQueue(b *testing.B) {
	zks := sharedZK(b)
	const nodes = 100_000
	path := benchRoot() + "/big"
	first := kazooBigQueue(b, zks.Addr(), path, nodes)
	var order, complete, hwm, atComplete []float64
	// settle is how long after complete the peak is read: the history has
	// written the queue's keyframes by then (about 2 s on a quiet machine).
	const settle = 10 * time.Second
	for b.Loop() {
		start := time.Now()
		// A history of its own: a first start, not one that reads the
		// runs before it back.
		s := startServe(b, "--zk", zks.Addr(), "--addr", "127.0.0.1:0", "--log-level", "error", "--watch", path, "--data-dir", b.TempDir())
		var ordered time.Duration
		for {
			var ls bigQueueLocks
			getJSON(b, s.url+"/api/v1/locks", &ls)
			complete := false
			for _, l := range ls.Locks {
				if l.Path != path || l.QueueLength != nodes || len(l.Holders) == 0 || l.Holders[0] != first {
					continue
				}
				if ordered == 0 {
					ordered = time.Since(start)
				}
				complete = l.Filling == nil
			}
			if complete {
				break
			}
			if time.Since(start) > 5*waitTimeout {
				b.Fatalf("not complete after %s: %+v", time.Since(start), ls.Locks)
			}
			time.Sleep(20 * time.Millisecond)
		}
		took := time.Since(start)
		pid := strconv.Itoa(s.cmd.Process.Pid)
		atComplete = append(atComplete, procStatus(pid, "VmHWM")["VmHWM"])
		// The peak of the whole start: the history records the queue
		// after the watcher has it (its first segments' keyframes), and
		// that comes after "complete".
		time.Sleep(settle)
		hwm = append(hwm, procStatus(pid, "VmHWM")["VmHWM"])
		var lock struct {
			Nodes []struct {
				Data string `json:"data"`
			} `json:"nodes"`
		}
		getJSON(b, s.url+"/api/v1/lock?path="+path, &lock)
		if len(lock.Nodes) != nodes || lock.Nodes[nodes-1].Data == "" {
			b.Fatalf("the lock says it is complete, but has %d nodes, the last without data", len(lock.Nodes))
		}
		order = append(order, float64(ordered.Milliseconds()))
		complete = append(complete, float64(took.Milliseconds()))
		s.cmd.Process.Signal(os.Interrupt)
		<-s.done
	}
	b.Logf("order-ms %v, complete-ms %v, hwm-MB %.0f (at complete %.0f)", order, complete, hwm, atComplete)
	b.ReportMetric(median(order), "order-ms")
	b.ReportMetric(median(complete), "complete-ms")
	b.ReportMetric(median(hwm), "hwm-MB")
	b.ReportMetric(0, "ns/op")
}

// median of xs (not sorted in place).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

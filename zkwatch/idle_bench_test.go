package zkwatch

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/third_party/zk"
)

// BenchmarkIdlePoll measures one watch-table poll that changes nothing,
// over a lock of 100,000 nodes (one session's, watching nothing, so every
// waiter is an orphan): the four-letter words, the merge and the re-join
// of the lock, as the poll loop does each second. joins/op is the lock's
// joins with the table.
//
//	CI=true go test -run '^$' -bench BenchmarkIdlePoll -benchmem ./zkwatch/
func BenchmarkIdlePoll(b *testing.B) {
	const n = 100_000
	s := sharedServer(b)
	path := fresh("/bench/idle")
	c := connect(b, []string{s.Addr()}, 30*time.Second)
	mkdirs(b, c, path)
	ops := make([]any, 1000)
	for range n / len(ops) {
		for i := range ops {
			ops[i] = &zk.CreateRequest{Path: path + "/W_", Acl: acl, Flags: zk.FlagEphemeral | zk.FlagSequence}
		}
		if _, err := c.Multi(ops...); err != nil {
			b.Fatal(err)
		}
	}
	// The poll loop polls once at the start, then not again for the
	// benchmark: its polls are the benchmark's own.
	w, rec := startWatcher(b, Config{Servers: []string{s.Addr()}, Paths: []string{path}, Poll: time.Hour})
	rec.wait(b, path, 0, "every node read", func(s lockqueue.Snapshot) bool {
		return s.Live() && len(s.Nodes) == n && s.WatchSource == "4lw" && !s.Nodes[n-1].Unread()
	})
	// Past the debounce, the orphans' findings have lasted: the polls
	// from here on change nothing.
	ctx := context.Background()
	w.pollOnce(ctx)
	time.Sleep(lockqueue.Debounce + 100*time.Millisecond)
	w.pollOnce(ctx)
	w.pollOnce(ctx)
	mark, joins := rec.mark(path), w.Joins()
	before := cpuTime(b)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		w.pollOnce(ctx)
	}
	b.StopTimer()
	// ns/op is mostly the wait for the server's answers; the CPU this
	// process spent is the poll's own cost.
	b.ReportMetric(float64((cpuTime(b)-before).Microseconds())/1000/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(w.Joins()-joins)/float64(b.N), "joins/op")
	if got := rec.mark(path) - mark; got != 0 {
		b.Errorf("%d idle polls published %d snapshots, want none", b.N, got)
	}
}

// cpuTime is the CPU time, user and system, this process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

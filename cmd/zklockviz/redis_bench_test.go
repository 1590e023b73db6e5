package main

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/zklockviz/zklockviz/redis/redislocal/redistest"
)

// BenchmarkRedisViewers measures what serve costs a Redis master with 1
// and with 100 websocket viewers of one lock: the reader's commands per
// second (INFO commandstats: TYPE, PTTL, GET, HGETALL, PUBSUB NUMSUB,
// PING) while a holder takes and releases the lock, one change per
// iteration, each waited for on every viewer. The viewers share the one
// poll, so the rate should not move with their number.
func BenchmarkRedisViewers(b *testing.B) {
	zks := sharedZK(b)
	master := redistest.ForTest(b)
	ctx := context.Background()
	holder := redis.NewClient(&redis.Options{Addr: master.Addr(), DisableIdentity: true})
	b.Cleanup(func() { holder.Close() })

	m := startMain(b, "--zk", zks.Addr(), "--redis", master.Addr(), "--poll", "100ms")
	svc, err := m.services.Lookup("redis")
	if err != nil || svc.Reader == nil {
		b.Fatalf("no redis reader: %v", err)
	}
	if err := svc.Reader.Watch("bench-lock"); err != nil {
		b.Fatal(err)
	}
	url := "ws" + strings.TrimPrefix(m.URL(), "http") + "/ws?service=redis&path=bench-lock"

	readerCmds := []string{"type", "pttl", "get", "hgetall", "pubsub|numsub", "ping"}
	reads := func() (calls int64) {
		info, err := holder.Info(ctx, "commandstats").Result()
		if err != nil {
			b.Fatal(err)
		}
		for line := range strings.SplitSeq(info, "\n") {
			name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
			cmd, isCmd := strings.CutPrefix(name, "cmdstat_")
			if !ok || !isCmd || !slices.Contains(readerCmds, cmd) {
				continue
			}
			n, _, _ := strings.Cut(strings.TrimPrefix(stats, "calls="), ",")
			c, err := strconv.ParseInt(n, 10, 64)
			if err != nil {
				b.Fatalf("commandstats line %q: %v", line, err)
			}
			calls += c
		}
		return calls
	}
	held := false
	for _, viewers := range []int{1, 100} {
		b.Run("viewers="+strconv.Itoa(viewers), func(b *testing.B) {
			vs := dialViewers(b, viewers, func(wg *sync.WaitGroup) *benchViewer { return dialWS(b, url, naiveShows, nil, wg) })
			calls0 := reads()
			start := time.Now()
			changes := 0
			for b.Loop() {
				before := make([]int64, len(vs))
				for i, v := range vs {
					before[i] = v.frames.Load()
				}
				var err error
				if held {
					err = holder.Del(ctx, "bench-lock").Err()
				} else {
					err = holder.SetNX(ctx, "bench-lock", "tok-bench", time.Minute).Err()
				}
				if err != nil {
					b.Fatal(err)
				}
				held = !held
				changes++
				deadline := time.Now().Add(waitTimeout)
				for i, v := range vs {
					for v.frames.Load() == before[i] {
						if time.Now().After(deadline) {
							b.Fatalf("viewer %d got no frame for change %d", i, changes)
						}
						time.Sleep(time.Millisecond)
					}
				}
			}
			secs := time.Since(start).Seconds()
			calls := reads() - calls0
			b.ReportMetric(float64(calls)/secs, "commands/s")
			b.ReportMetric(float64(calls)/float64(changes), "commands/change")
			b.ReportMetric(0, "ns/op")
		})
	}
}

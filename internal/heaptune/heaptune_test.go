package heaptune_test

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/internal/heaptune"
)

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		live uint64
		want int
	}{
		{0, 400},
		{4 * mib, 400},  // 48/4 = 1200%, capped
		{12 * mib, 400}, // exactly the cap: 48 MiB of headroom
		{24 * mib, 200}, // 48 MiB of headroom
		{64 * mib, 75},  // 48 MiB of headroom
		{96 * mib, 50},  // 48 MiB, half the live heap
		{400 * mib, 50}, // half the live heap, as at GOGC=50
		{10 * 1024 * mib, 50},
	} {
		if got := heaptune.Default.Percent(tc.live); got != tc.want {
			t.Errorf("Percent(%d MiB) = %d, want %d", tc.live/mib, got, tc.want)
		}
	}
}

// A small heap gets the large percent, set at once and kept after
// collections; a heap grown past the floor's share gets a smaller one.
func TestStartFollowsTheLiveHeap(t *testing.T) {
	old := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(old) })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := heaptune.Config{Floor: 8 << 20, MinPercent: 50, MaxPercent: 400}
	heaptune.Start(ctx, cfg)
	runtime.GC()
	if got := gogc(t); got != cfg.Percent(live()) {
		t.Errorf("GOGC %d with %d bytes live, want %d", got, live(), cfg.Percent(live()))
	}

	keep := make([][]byte, 0, 64)
	for range 64 {
		keep = append(keep, make([]byte, 1<<20)) // 64 MiB live
	}
	// The tuner runs on the finalizer goroutine after a collection.
	deadline := time.Now().Add(5 * time.Second)
	for gogc(t) != 50 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if got := gogc(t); got != 50 {
		t.Errorf("GOGC %d with %d MiB live, want 50", got, live()>>20)
	}
	runtime.KeepAlive(keep)
}

func gogc(t *testing.T) int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

func live() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

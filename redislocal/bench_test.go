package redislocal_test

import (
	"context"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/localproc"
	"github.com/zklockviz/zklockviz/redislocal"
)

// BenchmarkStart is start-to-ready (PONG) of one server; Close is not timed.
func BenchmarkStart(b *testing.B) {
	benchStartN(b, 1)
}

// BenchmarkStartFive is start-to-ready of Redlock's five masters, in parallel.
func BenchmarkStartFive(b *testing.B) {
	benchStartN(b, 5)
}

func benchStartN(b *testing.B, n int) {
	ctx := context.Background()
	var times []time.Duration
	for b.Loop() {
		t0 := time.Now()
		servers, err := redislocal.StartN(ctx, n, redislocal.Options{})
		if err != nil {
			localproc.SkipIfNotInstalled(b, err, redislocal.ErrNotInstalled)
			b.Fatal(err)
		}
		times = append(times, time.Since(t0))
		b.StopTimer()
		for _, s := range servers {
			if err := s.Close(); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
	}
	localproc.ReportMedian(b, times)
}

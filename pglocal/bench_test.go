package pglocal_test

import (
	"context"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/localproc"
	"github.com/zklockviz/zklockviz/pglocal"
)

// BenchmarkStart is start-to-ready of one server from the template (copy +
// postmaster start); the first, untimed Start makes the template. Close is
// not timed.
func BenchmarkStart(b *testing.B) {
	ctx := context.Background()
	start := func() *pglocal.Server {
		s, err := pglocal.Start(ctx, pglocal.Options{})
		if err != nil {
			localproc.SkipIfNotInstalled(b, err, pglocal.ErrNotInstalled)
			b.Fatal(err)
		}
		return s
	}
	if err := start().Close(); err != nil {
		b.Fatal(err)
	}
	var times []time.Duration
	for b.Loop() {
		t0 := time.Now()
		s := start()
		times = append(times, time.Since(t0))
		b.StopTimer()
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	localproc.ReportMedian(b, times)
}

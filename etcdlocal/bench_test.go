package etcdlocal_test

import (
	"context"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/etcdlocal"
	"github.com/zklockviz/zklockviz/localproc"
)

// BenchmarkStart is start-to-healthy of one member; Close is not timed.
func BenchmarkStart(b *testing.B) {
	var times []time.Duration
	for b.Loop() {
		t0 := time.Now()
		s, err := etcdlocal.Start(context.Background(), etcdlocal.Options{})
		if err != nil {
			localproc.SkipIfNotInstalled(b, err, etcdlocal.ErrNotInstalled)
			b.Fatal(err)
		}
		times = append(times, time.Since(t0))
		b.StopTimer()
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	localproc.ReportMedian(b, times)
}

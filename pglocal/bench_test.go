package pglocal_test

import (
	"context"
	"testing"

	"github.com/zklockviz/zklockviz/localproc"
	"github.com/zklockviz/zklockviz/pglocal"
)

// BenchmarkStart is start-to-ready of one server from the template (copy +
// postmaster start); the first, untimed Start makes the template.
func BenchmarkStart(b *testing.B) {
	if s, err := pglocal.Start(context.Background(), pglocal.Options{}); err == nil {
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
	localproc.BenchStart(b, pglocal.ErrNotInstalled, func(ctx context.Context) ([]*pglocal.Server, error) {
		s, err := pglocal.Start(ctx, pglocal.Options{})
		return []*pglocal.Server{s}, err
	})
}

package redislocal_test

import (
	"context"
	"testing"

	"github.com/zklockviz/zklockviz/localproc/proctest"
	"github.com/zklockviz/zklockviz/redis/redislocal"
)

// BenchmarkStart is start-to-ready (PONG) of one server.
func BenchmarkStart(b *testing.B) { benchStartN(b, 1) }

// BenchmarkStartFive is start-to-ready of Redlock's five masters, in parallel.
func BenchmarkStartFive(b *testing.B) { benchStartN(b, 5) }

func benchStartN(b *testing.B, n int) {
	proctest.BenchStart(b, redislocal.ErrNotInstalled, func(ctx context.Context) ([]*redislocal.Server, error) {
		return redislocal.StartN(ctx, n, redislocal.Options{})
	})
}

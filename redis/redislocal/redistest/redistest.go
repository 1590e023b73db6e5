// Package redistest holds redislocal's test helpers: servers for a test,
// closed when it ends. It is imported only from tests, so the binary does
// not link package testing.
package redistest

import (
	"context"
	"testing"

	"github.com/zklockviz/zklockviz/localproc/proctest"
	"github.com/zklockviz/zklockviz/redis/redislocal"
)

// ForTest starts a server and closes it when the test ends. Without
// redis-server installed the test is skipped, or fails when CI=true.
func ForTest(t testing.TB) *redislocal.Server {
	t.Helper()
	return ForTestWith(t, redislocal.Options{})
}

// ForTestWith is ForTest with options.
func ForTestWith(t testing.TB, opts redislocal.Options) *redislocal.Server {
	t.Helper()
	return NForTestWith(t, 1, opts)[0]
}

// NForTest starts n independent masters (see StartN) and closes them when
// the test ends.
func NForTest(t testing.TB, n int) []*redislocal.Server {
	t.Helper()
	return NForTestWith(t, n, redislocal.Options{})
}

// NForTestWith is NForTest with options.
func NForTestWith(t testing.TB, n int, opts redislocal.Options) []*redislocal.Server {
	t.Helper()
	return proctest.ForTest(t, redislocal.ErrNotInstalled, func(ctx context.Context) ([]*redislocal.Server, error) {
		return redislocal.StartN(ctx, n, opts)
	})
}

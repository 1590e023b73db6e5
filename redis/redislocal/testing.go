package redislocal

import (
	"context"
	"testing"

	"github.com/zklockviz/zklockviz/localproc"
)

// ForTest starts a server and closes it when the test ends. Without
// redis-server installed the test is skipped, or fails when CI=true.
func ForTest(t testing.TB) *Server {
	t.Helper()
	return ForTestWith(t, Options{})
}

// ForTestWith is ForTest with options.
func ForTestWith(t testing.TB, opts Options) *Server {
	t.Helper()
	return NForTestWith(t, 1, opts)[0]
}

// NForTest starts n independent masters (see StartN) and closes them when
// the test ends.
func NForTest(t testing.TB, n int) []*Server {
	t.Helper()
	return NForTestWith(t, n, Options{})
}

// NForTestWith is NForTest with options.
func NForTestWith(t testing.TB, n int, opts Options) []*Server {
	t.Helper()
	return localproc.ForTest(t, ErrNotInstalled, func(ctx context.Context) ([]*Server, error) {
		return StartN(ctx, n, opts)
	})
}

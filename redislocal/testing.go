package redislocal

import (
	"context"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/localproc"
)

// Generous: several packages' tests may start servers at once on a small box.
const testStartTimeout = 60 * time.Second

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
	ctx, cancel := context.WithTimeout(context.Background(), testStartTimeout)
	defer cancel()
	servers, err := StartN(ctx, n, opts)
	if err != nil {
		localproc.SkipIfNotInstalled(t, err, ErrNotInstalled)
		t.Fatalf("redislocal: start %d server(s): %v", n, err)
	}
	for _, s := range servers {
		localproc.CloseAtCleanup(t, s)
	}
	return servers
}

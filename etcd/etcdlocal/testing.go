package etcdlocal

import (
	"testing"

	"github.com/zklockviz/zklockviz/localproc"
)

// ForTest starts a server and closes it when the test ends. Without etcd
// installed the test is skipped, or fails when CI=true.
func ForTest(t testing.TB) *Server {
	t.Helper()
	return ForTestWith(t, Options{})
}

// ForTestWith is ForTest with options.
func ForTestWith(t testing.TB, opts Options) *Server {
	t.Helper()
	return localproc.ForTestOne(t, ErrNotInstalled, Start, opts)
}

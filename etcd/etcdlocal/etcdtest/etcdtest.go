// Package etcdtest holds etcdlocal's test helpers: a server for a test, closed
// when it ends. It is imported only from tests, so the binary does not link
// package testing.
package etcdtest

import (
	"testing"

	"github.com/zklockviz/zklockviz/etcd/etcdlocal"
	"github.com/zklockviz/zklockviz/localproc/proctest"
)

// ForTest starts a server and closes it when the test ends. Without etcd
// installed the test is skipped, or fails when CI=true.
func ForTest(t testing.TB) *etcdlocal.Server {
	t.Helper()
	return ForTestWith(t, etcdlocal.Options{})
}

// ForTestWith is ForTest with options.
func ForTestWith(t testing.TB, opts etcdlocal.Options) *etcdlocal.Server {
	t.Helper()
	return proctest.ForTestOne(t, etcdlocal.ErrNotInstalled, etcdlocal.Start, opts)
}

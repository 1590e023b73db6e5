// Package pgtest holds pglocal's test helpers: a server for a test, closed
// when it ends. It is imported only from tests, so the binary does not link
// package testing.
package pgtest

import (
	"testing"

	"github.com/zklockviz/zklockviz/localproc/proctest"
	"github.com/zklockviz/zklockviz/postgres/pglocal"
)

// ForTest starts a server and closes it when the test ends. Without PostgreSQL
// installed the test is skipped, or fails when CI=true.
func ForTest(t testing.TB) *pglocal.Server {
	t.Helper()
	return ForTestWith(t, pglocal.Options{})
}

// ForTestWith is ForTest with options.
func ForTestWith(t testing.TB, opts pglocal.Options) *pglocal.Server {
	t.Helper()
	return proctest.ForTestOne(t, pglocal.ErrNotInstalled, pglocal.Start, opts)
}

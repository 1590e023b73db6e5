package zklocal

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"
)

// Generous: several packages' tests may start JVMs at once on a small box.
const (
	testStartTimeout    = 90 * time.Second
	testEnsembleTimeout = 180 * time.Second
)

// ForTest starts a standalone server with default options and closes it when
// the test ends. Without a ZooKeeper installation the test is skipped, or
// fails when CI=true so CI cannot silently skip everything.
func ForTest(t testing.TB) *Server {
	t.Helper()
	return ForTestWith(t, Options{})
}

// ForTestWith is ForTest with options.
func ForTestWith(t testing.TB, opts Options) *Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testStartTimeout)
	defer cancel()
	s, err := Start(ctx, opts)
	if err != nil {
		notInstalled(t, err)
		t.Fatalf("zklocal: start server: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("zklocal: last output of %s:\n%s", s.name(), s.Output())
		}
		if err := s.Close(); err != nil {
			t.Errorf("zklocal: close: %v", err)
		}
	})
	return s
}

// EnsembleForTest starts an n-member ensemble and closes it when the test
// ends; see ForTest.
func EnsembleForTest(t testing.TB, n int) *Ensemble {
	t.Helper()
	return EnsembleForTestWith(t, n, Options{})
}

// EnsembleForTestWith is EnsembleForTest with options.
func EnsembleForTestWith(t testing.TB, n int, opts Options) *Ensemble {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testEnsembleTimeout)
	defer cancel()
	e, err := StartEnsemble(ctx, n, opts)
	if err != nil {
		notInstalled(t, err)
		t.Fatalf("zklocal: start ensemble: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, m := range e.Members() {
				t.Logf("zklocal: last output of %s:\n%s", m.name(), m.Output())
			}
		}
		if err := e.Close(); err != nil {
			t.Errorf("zklocal: close ensemble: %v", err)
		}
	})
	return e
}

func notInstalled(t testing.TB, err error) {
	t.Helper()
	if !errors.Is(err, ErrNotInstalled) {
		return
	}
	const hint = " (on Debian/Ubuntu install the package `zookeeper`)"
	if os.Getenv("CI") == "true" {
		t.Fatal(err.Error() + hint)
	}
	t.Skip(err.Error() + hint)
}

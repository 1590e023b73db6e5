package zklocal

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zklockviz/zklockviz/localproc"
)

// Generous: several packages' tests may start JVMs at once on a small box.
const testEnsembleTimeout = 180 * time.Second

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
	return localproc.ForTestOne(t, ErrNotInstalled, Start, opts)
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
		localproc.SkipIfNotInstalled(t, err, ErrNotInstalled)
		t.Fatalf("zklocal: start ensemble: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, m := range e.Members() {
				t.Logf("zklocal: last output of %s:\n%s", m.Name(), m.Output())
			}
		}
		// Not member by member: Close stops them in parallel.
		if err := e.Close(); err != nil {
			t.Errorf("zklocal: close ensemble: %v", err)
		}
	})
	return e
}

// Connect opens a go-zookeeper session to addrs for a test, waits until it
// has a session (zk.Connect returns before there is one) and closes it when
// the test ends. The client's own log is discarded.
func Connect(t testing.TB, addrs ...string) *zk.Conn {
	t.Helper()
	conn, events, err := zk.Connect(addrs, 10*time.Second, zk.WithLogger(discard{}))
	if err != nil {
		t.Fatalf("zklocal: connect to %v: %v", addrs, err)
	}
	t.Cleanup(conn.Close)
	// A bound on "eventually" for a loaded box, not a speed assertion.
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return conn
			}
		case <-timeout:
			t.Fatalf("zklocal: no session with %v after 30s (state %v)", addrs, conn.State())
		}
	}
}

type discard struct{}

func (discard) Printf(string, ...any) {}

// NodeName turns the test's name into one znode path segment (subtests'
// slashes and other odd characters become '_'), so each test can work under
// its own root.
func NodeName(t testing.TB) string {
	b := []byte(t.Name())
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}

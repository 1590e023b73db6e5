// Package zktest holds zklocal's test helpers: a server or an ensemble for a
// test, closed when it ends, and a client session to it. It is imported only
// from tests, so the binary does not link package testing.
package zktest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/third_party/zk"

	"github.com/zklockviz/zklockviz/localproc/proctest"
	"github.com/zklockviz/zklockviz/testca"
	"github.com/zklockviz/zklockviz/zookeeper/zklocal"
)

// Generous: several packages' tests may start JVMs at once on a small box.
const testEnsembleTimeout = 180 * time.Second

// ForTest starts a standalone server with default options and closes it when
// the test ends. Without a ZooKeeper installation the test is skipped, or
// fails when CI=true so CI cannot silently skip everything.
func ForTest(t testing.TB) *zklocal.Server {
	t.Helper()
	return ForTestWith(t, zklocal.Options{})
}

// ForTestWith is ForTest with options.
func ForTestWith(t testing.TB, opts zklocal.Options) *zklocal.Server {
	t.Helper()
	return proctest.ForTestOne(t, zklocal.ErrNotInstalled, zklocal.Start, opts)
}

// Ensemble is a zklocal ensemble with what tests ask of it: its addresses
// and its leader.
type Ensemble struct{ *zklocal.Ensemble }

// Addrs returns every member's client address, the form zk.Connect takes.
func (e Ensemble) Addrs() []string {
	addrs := make([]string, len(e.Members()))
	for i, m := range e.Members() {
		addrs[i] = m.Addr()
	}
	return addrs
}

// ConnectString is "127.0.0.1:a,127.0.0.1:b,...".
func (e Ensemble) ConnectString() string { return strings.Join(e.Addrs(), ",") }

// Leader returns the index in Members of the current leader, asking each
// running member's `srvr`.
func (e Ensemble) Leader() (int, error) {
	for i, m := range e.Members() {
		if !m.Running() {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		mode, err := zklocal.Mode(ctx, m.Addr())
		cancel()
		if err == nil && mode == "leader" {
			return i, nil
		}
	}
	return -1, errors.New("zklocal: no member reports Mode: leader")
}

// WaitLeader polls Leader until there is one or ctx is done, e.g. after
// stopping the old leader.
func (e Ensemble) WaitLeader(ctx context.Context) (int, error) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		i, err := e.Leader()
		if err == nil {
			return i, nil
		}
		select {
		case <-ctx.Done():
			return -1, fmt.Errorf("zklocal: wait for leader: %w (%w)", ctx.Err(), err)
		case <-t.C:
		}
	}
}

// EnsembleForTest starts an n-member ensemble and closes it when the test
// ends; see ForTest.
func EnsembleForTest(t testing.TB, n int) Ensemble {
	t.Helper()
	return EnsembleForTestWith(t, n, zklocal.Options{})
}

// EnsembleForTestWith is EnsembleForTest with options.
func EnsembleForTestWith(t testing.TB, n int, opts zklocal.Options) Ensemble {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testEnsembleTimeout)
	defer cancel()
	e, err := zklocal.StartEnsemble(ctx, n, opts)
	if err != nil {
		proctest.SkipIfNotInstalled(t, err, zklocal.ErrNotInstalled)
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
	return Ensemble{e}
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

// UntrustedClientCert writes a client certificate and key (PEM files in
// dir) from a fresh CA that no zklocal server trusts: what a server with
// Options.TLSClientAuth must refuse.
func UntrustedClientCert(dir string) (certFile, keyFile string, err error) {
	ca, err := testca.New("zklocal untrusted CA")
	if err != nil {
		return "", "", err
	}
	return ca.WriteCert(dir, "untrusted-client")
}

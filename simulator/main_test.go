package simulator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/zklocal"
)

// zkAddr is the one ZooKeeper every test in this package shares: a JVM per
// test would crowd a small machine. Each run works under its own path.
var zkAddr string

// testSessionTimeout keeps expiry steps short; the server's minimum is two
// 200ms ticks.
const testSessionTimeout = time.Second

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	s, err := zklocal.Start(ctx, zklocal.Options{})
	cancel()
	switch {
	case errors.Is(err, zklocal.ErrNotInstalled) && os.Getenv("CI") != "true":
		fmt.Fprintf(os.Stderr, "SKIP simulator tests: %v (install the Debian package zookeeper)\n", err)
		return 0
	case err != nil:
		fmt.Fprintf(os.Stderr, "simulator tests need a local ZooKeeper: %v\n", err)
		return 1
	}
	zkAddr = s.Addr()
	code := m.Run()
	if err := s.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "zklocal: close: %v\n", err)
	}
	return code
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newManager starts a Manager on the shared server under a root of the
// test's own, closed when the test ends.
func newManager(t testing.TB, cfg ManagerConfig) *Manager {
	t.Helper()
	cfg.Servers = []string{zkAddr}
	if cfg.Root == "" {
		cfg.Root = "/test/" + safeName(t.Name())
	}
	if cfg.SessionTimeout == 0 {
		cfg.SessionTimeout = testSessionTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = quietLogger()
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatalf("simulator.New: %v", err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("manager close: %v", err)
		}
	})
	return m
}

func safeName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}

// runAll steps a run to its end.
func runAll(t testing.TB, r *Run) {
	t.Helper()
	for !r.Done() {
		if err := r.Step(); err != nil {
			t.Fatalf("step: %v", err)
		}
	}
}

package zksim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/simulator"
	"github.com/zklockviz/zklockviz/zookeeper/zklocal"
	"github.com/zklockviz/zklockviz/zookeeper/zklocal/zktest"
)

// zkAddr is the one ZooKeeper every test in this package shares: a JVM per
// test would crowd a small machine. Each run works under its own path.
var zkAddr string

// testSessionTimeout is every simulated client's session timeout: short,
// because each crash or pause step waits one out, but not 1s. go-zookeeper
// drops a connection that hears nothing for 2/3 of the timeout, while an
// idle client pings only every 1/3, so a stall of the server or of the test
// process longer than a third of the timeout drops every connection; the
// request in flight fails ("zk: could not connect to a server"), and with
// one server the client waits 1s before redialling. At 1s a 500ms stall did
// that on an idle box, and the loaded 2-core CI box stalls that long: it
// failed TestCLIGCPause/fencing_on, whose LOCK2 must outlive LOCK1's pause.
// At 3s an 800ms stall drops nothing.
const testSessionTimeout = 3 * time.Second

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	s, err := zklocal.Start(ctx, zklocal.Options{})
	cancel()
	switch {
	case errors.Is(err, zklocal.ErrNotInstalled) && os.Getenv("CI") != "true":
		fmt.Fprintf(os.Stderr, "SKIP zksim tests: %v (install the Debian package zookeeper)\n", err)
		return 0
	case err != nil:
		fmt.Fprintf(os.Stderr, "zksim tests need a local ZooKeeper: %v\n", err)
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
func newManager(t testing.TB, cfg simulator.ManagerConfig) *simulator.Manager {
	t.Helper()
	m, _ := newManagerOn(t, Config{}, cfg)
	return m
}

// newManagerOn is newManager with the backend's own configuration (its
// session timeout), and the backend, for tests that set its hooks before
// the first run.
func newManagerOn(t testing.TB, zc Config, cfg simulator.ManagerConfig) (*simulator.Manager, *Backend) {
	t.Helper()
	zc.Servers = []string{zkAddr}
	if zc.SessionTimeout == 0 {
		zc.SessionTimeout = testSessionTimeout
	}
	if cfg.Root == "" {
		cfg.Root = "/test/" + zktest.NodeName(t)
	}
	if cfg.Logger == nil {
		cfg.Logger = quietLogger()
	}
	b, err := newBackend(zc, cfg)
	if err != nil {
		t.Fatalf("zksim: %v", err)
	}
	cfg.Backend = b
	m, err := simulator.New(cfg)
	if err != nil {
		t.Fatalf("simulator.New: %v", err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("manager close: %v", err)
		}
	})
	return m, b
}

// runAll steps a run to its end.
func runAll(t testing.TB, r *simulator.Run) {
	t.Helper()
	for !r.Done() {
		if err := r.Step(); err != nil {
			t.Fatalf("step: %v", err)
		}
	}
}

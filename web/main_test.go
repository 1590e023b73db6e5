package web

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/simulator"
	"github.com/zklockviz/zklockviz/zookeeper/zklocal"
	"github.com/zklockviz/zklockviz/zookeeper/zklocal/zktest"
	"github.com/zklockviz/zklockviz/zookeeper/zksim"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if sharedZK.server != nil {
		if err := sharedZK.server.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "zklocal: close: %v\n", err)
		}
	}
	os.Exit(code)
}

// sharedZK is the one ZooKeeper the classroom tests share, started by the first
// test that needs one: most of this package's tests need none.
var sharedZK struct {
	once   sync.Once
	server *zklocal.Server
	err    error
}

// zkAddr starts the shared ZooKeeper, or skips the test where the Debian
// package is not installed (outside CI).
func zkAddr(t testing.TB) string {
	t.Helper()
	sharedZK.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		sharedZK.server, sharedZK.err = zklocal.Start(ctx, zklocal.Options{})
	})
	switch {
	case errors.Is(sharedZK.err, zklocal.ErrNotInstalled) && os.Getenv("CI") != "true":
		t.Skipf("needs a local ZooKeeper: %v (install the Debian package zookeeper)", sharedZK.err)
	case sharedZK.err != nil:
		t.Fatalf("start ZooKeeper: %v", sharedZK.err)
	}
	return sharedZK.server.Addr()
}

// newSim starts a simulator on the shared ZooKeeper under a root of the
// test's own, publishing to hub when given; closed when the test ends.
func newSim(t testing.TB, cfg simulator.ManagerConfig) *simulator.Manager {
	t.Helper()
	if cfg.Root == "" {
		cfg.Root = "/webtest/" + zktest.NodeName(t)
	}
	if cfg.Logger == nil {
		cfg.Logger = testLogger(t)
	}
	m, err := zksim.New(zksim.Config{Servers: []string{zkAddr(t)}, SessionTimeout: time.Second}, cfg)
	if err != nil {
		t.Fatalf("simulator.New: %v", err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("simulator close: %v", err)
		}
	})
	return m
}

// idleSim is a simulator that never reaches a ZooKeeper: enough for the
// routes that start no run.
func idleSim(t testing.TB) *simulator.Manager {
	t.Helper()
	m, err := zksim.New(zksim.Config{Servers: []string{"127.0.0.1:1"}}, simulator.ManagerConfig{Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("simulator.New: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/zklockviz/zklockviz/etcdlock"
	"github.com/zklockviz/zklockviz/lockservice"
	"github.com/zklockviz/zklockviz/simulator"
)

// simEtcd runs `zklockviz sim --service etcd`: the classroom starts its
// own etcd, so no --zk or --etcd is needed.
func simEtcd(ctx context.Context, f *simFlags, stdout, stderr io.Writer) (int, error) {
	switch {
	case f.scenario == "":
		return 0, usagef("missing --scenario: a built-in (%s) or a .json file", strings.Join(etcdlock.BuiltinNames(), ", "))
	case f.strategy != "":
		return 0, usagef("--strategy is ZooKeeper's: etcd's Mutex waiters always watch their predecessor")
	case f.clientsSet:
		return 0, usagef("--clients: the etcd scenarios have a fixed cast; drop --clients")
	case f.format != "text" && f.format != "json":
		return 0, usagef("--format %q: want text or json", f.format)
	}
	fencing, err := parseFencing(f.fencing)
	if err != nil {
		return 0, err
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(f.level)); err != nil {
		return 0, usagef("--log-level %q: want debug, info, warn or error", f.level)
	}
	sc, err := etcdlock.LoadScenario(f.scenario)
	if err != nil {
		return 0, err
	}
	_, m, err := etcdlock.NewClassroom(simulator.ManagerConfig{
		Root: f.root, IdleTimeout: -1,
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lvl})),
	})
	if err != nil {
		return 0, usagef("%v", err)
	}
	defer func() {
		if err := m.Close(); err != nil {
			fmt.Fprintf(stderr, "zklockviz sim: clean up: %v\n", err)
		}
	}()
	rep, err := playRun(ctx, m, simulator.Spec{Definition: sc, Fencing: fencing})
	if err != nil {
		return 0, err
	}
	return writeReport(stdout, rep, f.format)
}

// registerEtcdService registers etcd (its reader, if any, in svc) with its
// classroom when the classroom is on. Its etcd starts with the first etcd
// run and stops with serve.
func (m *Main) registerEtcdService(svc lockservice.Service) error {
	if m.Config.Sim {
		cls, sim, err := etcdlock.NewClassroom(simulator.ManagerConfig{
			Root: m.Config.SimRoot, Logger: m.log, Publish: m.hub.Publish, Remove: m.hub.Remove,
		})
		if err != nil {
			return fmt.Errorf("etcd classroom: %w", err)
		}
		prev := m.stopSim
		m.stopSim = func() error {
			var err error
			if prev != nil {
				err = prev()
			}
			return errors.Join(err, sim.Close())
		}
		svc.Classroom = cls
	}
	return m.services.Register(svc)
}

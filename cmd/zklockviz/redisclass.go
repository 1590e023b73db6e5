package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/zklockviz/zklockviz/etcdlock"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/lockservice"
	"github.com/zklockviz/zklockviz/pglock"
	"github.com/zklockviz/zklockviz/redislock"
	"github.com/zklockviz/zklockviz/simulator"
)

// simService runs `zklockviz sim --service NAME` for a service other than
// ZooKeeper: its classroom starts its own server, so no --zk is needed.
func simService(ctx context.Context, f *simFlags, stdout, stderr io.Writer) (int, error) {
	if f.service == pglock.Name {
		return simPostgres(ctx, f, stdout, stderr)
	}
	if f.service != redislock.Name {
		return 0, usagef("--service %q: want %s, %s, %s or %s", f.service, lockqueue.ZooKeeper, redislock.Name, etcdlock.Name, pglock.Name)
	}
	switch {
	case f.scenario == "":
		return 0, usagef("missing --scenario: a built-in (%s) or a .json file", strings.Join(redislock.BuiltinNames(), ", "))
	case f.strategy != "":
		return 0, usagef("--strategy is ZooKeeper's: Redis waiters poll")
	case f.clientsSet:
		return 0, usagef("--clients: the Redis scenarios have a fixed cast; drop --clients")
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
	sc, err := redislock.LoadScenario(f.scenario)
	if err != nil {
		return 0, err
	}
	_, m, err := redislock.NewClassroom(simulator.ManagerConfig{
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

// parseFencing reads --fencing: nil for the scenario's own.
func parseFencing(s string) (*bool, error) {
	switch s {
	case "":
		return nil, nil
	case "on", "true", "off", "false":
		on := s == "on" || s == "true"
		return &on, nil
	}
	return nil, usagef("--fencing %q: want on or off", s)
}

// newRedisClassroom is Redis's classroom under serve --sim (nil when the
// classroom is off). Its redis-server starts with the first Redis run and
// stops with serve (stopSim).
func (m *Main) newRedisClassroom() (lockservice.Classroom, error) {
	if !m.Config.Sim {
		return nil, nil
	}
	cls, sim, err := redislock.NewClassroom(simulator.ManagerConfig{
		Root: m.Config.SimRoot, Logger: m.log, Publish: m.hub.Publish, Remove: m.hub.Remove,
	})
	if err != nil {
		return nil, fmt.Errorf("redis classroom: %w", err)
	}
	prev := m.stopSim
	m.stopSim = func() error {
		var err error
		if prev != nil {
			err = prev()
		}
		return errors.Join(err, sim.Close())
	}
	return cls, nil
}

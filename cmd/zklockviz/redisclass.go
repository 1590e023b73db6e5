package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"unicode"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/lockservice"
	"github.com/zklockviz/zklockviz/pglock"
	"github.com/zklockviz/zklockviz/redislock"
	"github.com/zklockviz/zklockviz/simulator"
)

// redisService is Redis's registry name and --service value.
const redisService = "redis"

// simService runs `zklockviz sim --service NAME` for a service other than
// ZooKeeper: its classroom starts its own server, so no --zk is needed.
func simService(ctx context.Context, f *simFlags, stdout, stderr io.Writer) (int, error) {
	if f.service == pglock.Name {
		return simPostgres(ctx, f, stdout, stderr)
	}
	if f.service != redisService {
		return 0, usagef("--service %q: want %s, %s or %s", f.service, lockqueue.ZooKeeper, redisService, pglock.Name)
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

// registerRedisClassroom registers Redis's classroom when the classroom
// is on. Its redis-server starts with the first Redis run and stops with
// serve. (Temporary until redislock.Service joins it with the live reader.)
func (m *Main) registerRedisClassroom() error {
	if !m.Config.Sim {
		return nil
	}
	cls, sim, err := redislock.NewClassroom(simulator.ManagerConfig{
		Root: m.Config.SimRoot, Logger: m.log, Publish: m.hub.Publish, Remove: m.hub.Remove,
	})
	if err != nil {
		return fmt.Errorf("redis classroom: %w", err)
	}
	prev := m.stopSim
	m.stopSim = func() error {
		var err error
		if prev != nil {
			err = prev()
		}
		return errors.Join(err, sim.Close())
	}
	return m.services.Register(lockservice.Service{Name: redisService, Title: "Redis", CheckName: checkRedisKey, Classroom: cls})
}

// checkRedisKey accepts a Redis key as a lock name: not empty, at most
// 1024 bytes, no spaces or control characters (they could not be typed
// in --watch or a URL without quoting).
func checkRedisKey(k string) error {
	if k == "" || len(k) > 1024 || strings.ContainsFunc(k, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
		return fmt.Errorf("redis key %q: want 1 to 1024 bytes without spaces or control characters: %w", k, lockservice.ErrBadName)
	}
	return nil
}

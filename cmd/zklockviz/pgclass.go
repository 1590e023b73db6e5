package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/zklockviz/zklockviz/lockservice"
	"github.com/zklockviz/zklockviz/pglock"
	"github.com/zklockviz/zklockviz/simulator"
)

// simPostgres runs `zklockviz sim --service postgres`: the classroom
// starts its own PostgreSQL, so no --zk or --postgres is needed.
func simPostgres(ctx context.Context, f *simFlags, stdout, stderr io.Writer) (int, error) {
	switch {
	case f.scenario == "":
		return 0, usagef("missing --scenario: a built-in (%s) or a .json file", strings.Join(pglock.BuiltinNames(), ", "))
	case f.strategy != "":
		return 0, usagef("--strategy is ZooKeeper's: PostgreSQL's waiters queue in the server")
	case f.clientsSet:
		return 0, usagef("--clients: the PostgreSQL scenarios have a fixed cast; drop --clients")
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
	sc, err := pglock.LoadScenario(f.scenario)
	if err != nil {
		return 0, err
	}
	_, m, err := pglock.NewClassroom(simulator.ManagerConfig{
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

// withPostgresClassroom adds PostgreSQL's classroom to its service when
// the classroom is on. Its server starts with the first PostgreSQL run and
// stops with serve.
func (m *Main) withPostgresClassroom(s lockservice.Service) (lockservice.Service, error) {
	if !m.Config.Sim {
		return s, nil
	}
	cls, sim, err := pglock.NewClassroom(simulator.ManagerConfig{
		Root: m.Config.SimRoot, Logger: m.log, Publish: m.hub.Publish, Remove: m.hub.Remove,
	})
	if err != nil {
		return s, fmt.Errorf("postgres classroom: %w", err)
	}
	prev := m.stopSim
	m.stopSim = func() error {
		var err error
		if prev != nil {
			err = prev()
		}
		return errors.Join(err, sim.Close())
	}
	s.Classroom = cls
	return s, nil
}

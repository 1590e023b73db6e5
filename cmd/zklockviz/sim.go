package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/zklockviz/zklockviz/simulator"
)

const simUsage = `Usage: zklockviz sim --zk HOST:PORT[,HOST:PORT...][/chroot] --scenario NAME|FILE [flags]

Replays a lock scenario with real ZooKeeper clients (one session each) and
prints the timeline: one row per event, like seed 000's table. Every step
performs one action, then waits until each client holds, waits on its watch
or is gone. Writes only under --sim-root, and removes what it created.

Flags:
  --zk HOST:PORT[,...][/chroot]  the ensemble (or ZKLOCKVIZ_ZK)
  --scenario NAME|FILE           a built-in (%s) or a scenario .json file (JSON only)
  --strategy herd|predecessor    how waiters watch (default: the scenario's)
  --clients N                    clients for the scenario's "*" steps (herd: 20); an
                                 error for a scenario without "*" steps
  --fencing on|off               the protected resource checks fencing tokens (default: the scenario's)
  --format text|json             output (default text)
  --sim-root /path               the sandbox (default /zklockviz/sim)
  --session-timeout 2s           each client's ZooKeeper session timeout
  --log-level warn               debug, info, warn or error (to stderr)

Exit status: 0 no safety violation, 1 a violation or a failure, 2 bad usage
or a bad scenario.

Examples:
  zklockviz sim --zk 127.0.0.1:2181 --scenario lock1-5
  zklockviz sim --zk 127.0.0.1:2181 --scenario lock1-5 --strategy herd
  zklockviz sim --zk 127.0.0.1:2181 --scenario gc-pause --fencing off --format json
`

// defaultSimRoot is serve's --sim-root default: the simulator's own.
const defaultSimRoot = simulator.DefaultRoot

// checkSimRoot checks a --sim-root value with the simulator's own rules, so
// a bad one is a usage error at flag time (exit 2), not a failure later.
func checkSimRoot(root string) error {
	if err := simulator.CheckRoot(root); err != nil {
		return fmt.Errorf("--sim-root %w", err)
	}
	return nil
}

// runSim runs `zklockviz sim ...` and returns the exit status.
func runSim(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	code, err := sim(ctx, args, stdout, stderr)
	switch {
	case errors.Is(err, errHelp):
		return 0
	case errors.As(err, new(*usageError)) || errors.Is(err, simulator.ErrInvalid):
		fmt.Fprintf(stderr, "zklockviz sim: %v\nRun 'zklockviz sim --help' for usage.\n", err)
		return 2
	case err != nil:
		fmt.Fprintf(stderr, "zklockviz sim: %v\n", err)
		return 1
	}
	return code
}

func sim(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var (
		zkFlag, scenario, strategy, fencing, format, root, level string
		clients                                                  int
		sessionTimeout                                           time.Duration
	)
	fs.StringVar(&zkFlag, "zk", os.Getenv("ZKLOCKVIZ_ZK"), "")
	fs.StringVar(&scenario, "scenario", "", "")
	fs.StringVar(&strategy, "strategy", "", "")
	fs.IntVar(&clients, "clients", 0, "")
	fs.StringVar(&fencing, "fencing", "", "")
	fs.StringVar(&format, "format", "text", "")
	fs.StringVar(&root, "sim-root", simulator.DefaultRoot, "")
	fs.DurationVar(&sessionTimeout, "session-timeout", 2*time.Second, "")
	fs.StringVar(&level, "log-level", "warn", "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stdout, simUsage, strings.Join(simulator.BuiltinNames(), ", "))
			return 0, errHelp
		}
		return 0, usagef("%v", err)
	}
	if fs.NArg() > 0 {
		return 0, usagef("unexpected argument %q (flags start with --)", fs.Arg(0))
	}
	servers, chroot, err := parseZK(zkFlag)
	if err != nil {
		return 0, usagef("%v", err)
	}
	if scenario == "" {
		return 0, usagef("missing --scenario: a built-in (%s) or a .json file", strings.Join(simulator.BuiltinNames(), ", "))
	}
	spec := simulator.Spec{}
	clientsSet := false
	fs.Visit(func(f *flag.Flag) { clientsSet = clientsSet || f.Name == "clients" })
	if clientsSet {
		spec.Clients = &clients
	}
	if strategy != "" {
		st, err := simulator.ParseStrategy(strategy)
		if err != nil {
			return 0, usagef("--strategy: %v", err)
		}
		spec.Strategy = st
	}
	switch fencing {
	case "":
	case "on", "true":
		on := true
		spec.Fencing = &on
	case "off", "false":
		off := false
		spec.Fencing = &off
	default:
		return 0, usagef("--fencing %q: want on or off", fencing)
	}
	if format != "text" && format != "json" {
		return 0, usagef("--format %q: want text or json", format)
	}
	if clientsSet && (clients < 1 || clients > simulator.MaxClients) {
		return 0, usagef("--clients %d: want 1 to %d", clients, simulator.MaxClients)
	}
	if sessionTimeout <= 0 {
		return 0, usagef("--session-timeout %v: must be positive", sessionTimeout)
	}
	if err := checkSimRoot(root); err != nil {
		return 0, usagef("%v", err)
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return 0, usagef("--log-level %q: want debug, info, warn or error", level)
	}
	sc, err := simulator.LoadScenario(scenario)
	if err != nil {
		return 0, err
	}
	if clientsSet && !sc.Wildcard() {
		return 0, usagef("--clients %d: scenario %s has no steps with client \"*\", so its clients are the ones its steps name; drop --clients", clients, sc.Name)
	}
	spec.Definition = sc

	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lvl}))
	m, err := simulator.New(simulator.ManagerConfig{
		Servers: servers, Chroot: chroot, Root: root, SessionTimeout: sessionTimeout, Logger: log, IdleTimeout: -1,
	})
	if err != nil {
		return 0, usagef("%v", err)
	}
	defer func() {
		if err := m.Close(); err != nil {
			fmt.Fprintf(stderr, "zklockviz sim: clean up: %v\n", err)
		}
	}()
	run, err := m.Start(spec)
	if err != nil {
		return 0, err
	}
	// Ctrl-C ends the run early; what was recorded is still printed.
	stop := context.AfterFunc(ctx, func() { m.Delete(run.ID()) })
	defer stop()
	var stepErr error
	for !run.Done() && ctx.Err() == nil {
		if stepErr = run.Step(); stepErr != nil {
			break
		}
	}
	rep := run.Report()
	if stepErr != nil && rep.Error == "" {
		rep.Error = stepErr.Error()
	}
	if ctx.Err() != nil && rep.Error == "" {
		rep.Error = "interrupted"
	}
	if format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(rep)
	} else {
		err = simulator.WriteText(stdout, rep)
	}
	if err != nil {
		return 1, fmt.Errorf("write the timeline: %w", err)
	}
	switch {
	case rep.Error != "":
		return 1, fmt.Errorf("the run stopped: %s", rep.Error)
	case len(rep.Violations) > 0:
		return 1, nil
	}
	return 0, nil
}

// newSim starts the simulator for serve --sim (web serves it at
// /api/v1/sim) and returns it with a function that stops it.
func newSim(ctx context.Context, d simDeps) (*simulator.Manager, func() error, error) {
	m, err := simulator.New(simulator.ManagerConfig{
		Servers: d.Servers, Chroot: d.Chroot, Root: d.Root, Logger: d.Logger,
		Publish: d.Hub.Publish, Remove: d.Hub.Remove,
	})
	if err != nil {
		return nil, nil, err // New's errors start with "simulator: "
	}
	return m, m.Close, nil
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/zklockviz/zklockviz/lockservice"
	"github.com/zklockviz/zklockviz/simulator"
	"github.com/zklockviz/zklockviz/zookeeper/zklocal"
	"github.com/zklockviz/zklockviz/zookeeper/zksim"
)

const sideUsage = `Usage: zklockviz sim --scenario side-by-side [--zk HOST:PORT] [flags]

Scenario 12: the same story (four clients; the holder pauses past its lease
or session timeout, then wakes and writes) on ZooKeeper, Redis without and
with an owner token, etcd and PostgreSQL, stepped in lockstep, then a verdict
per run: mutual exclusion held or broken (and for how long), and whether
fencing caught the stale write. Each run is an ordinary run of its service's
own scenario (%s).
Redis, etcd and PostgreSQL start their own throwaway servers; ZooKeeper uses
--zk, or a throwaway local ZooKeeper when --zk is not given. A service whose
server is not installed is reported as unavailable, with the package to install.

Flags:
  --zk HOST:PORT[,...][/chroot]  a ZooKeeper ensemble (or ZKLOCKVIZ_ZK); default: start one
  --zk-timeout 5s                how long ZooKeeper may take to give a session
  --format text|json             output (default text)
  --sim-root /path               the sandbox (default /zklockviz/sim)
  --session-timeout 2s           each ZooKeeper client's session timeout
  --log-level warn               debug, info, warn or error (to stderr)

Exit status: 0 every available run ended, 1 a run failed or none could run,
2 bad usage.
The verdicts are the lesson, not a failure: a broken mutual exclusion is
what some of these runs are there to show.
`

// simEntry is `zklockviz sim`: scenario 12 (side by side) runs every
// service; anything else is one run (sim).
func simEntry(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) (int, error) {
	var f simFlags
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f.register(fs)
	// --help after --scenario side-by-side is scenario 12's help.
	if err := fs.Parse(args); err != nil && !errors.Is(err, flag.ErrHelp) || f.scenario != lockservice.SideBySideName {
		return sim(ctx, args, stdout, stderr, getenv)
	}
	return simSideBySide(ctx, args, stdout, stderr, getenv)
}

// SideResult is one pane's outcome as the CLI prints it.
type SideResult struct {
	lockservice.SidePane
	// Unavailable says why the run could not start (its server is not
	// installed); the other fields are then empty.
	Unavailable string                `json:"unavailable,omitempty"`
	Error       string                `json:"error,omitempty"`
	Steps       int                   `json:"steps"`
	Verdict     *simulator.Verdict    `json:"verdict,omitempty"`
	Meters      *simulator.Meters     `json:"meters,omitempty"`
	Violations  []simulator.Violation `json:"violations,omitempty"`
}

// sidePane is a pane's manager and run while the story plays.
type sidePane struct {
	res SideResult
	m   *simulator.Manager
	run *simulator.Run
	err error
}

func simSideBySide(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) (int, error) {
	f, log, err := sideFlags(args, stdout, stderr, getenv)
	if err != nil {
		return 0, err
	}
	// ZooKeeper stops after the runs have removed what they wrote.
	zk, err := f.sideZK(ctx)
	if err != nil {
		return 0, err
	}
	defer zk.stop()
	panes, err := f.startPanes(zk, log)
	defer func() {
		for _, p := range panes {
			if p.m == nil {
				continue
			}
			if err := p.m.Close(); err != nil {
				fmt.Fprintf(stderr, "zklockviz sim: clean up %s: %v\n", p.res.Label, err)
			}
		}
	}()
	if err != nil {
		return 0, err
	}
	stepLockstep(ctx, panes)
	results, code := paneResults(ctx, panes)
	if err := writeSide(stdout, results, f.format); err != nil {
		return 1, err
	}
	ran := slices.ContainsFunc(results, func(r SideResult) bool { return r.Unavailable == "" })
	if !ran {
		return 1, errors.New("no service could run: install what each says above")
	}
	return code, nil
}

// sideFlags reads scenario 12's command line: sim's flags less those each
// pane's own scenario sets.
func sideFlags(args []string, stdout, stderr io.Writer, getenv func(string) string) (*simFlags, *slog.Logger, error) {
	var f simFlags
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	f.register(fs)
	names := make([]string, 0, len(sidePanes()))
	for _, p := range sidePanes() {
		names = append(names, p.Scenario)
	}
	if err := parseFlags(fs, args, getenv, fmt.Sprintf(sideUsage, strings.Join(names, ", ")), stdout); err != nil {
		return nil, nil, err
	}
	var bad []string
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "service", "strategy", "clients", "fencing":
			bad = append(bad, "--"+fl.Name)
		}
	})
	if len(bad) > 0 {
		return nil, nil, usagef("%s: scenario %s runs every service with its own scenario's settings; drop %s",
			strings.Join(bad, ", "), lockservice.SideBySideName, strings.Join(bad, ", "))
	}
	if f.format != "text" && f.format != "json" {
		return nil, nil, usagef("--format %q: want text or json", f.format)
	}
	if err := errors.Join(positive("session-timeout", f.sessionTimeout), checkSimRoot(f.root)); err != nil {
		return nil, nil, usagef("%v", err)
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(f.level)); err != nil {
		return nil, nil, usagef("--log-level %q: want debug, info, warn or error", f.level)
	}
	return &f, slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lvl})), nil
}

// startPanes starts each service's run of scenario 12. A service whose
// server is missing is a pane that says why; a bad built-in stops them all.
// The panes started so far come back with an error, to be closed.
func (f *simFlags) startPanes(zk sideZKConf, log *slog.Logger) ([]*sidePane, error) {
	panes := make([]*sidePane, 0, len(sidePanes()))
	for _, sp := range sidePanes() {
		p := &sidePane{res: SideResult{SidePane: sp}}
		panes = append(panes, p)
		p.m, p.err = f.sideManager(sp.Service, zk, log)
		if p.err == nil {
			p.run, p.err = p.m.Start(simulator.Spec{Scenario: sp.Scenario})
		}
		if p.err != nil {
			if errors.Is(p.err, simulator.ErrInvalid) {
				return panes, fmt.Errorf("%s: %w", sp.Label, p.err)
			}
			p.res.Unavailable = p.err.Error()
		}
	}
	return panes, nil
}

// paneResults reads each pane's outcome; code is 1 when a run failed.
func paneResults(ctx context.Context, panes []*sidePane) ([]SideResult, int) {
	code := 0
	results := make([]SideResult, 0, len(panes))
	for _, p := range panes {
		if p.run != nil {
			rep := p.run.Report()
			p.res.Steps, p.res.Verdict, p.res.Meters, p.res.Violations = len(rep.Steps), &rep.Verdict, &rep.Meters, rep.Violations
			p.res.Error = rep.Error
			if p.err != nil && p.res.Error == "" {
				p.res.Error = p.err.Error()
			}
			if ctx.Err() != nil && p.res.Error == "" {
				p.res.Error = "interrupted"
			}
			if p.res.Error != "" {
				code = 1
			}
		}
		results = append(results, p.res)
	}
	return results, code
}

// stepLockstep steps every started run once, all at once, and waits for
// all before the next step: the five stories move together, as in the
// classroom's panes. A run that fails stops; the others go on.
func stepLockstep(ctx context.Context, panes []*sidePane) {
	for ctx.Err() == nil {
		var wg sync.WaitGroup
		moved := false
		for _, p := range panes {
			if p.run == nil || p.err != nil || p.run.Done() {
				continue
			}
			moved = true
			wg.Go(func() { p.err = p.run.Step() })
		}
		if !moved {
			return
		}
		wg.Wait()
	}
}

// sideZKConf is the ZooKeeper the ZooKeeper pane uses.
type sideZKConf struct {
	servers []string
	chroot  string
	// missing says why there is none: the pane is unavailable, not the
	// whole command.
	missing string
	stop    func()
}

// sideZK makes ZooKeeper ready for the ZooKeeper pane: --zk's ensemble, or
// a throwaway local server.
func (f *simFlags) sideZK(ctx context.Context) (sideZKConf, error) {
	servers, chroot, err := f.conn.parse()
	if err == nil && len(servers) > 0 {
		if _, err := checkZK(ctx, zkTarget{Servers: servers, Timeout: f.conn.timeout}); err != nil {
			return sideZKConf{}, err
		}
		return sideZKConf{servers: servers, chroot: chroot, stop: func() {}}, nil
	}
	startCtx, cancel := context.WithTimeout(ctx, demoStartTimeout)
	zks, err := zklocal.Start(startCtx, zklocal.Options{})
	cancel()
	if err != nil {
		return sideZKConf{missing: fmt.Sprintf("no --zk given, and a local ZooKeeper did not start: %v", err), stop: func() {}}, nil
	}
	return sideZKConf{servers: []string{zks.Addr()}, stop: func() { zks.Close() }}, nil
}

// sideManager opens a pane's classroom on its service, as `sim --service`
// does for one run.
func (f *simFlags) sideManager(service string, zk sideZKConf, log *slog.Logger) (*simulator.Manager, error) {
	cfg := simulator.ManagerConfig{Root: f.root, IdleTimeout: -1, Logger: log}
	cs, err := classServiceNamed(service)
	if err != nil {
		return nil, err
	}
	var m *simulator.Manager
	if cs.newClassroom != nil {
		_, m, err = cs.newClassroom(cfg)
	} else {
		// ZooKeeper's classroom works on an ensemble: --zk's, or the one
		// sideZK started.
		if zk.missing != "" {
			return nil, errors.New(zk.missing)
		}
		m, err = zksim.New(zksim.Config{Servers: zk.servers, Chroot: zk.chroot, SessionTimeout: f.sessionTimeout}, cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("%s classroom: %w", service, err)
	}
	return m, nil
}

// writeSide prints the verdict table (text) or the results (json).
func writeSide(w io.Writer, results []SideResult, format string) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(results); err != nil {
			return fmt.Errorf("write the verdicts: %w", err)
		}
		return nil
	}
	var b strings.Builder
	b.WriteString("scenario 12, side by side: four clients; the holder pauses past its lease or session timeout, then wakes and writes\n\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "run\tscenario\tmutual exclusion\tstale write\trequests/s\tnotifications\thand-off")
	for _, r := range results {
		if r.Verdict == nil {
			fmt.Fprintf(tw, "%s\t%s\tunavailable\t-\t-\t-\t-\n", r.Label, r.Scenario)
			continue
		}
		excl := r.Verdict.Exclusion
		if r.Verdict.BrokenMs > 0 {
			excl += fmt.Sprintf(" for %.1fs", float64(r.Verdict.BrokenMs)/1000)
		}
		handoff := "-"
		if r.Meters.HandoffMs >= 0 {
			handoff = fmt.Sprintf("%d ms", r.Meters.HandoffMs)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.1f\t%d\t%s\n", r.Label, r.Scenario, excl, r.Verdict.StaleWrite,
			r.Meters.PerSec, r.Meters.Notifications, handoff)
	}
	tw.Flush()
	for _, r := range results {
		switch {
		case r.Unavailable != "":
			fmt.Fprintf(&b, "\n%s: unavailable: %s", r.Label, r.Unavailable)
		case r.Error != "":
			fmt.Fprintf(&b, "\n%s: the run stopped at step %d: %s", r.Label, r.Steps, r.Error)
		default:
			fmt.Fprintf(&b, "\n%s: %s", r.Label, r.Verdict.Summary)
		}
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	if err != nil {
		return fmt.Errorf("write the verdicts: %w", err)
	}
	return nil
}

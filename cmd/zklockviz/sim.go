package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/zklockviz/zklockviz/simulator"
	"github.com/zklockviz/zklockviz/zookeeper/zksim"
)

const simUsageFormat = `Usage: zklockviz sim --zk HOST:PORT[,HOST:PORT...][/chroot] --scenario NAME|FILE [flags]

Replays a lock scenario with real ZooKeeper clients (one session each) and
prints the timeline: one row per event, in a table. Every step
performs one action, then waits until each client holds, waits on its watch
or is gone. Writes only under --sim-root, and removes what it created.

Flags:
  --zk HOST:PORT[,...][/chroot]  the ensemble (or ZKLOCKVIZ_ZK)
  --zk-timeout 5s                how long ZooKeeper may take to give a session
                                 (or ZKLOCKVIZ_ZK_TIMEOUT); then exit 1, saying
                                 what failed at each address
  --scenario NAME|FILE           a built-in of the service (listed below) or a scenario
                                 .json file (JSON only)
  --service NAME                 the lock service: %s
                                 (default: the built-in scenario's own, else
                                 zookeeper); the others start their own
                                 server (no --zk)
  --strategy herd|predecessor    how waiters watch (default: the scenario's);
                                 ZooKeeper only
  --clients N                    clients for the scenario's "*" steps (herd: 20); an
                                 error for a scenario without "*" steps; ZooKeeper only
  --fencing on|off               the protected resource checks fencing tokens (default: the scenario's)
  --format text|json|svg         output (default text); svg: a time–space
                                 diagram of the run (one line per client,
                                 the server and the resource)
  --sim-root /path               the sandbox (default /zklockviz/sim)
  --session-timeout 2s           each client's ZooKeeper session timeout
  --log-level warn               debug, info, warn or error (to stderr)

Built-in scenarios:
%s
  side-by-side         the same pause-past-the-lease story on every
                       service at once, stepped in lockstep, with a verdict each
                       (see zklockviz sim --scenario side-by-side --help)

Exit status: 0 no safety violation, 1 a violation or a failure, 2 bad usage
or a bad scenario.

Examples:
  zklockviz sim --zk 127.0.0.1:2181 --scenario lock1-5
  zklockviz sim --zk 127.0.0.1:2181 --scenario lock1-5 --strategy herd
  zklockviz sim --zk 127.0.0.1:2181 --scenario gc-pause --fencing off --format json
  zklockviz sim --scenario redis-px-pause
  zklockviz sim --scenario etcd-lease-pause --fencing off
  zklockviz sim --scenario pg-deadlock
  zklockviz sim --scenario side-by-side
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
func runSim(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	code, err := simEntry(ctx, args, stdout, stderr, getenv)
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

// simFlags is sim's command line as given; spec checks it.
type simFlags struct {
	conn                                             zkConnFlags
	scenario, strategy, fencing, format, root, level string
	service                                          string
	clients                                          int
	sessionTimeout                                   time.Duration
	// clientsSet: --clients was given, so it is checked even when 0.
	clientsSet bool
}

func (f *simFlags) register(fs *flag.FlagSet) {
	f.conn.register(fs)
	fs.StringVar(&f.scenario, "scenario", "", "")
	fs.StringVar(&f.service, "service", "", "")
	fs.StringVar(&f.strategy, "strategy", "", "")
	fs.IntVar(&f.clients, "clients", 0, "")
	fs.StringVar(&f.fencing, "fencing", "", "")
	fs.StringVar(&f.format, "format", "text", "")
	fs.StringVar(&f.root, "sim-root", simulator.DefaultRoot, "")
	fs.DurationVar(&f.sessionTimeout, "session-timeout", 2*time.Second, "")
	fs.StringVar(&f.level, "log-level", "warn", "")
}

// spec checks the flags against the service and returns the run they ask
// for, its scenario loaded. Flag mistakes are *usageError; a bad scenario
// is simulator.ErrInvalid.
func (f *simFlags) spec(svc classService) (simulator.Spec, error) {
	spec := simulator.Spec{}
	switch {
	case f.scenario == "":
		return spec, usagef("missing --scenario: a built-in (%s) or a .json file", strings.Join(svc.catalog.Names(), ", "))
	case f.strategy != "" && svc.noStrategy != "":
		return spec, usagef("%s", svc.noStrategy)
	case f.clientsSet && svc.noClients != "":
		return spec, usagef("%s", svc.noClients)
	}
	if f.clientsSet {
		spec.Clients = &f.clients
	}
	if f.strategy != "" {
		st, err := simulator.ParseStrategy(f.strategy)
		if err != nil {
			return spec, usagef("--strategy: %v", err)
		}
		spec.Strategy = st
	}
	fencing, err := parseFencing(f.fencing)
	if err != nil {
		return spec, err
	}
	spec.Fencing = fencing
	if f.format != "text" && f.format != "json" && f.format != "svg" {
		return spec, usagef("--format %q: want text, json or svg", f.format)
	}
	if f.clientsSet && (f.clients < 1 || f.clients > simulator.MaxClients) {
		return spec, usagef("--clients %d: want 1 to %d", f.clients, simulator.MaxClients)
	}
	if err := errors.Join(positive("session-timeout", f.sessionTimeout), checkSimRoot(f.root)); err != nil {
		return spec, usagef("%v", err)
	}
	sc, err := svc.catalog.Load(f.scenario)
	if err != nil {
		if other := scenarioService(f.scenario); other != "" && other != svc.name {
			return spec, usagef("--scenario %s is a %s scenario, not %s's: use --service %s (or drop --service)", f.scenario, other, svc.name, other)
		}
		return spec, err
	}
	if f.clientsSet && !sc.Wildcard() {
		return spec, usagef("--clients %d: scenario %s has no steps with client \"*\", so its clients are the ones its steps name; drop --clients", f.clients, sc.Name)
	}
	spec.Definition = sc
	return spec, nil
}

// sim runs one scenario of any service: the flags checked against the
// service, its classroom's manager opened, the run played to its end.
func sim(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) (int, error) {
	var f simFlags
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	f.register(fs)
	if err := parseFlags(fs, args, getenv, simUsage(), stdout); err != nil {
		return 0, err
	}
	fs.Visit(func(fl *flag.Flag) { f.clientsSet = f.clientsSet || fl.Name == "clients" })
	f.service = cmp.Or(f.service, scenarioService(f.scenario))
	svc, err := classServiceNamed(f.service)
	if err != nil {
		return 0, err
	}
	if svc.newClassroom == nil {
		// --zk first: without an ensemble nothing else matters.
		if _, _, err := f.conn.parse(); err != nil {
			return 0, usagef("%v", err)
		}
	}
	spec, err := f.spec(svc)
	if err != nil {
		return 0, err
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(f.level)); err != nil {
		return 0, usagef("--log-level %q: want debug, info, warn or error", f.level)
	}
	m, err := f.manager(ctx, svc, simulator.ManagerConfig{
		Root: f.root, IdleTimeout: -1,
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lvl})),
	})
	if err != nil {
		return 0, err
	}
	defer func() {
		if err := m.Close(); err != nil {
			fmt.Fprintf(stderr, "zklockviz sim: clean up: %v\n", err)
		}
	}()
	rep, err := playRun(ctx, m, spec)
	if err != nil {
		return 0, err
	}
	return writeReport(stdout, rep, f.format)
}

// scenarioService is the service whose built-in scenario is named name,
// when --service was not given: a built-in's name belongs to one service,
// so `sim --scenario redis-px-pause` needs no --service redis. Empty (that
// is, ZooKeeper) for a file or a name no service has, which ZooKeeper's
// catalog then refuses with its list.
func scenarioService(name string) string {
	for _, s := range classServices {
		if _, ok := s.catalog.Builtin(name); ok {
			return s.name
		}
	}
	return ""
}

// manager opens the run's manager: the service's classroom on a server it
// starts, or ZooKeeper's on --zk's ensemble once that answers.
func (f *simFlags) manager(ctx context.Context, svc classService, cfg simulator.ManagerConfig) (*simulator.Manager, error) {
	var m *simulator.Manager
	var err error
	if svc.newClassroom != nil {
		_, m, err = svc.newClassroom(cfg)
	} else {
		zc := zksim.Config{SessionTimeout: f.sessionTimeout}
		zc.Servers, zc.Chroot, err = f.conn.parse()
		if err != nil {
			return nil, usagef("%v", err)
		}
		if _, err := checkZK(ctx, zkTarget{Servers: zc.Servers, Timeout: f.conn.timeout}); err != nil {
			return nil, err
		}
		m, err = zksim.New(zc, cfg)
	}
	if err != nil {
		return nil, usagef("%v", err)
	}
	return m, nil
}

// simUsage is sim's help, its service list and built-ins read from
// classServices so that it names what the binary runs.
func simUsage() string {
	var builtins []string
	for _, s := range classServices {
		head := "  " + s.name
		if s.pkg != "" {
			head += " (package " + s.pkg + ")"
		}
		builtins = append(builtins, head+":\n"+wrapList(s.catalog.Names(), "    ", 78))
	}
	return fmt.Sprintf(simUsageFormat, classServiceList(), strings.Join(builtins, ""))
}

// wrapList joins words with ", " in lines of at most width columns, each
// starting with indent.
func wrapList(words []string, indent string, width int) string {
	var b strings.Builder
	line := indent
	for i, w := range words {
		if i < len(words)-1 {
			w += ","
		}
		if line != indent && len(line)+1+len(w) > width {
			b.WriteString(line + "\n")
			line = indent
		}
		if line != indent {
			line += " "
		}
		line += w
	}
	return b.String() + line + "\n"
}

// playRun steps a run of spec to its end, or until ctx ends (Ctrl-C), and
// returns what was recorded.
func playRun(ctx context.Context, m *simulator.Manager, spec simulator.Spec) (simulator.Report, error) {
	run, err := m.Start(spec)
	if err != nil {
		return simulator.Report{}, err
	}
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
	return rep, nil
}

// writeReport prints the timeline and returns the exit status: 1 when the
// run stopped early or the checker found a violation.
func writeReport(w io.Writer, rep simulator.Report, format string) (int, error) {
	var err error
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		err = enc.Encode(rep)
	case "svg":
		err = simulator.WriteSVG(w, rep)
	default:
		err = simulator.WriteText(w, rep)
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

// newSim starts the simulator for serve --sim; web serves its routes.
func newSim(ctx context.Context, d simDeps) (*simulator.Manager, func() error, error) {
	m, err := zksim.New(zksim.Config{Servers: d.Servers, Chroot: d.Chroot}, simulator.ManagerConfig{
		Root: d.Root, Logger: d.Logger, Publish: d.Hub.Publish, Remove: d.Hub.Remove,
	})
	if err != nil {
		return nil, nil, err // New's errors start with "simulator: "
	}
	return m, m.Close, nil
}

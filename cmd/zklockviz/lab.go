package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/zklockviz/zklockviz/lab"
	"github.com/zklockviz/zklockviz/zkwatch"
	"github.com/zklockviz/zklockviz/zookeeper/zklab"
	"github.com/zklockviz/zklockviz/zookeeper/zklocal"
)

const labUsage = `Usage: zklockviz lab [flags]

The lock lab: real lock clients, each an OS process of its own, loop
acquire → read a shared counter → write it back one higher with their
fencing token → release, while a nemesis pauses them (SIGSTOP past their
session, like a long GC pause) or kills them (kill -9), on a schedule a seed
fixes. Every client says what it believes; the lab reports every moment two
clients believed they held the lock, the writes the counter took and lost,
and the writes the resource refused for a stale token (--fencing on).

Clients use ZooKeeper's lock recipe through go-zookeeper; the token is the
lock node's sequence number. Without --zk, a throwaway ZooKeeper is started
(Debian's zookeeper package) and stopped at the end. Point zklockviz serve
at the same ZooKeeper and --path to watch the run live.

Flags:
  --zk HOST:PORT        a ZooKeeper to use (default: start a throwaway one)
  --path PATH           the lock parent (default /zklockviz-lab/lock)
  --clients N           client processes (default 3)
  --duration DURATION   how long the nemesis runs (default 20s)
  --seed N              fixes the nemesis's schedule (default 1)
  --nemesis LIST        faults, comma-separated: pause, kill, or none
                        (default pause,kill)
  --every DURATION      time between faults (default 2s)
  --session DURATION    each client's session timeout (default 1s)
  --pause DURATION      how long a pause lasts (default 2.5 × --session)
  --fencing on|off      the resource refuses stale tokens (default on)
  --json                print the report and every event as JSON

Examples:
  zklockviz lab
  zklockviz lab --fencing off --seed 7 --duration 60s
  zklockviz lab --zk 127.0.0.1:2181 --path /locks/lab --nemesis pause
`

type labFlags struct {
	zk, path, nemesis, fencing string
	clients                    int
	seed                       uint64
	duration, every, session   time.Duration
	pause                      time.Duration
	json                       bool
}

func runLab(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f labFlags
	// Not parseFlags: its ZKLOCKVIZ_* defaults would point a lab run,
	// which writes lock nodes, at the ZooKeeper serve reads (production);
	// the lab writes only where --zk names, or to its own throwaway server.
	fs := flag.NewFlagSet("lab", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&f.zk, "zk", "", "")
	fs.StringVar(&f.path, "path", "/zklockviz-lab/lock", "")
	fs.IntVar(&f.clients, "clients", 3, "")
	fs.DurationVar(&f.duration, "duration", 20*time.Second, "")
	fs.Uint64Var(&f.seed, "seed", 1, "")
	fs.StringVar(&f.nemesis, "nemesis", "pause,kill", "")
	fs.DurationVar(&f.every, "every", 2*time.Second, "")
	fs.DurationVar(&f.session, "session", time.Second, "")
	fs.DurationVar(&f.pause, "pause", 0, "")
	fs.StringVar(&f.fencing, "fencing", "on", "")
	fs.BoolVar(&f.json, "json", false, "")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			fmt.Fprint(stdout, labUsage)
			return errHelp
		}
		return usagef("%v", err)
	}
	cfg, err := f.config()
	if err != nil {
		return err
	}
	servers := f.zk
	if servers == "" {
		fmt.Fprintln(stderr, "starting a throwaway ZooKeeper…")
		zks, err := zklocal.Start(ctx, zklocal.Options{})
		if err != nil {
			return fmt.Errorf("start ZooKeeper (apt-get install zookeeper, or give --zk): %w", err)
		}
		defer zks.Close()
		servers = zks.Addr()
	}
	if err := zklab.Reach(strings.Split(servers, ","), 5*time.Second); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cfg.Command = func(id, resource string) *exec.Cmd {
		cmd := exec.Command(self, "lab-client", "--zk", servers, "--path", f.path, "--id", id,
			"--resource", resource, "--session", f.session.String())
		cmd.Stderr = stderr
		return cmd
	}
	if !f.json {
		cfg.Observe = func(e lab.Event) { fmt.Fprintln(stderr, eventLine(e)) }
	}
	fmt.Fprintf(stderr, "lab: %d clients on ZooKeeper %s %s for %v, nemesis %s every %v (seed %d), fencing %s\n",
		f.clients, servers, f.path, f.duration, f.nemesis, f.every, f.seed, f.fencing)
	report, events, err := lab.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if f.json {
		return json.NewEncoder(stdout).Encode(struct {
			Report lab.Report  `json:"report"`
			Events []lab.Event `json:"events"`
		}{report, events})
	}
	fmt.Fprint(stdout, report)
	return nil
}

func (f labFlags) config() (lab.Config, error) {
	cfg := lab.Config{Clients: f.clients, Duration: f.duration, Seed: f.seed, Every: f.every,
		PauseFor: f.pause, Fencing: f.fencing == "on"}
	if f.fencing != "on" && f.fencing != "off" {
		return cfg, usagef("--fencing %q: want on or off", f.fencing)
	}
	if f.clients < 1 || f.clients > 50 {
		return cfg, usagef("--clients %d: want 1 to 50", f.clients)
	}
	for name, d := range map[string]time.Duration{"duration": f.duration, "every": f.every, "session": f.session} {
		if err := positive(name, d); err != nil {
			return cfg, usagef("%v", err)
		}
	}
	if cfg.PauseFor == 0 {
		cfg.PauseFor = f.session * 5 / 2
	}
	if f.nemesis != "none" {
		cfg.Nemesis = strings.Split(f.nemesis, ",")
	}
	for _, n := range cfg.Nemesis {
		if !slices.Contains(lab.Nemeses, n) {
			return cfg, usagef("--nemesis: unknown fault %q: want %s, or none", n, strings.Join(lab.Nemeses, ", "))
		}
	}
	if err := zkwatch.ValidatePath(f.path); err != nil {
		return cfg, usagef("--path: %v", err)
	}
	return cfg, nil
}

// eventLine is an event as the lab's progress shows it.
func eventLine(e lab.Event) string {
	s := e.At.Format("15:04:05.000") + " " + e.Client + " " + string(e.Kind)
	switch e.Kind {
	case lab.Acquired, lab.Released, lab.Lost:
		s += fmt.Sprintf(" (token %d)", e.Token)
	case lab.Wrote, lab.Refused:
		s += fmt.Sprintf(" %d → %d (token %d)", e.From, e.To, e.Token)
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// runLabClient is one lab client process (zklockviz lab-client, started by
// zklockviz lab): it prints its events on stdout until it is stopped.
func runLabClient(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("lab-client", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // the error says it once, through exitCode
	zkAddr := fs.String("zk", "", "")
	path := fs.String("path", "", "")
	id := fs.String("id", "", "")
	resource := fs.String("resource", "", "")
	session := fs.Duration("session", time.Second, "")
	hold := fs.Duration("hold", 20*time.Millisecond, "")
	if err := fs.Parse(args); err != nil {
		return usagef("%v", err)
	}
	if *zkAddr == "" || *path == "" || *id == "" || *resource == "" {
		return usagef("lab-client is started by zklockviz lab: it needs --zk, --path, --id and --resource")
	}
	l, err := zklab.Dial(strings.Split(*zkAddr, ","), *session, *path, *id)
	if err != nil {
		return err
	}
	defer l.Close()
	done := make(chan error, 1)
	go func() {
		done <- lab.RunClient(ctx, lab.ClientConfig{ID: *id, Resource: *resource, Hold: *hold, Out: stdout}, l)
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		// Stopped by the lab: a client blocked in the recipe's acquire
		// (it waits on a watch, not on ctx) exits now, not when killed.
		return nil
	}
}

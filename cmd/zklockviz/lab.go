package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zklockviz/zklockviz/etcd/etcdlab"
	"github.com/zklockviz/zklockviz/etcd/etcdlocal"
	"github.com/zklockviz/zklockviz/etcd/etcdlock"
	"github.com/zklockviz/zklockviz/lab"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/postgres/pglab"
	"github.com/zklockviz/zklockviz/postgres/pglocal"
	"github.com/zklockviz/zklockviz/postgres/pglock"
	"github.com/zklockviz/zklockviz/redis/redislab"
	"github.com/zklockviz/zklockviz/redis/redislocal"
	"github.com/zklockviz/zklockviz/redis/redislock"
	"github.com/zklockviz/zklockviz/web"
	"github.com/zklockviz/zklockviz/zkwatch"
	"github.com/zklockviz/zklockviz/zookeeper/zklab"
	"github.com/zklockviz/zklockviz/zookeeper/zklocal"
)

const labUsage = `Usage: zklockviz lab [flags]

The lock lab: real lock clients, each an OS process of its own, loop
acquire → read a shared counter → write it back one higher with their
fencing token → release, while a nemesis pauses them (SIGSTOP past their
session, lease or TTL, like a long GC pause) or kills them (kill -9), kills
the lock server or cuts a client off it (see Faults below), on a schedule a
seed fixes; a fault strikes a client that holds the lock when one does.
Every client says what it believes; the lab reports every moment two
clients believed they held the lock, the writes the counter took and lost,
and the writes the resource refused for a stale token (--fencing on).

Each service's clients use its real recipe:
  zookeeper  go-zookeeper's lock recipe; the token is the lock node's
             sequence number; a holder paused past its session loses it
  redis      SET NX PX and a token counter in one Lua script, a
             compare-and-delete release; the key is not renewed, so a
             holder paused past the TTL loses it
  etcd       client/v3's concurrency.Mutex; the token is the key's create
             revision; a holder paused past its lease loses it
  postgres   pg_advisory_lock on a session; the token is nextval of a
             sequence the lab creates; a pause does not end the lock (the
             others wait: never two believers), a kill -9 ends the
             client's session and its lock with it
Without the service's server flag, a throwaway server is started (Debian's
zookeeper, redis-server, etcd-server or postgresql package) and stopped at
the end. Point zklockviz serve at the same server and lock to watch the
run live.

Flags:
  --service NAME        zookeeper, redis, etcd or postgres (default zookeeper);
                        a comma-separated list, or all: the services side
                        by side, each with its own throwaway server, its
                        own clients and resource, on the same seed
  --zk HOST:PORT        a ZooKeeper to use     (--service zookeeper)
  --redis HOST:PORT     a Redis to use         (--service redis)
  --etcd URL            an etcd to use         (--service etcd)
  --postgres DSN        a PostgreSQL to use    (--service postgres)
  --path NAME           the lock: a ZooKeeper lock parent or etcd prefix
                        (default /zklockviz-lab/lock), a Redis key (default
                        zklockviz-lab:lock), a PostgreSQL advisory/KEY
                        (default advisory/4242)
  --clients N           client processes (default 3)
  --duration DURATION   how long the nemesis runs, from when a client first holds
                        (default 20s)
  --seed N              fixes the nemesis's schedule (default 1)
  --nemesis LIST        faults, comma-separated (see Faults below), all
                        (every fault the service has) or none
                        (default pause,kill)
  --every DURATION      time between faults (default 2s)
  --session DURATION    each client's ZooKeeper session timeout, etcd lease
                        TTL (whole seconds) or Redis key TTL (default 1s);
                        a PostgreSQL lock has none
  --pause DURATION      how long a pause, a cut or a server's outage lasts
                        (default 2.5 × --session)
  --hold DURATION       how long a client holds between reading the
                        counter and writing it back (default 20ms)
  --fencing on|off      the resource refuses stale tokens (default on)
  --word on|off         check zklockviz's own word: serve's reader, as serve
                        runs with its default flags, records the run's lock
                        and its history is checked against the clients'
                        log (docs/lab.md, "zklockviz's word"); a mismatch
                        fails the run, exit status 1 (default on)
  --word-data-dir DIR   keep that history in DIR (default: a temporary
                        directory, removed at the end)
  --json                print the report and every event as JSON
  --report FILE         write the report as one self-contained HTML file:
                        the schedule, the time–space diagram, the findings
                        and the command that replays the run (written
                        after Ctrl-C too, of what ran)
  --schedule FILE       run the faults of a schedule file (a JSON list of
                        {at, kind, pick, for}, as a report or --search
                        writes it) instead of the seed's; --seed, --every
                        and --nemesis are then unused
  --search INVARIANT    mutual-exclusion or no-lost-update: run seeds 1, 2, …
                        until one breaks it, then shrink its schedule (drop
                        faults, halve pauses down to --session) while it
                        still breaks on 2 runs of 2, and write the smallest
                        as a schedule file and a classroom scenario
                        (--duration defaults to 10s a run)
  --runs N              the seeds --search tries (default 20)
  --out DIR             where --search writes its files (default .)

Examples:
  zklockviz lab
  zklockviz lab --fencing off --seed 7 --duration 60s
  zklockviz lab --service redis --fencing off
  zklockviz lab --zk 127.0.0.1:2181 --path /locks/lab --nemesis pause
  zklockviz lab --service redis --fencing off --search mutual-exclusion
  zklockviz lab --service redis --schedule lab-redis-mutual-exclusion.schedule.json
`

type labFlags struct {
	service, server, path, nemesis, fencing string
	word, wordDir                           string
	servers                                 map[string]*string // each service's server flag
	clients                                 int
	seed                                    uint64
	duration, every, session                time.Duration
	pause, hold                             time.Duration
	json                                    bool
	// report is --report's file; services are --service's, one or more.
	report                string
	services              []string
	schedule, search, out string // replay and search (labsearch.go)
	runs                  int
}

// labServer is the server a run's clients use: addr as they are given
// it, shown as the progress line names it (never a DSN's password).
type labServer struct {
	addr, shown string
	close       func() error // a throwaway server's; nil for the user's
	// control is what the nemesis may do to a throwaway server; nil for
	// the user's.
	control *lab.ServerControl
}

// labService is one lock service as the lab runs it.
type labService struct {
	title       string
	flag        string // its server's flag, as serve names it
	defaultPath string
	checkPath   func(string) error
	// checkSession says whether the service takes --session as it is.
	checkSession func(time.Duration) error
	// given reads the flag's value; start starts a throwaway server.
	given func(string) (labServer, error)
	start func(context.Context) (labServer, error)
	// reach checks the server answers (and prepares it: PostgreSQL's
	// token sequence) before any client starts.
	reach func(addr string) error
	// dial is the client's Locker, in the lab-client process.
	dial func(addr, path, id string, session time.Duration) (lab.Locker, func(), error)
	// note is what a user should know before reading the run, if any.
	note string
}

// labHold is a client's hold between its read and its write, by default.
const labHold = 20 * time.Millisecond

// reachTimeout bounds the lab's first contact with the server.
const reachTimeout = 5 * time.Second

var labServices = map[string]labService{
	lockqueue.ZooKeeper: {
		title: "ZooKeeper", flag: "zk", defaultPath: "/zklockviz-lab/lock", checkPath: zkwatch.ValidatePath,
		checkSession: func(time.Duration) error { return nil },
		given:        func(v string) (labServer, error) { return labServer{addr: v, shown: v}, nil },
		start: throwaway("ZooKeeper (apt-get install zookeeper, or give --zk)", func(ctx context.Context) (*zklocal.Server, error) {
			return zklocal.Start(ctx, zklocal.Options{})
		}, (*zklocal.Server).Addr, (*zklocal.Server).Addr),
		reach: func(addr string) error { return zklab.Reach(strings.Split(addr, ","), reachTimeout) },
		dial: func(addr, path, id string, session time.Duration) (lab.Locker, func(), error) {
			l, err := zklab.Dial(strings.Split(addr, ","), session, path, id)
			if err != nil {
				return nil, nil, err
			}
			return l, l.Close, nil
		},
	},
	redislock.Name: {
		title: "Redis", flag: "redis", defaultPath: "zklockviz-lab:lock", checkPath: redislock.CheckName,
		checkSession: func(d time.Duration) error {
			if d < time.Millisecond {
				return fmt.Errorf("--session %v: a Redis key TTL (PX) wants 1ms or more", d)
			}
			return nil
		},
		given: func(v string) (labServer, error) {
			addrs, err := parseRedisAddrs([]string{v})
			if err == nil && len(addrs) != 1 {
				err = fmt.Errorf("--redis %s: the lab's clients lock on one Redis: name one HOST:PORT", v)
			}
			if err != nil {
				return labServer{}, err
			}
			return labServer{addr: addrs[0], shown: addrs[0]}, nil
		},
		start: throwaway("Redis (apt-get install redis-server, or give --redis)", func(ctx context.Context) (*redislocal.Server, error) {
			return redislocal.Start(ctx, redislocal.Options{})
		}, (*redislocal.Server).Addr, (*redislocal.Server).Addr),
		reach: func(addr string) error {
			quietRedis()
			return redislab.Reach(addr, reachTimeout)
		},
		dial: func(addr, path, id string, session time.Duration) (lab.Locker, func(), error) {
			quietRedis()
			l, err := redislab.Dial(addr, path, id, session)
			if err != nil {
				return nil, nil, err
			}
			return l, func() { l.Close() }, nil
		},
	},
	etcdlock.Name: {
		title: "etcd", flag: "etcd", defaultPath: "/zklockviz-lab/lock", checkPath: etcdlock.CheckName,
		checkSession: func(d time.Duration) error {
			_, err := etcdlab.TTLSeconds(d)
			if err != nil {
				return fmt.Errorf("--session %v: %w", d, err)
			}
			return nil
		},
		given: func(v string) (labServer, error) {
			eps, err := parseEtcdEndpoints(v, false)
			if err != nil {
				return labServer{}, err
			}
			return labServer{addr: strings.Join(eps, ","), shown: strings.Join(eps, ",")}, nil
		},
		start: throwaway("etcd (apt-get install etcd-server, or give --etcd)", func(ctx context.Context) (*etcdlocal.Server, error) {
			return etcdlocal.Start(ctx, etcdlocal.Options{})
		}, (*etcdlocal.Server).Endpoint, (*etcdlocal.Server).Endpoint),
		reach: func(addr string) error { return etcdlab.Reach(strings.Split(addr, ","), reachTimeout) },
		dial: func(addr, path, id string, session time.Duration) (lab.Locker, func(), error) {
			l, err := etcdlab.Dial(strings.Split(addr, ","), path, session)
			if err != nil {
				return nil, nil, err
			}
			return l, func() { l.Close() }, nil
		},
	},
	pglock.Name: {
		title: "PostgreSQL", flag: "postgres", defaultPath: "advisory/4242",
		note:         "an advisory lock lasts as long as its session: a paused holder keeps it (the others wait), a killed one's session ends and the lock with it",
		checkPath:    func(p string) error { _, err := pglab.Key(p); return err },
		checkSession: func(time.Duration) error { return nil },
		given: func(v string) (labServer, error) {
			cc, err := pglock.ConnConfig(v, "")
			if err != nil {
				return labServer{}, err
			}
			return labServer{addr: v, shown: net.JoinHostPort(cc.Host, strconv.Itoa(int(cc.Port)))}, nil
		},
		start: throwaway("PostgreSQL (apt-get install postgresql, or give --postgres)", func(ctx context.Context) (*pglocal.Server, error) {
			return pglocal.Start(ctx, pglocal.Options{})
		}, (*pglocal.Server).DSN, (*pglocal.Server).Addr),
		reach: func(addr string) error { return pglab.Prepare(addr, reachTimeout) },
		dial: func(addr, path, id string, _ time.Duration) (lab.Locker, func(), error) {
			l, err := pglab.Dial(addr, path, id)
			if err != nil {
				return nil, nil, err
			}
			return l, func() { l.Close() }, nil
		},
	},
}

// throwaway is a labService's start: start's server, addr as the clients
// take it, shown as the progress line names it; how names the server and
// how to get it, for when it cannot start.
func throwaway[S interface {
	Close() error
	labControllable
}](how string, start func(context.Context) (S, error), addr, shown func(S) string) func(context.Context) (labServer, error) {
	return func(ctx context.Context) (labServer, error) {
		s, err := start(ctx)
		if err != nil {
			return labServer{}, fmt.Errorf("start %s: %w", how, err)
		}
		return labServer{addr: addr(s), shown: shown(s), close: s.Close, control: labControl(s)}, nil
	}
}

// quietRedis drops go-redis's own log lines (its pool's dial failures,
// unstructured, on stderr): the lab says what failed in its events and
// errors.
func quietRedis() { redis.SetLogger(redisDebugLog{slog.New(slog.DiscardHandler)}) }

// labServerEnv carries the server to each lab-client: in its environment,
// not its command line, where ps would show a DSN's password.
const labServerEnv = "ZKLOCKVIZ_LAB_SERVER"

func runLab(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseLabFlags(args, stdout)
	if err != nil {
		return err
	}
	return runLabs(ctx, f, stdout, stderr)
}

// labReady is one service's run made ready: its server up and reached,
// its clients' command set.
type labReady struct {
	svc labService
	cfg lab.Config
	srv labServer
	out lab.Outcome
}

// readyLab starts (or reaches) the server of f's one service and readies
// the run; close the server (srv.close, when not nil) after it.
func readyLab(ctx context.Context, f labFlags, stderr io.Writer) (labReady, error) {
	r := labReady{svc: labServices[f.service]}
	var err error
	if r.cfg, err = f.config(r.svc); err != nil {
		return r, err
	}
	r.out = f.outcome(r.svc, r.cfg)
	if r.srv, err = labServerOf(ctx, r.svc, f.server, stderr); err != nil {
		return r, err
	}
	r.out.Server = r.srv.shown
	if err := r.svc.reach(r.srv.addr); err != nil {
		return r, err
	}
	if err := labFaultHooks(&r.cfg, f.service, f.path, r.srv); err != nil {
		return r, err
	}
	self, err := os.Executable()
	if err != nil {
		return r, err
	}
	r.cfg.Command = func(id, resource string) *exec.Cmd {
		cmd := exec.Command(self, "lab-client", "--service", f.service, "--path", f.path, "--id", id,
			"--resource", resource, "--session", f.session.String(), "--hold", f.hold.String())
		cmd.Env = append(os.Environ(), labServerEnv+"="+r.srv.addr)
		cmd.Stderr = stderr
		return cmd
	}
	return r, nil
}

// runLabOne runs f's one service, telling its progress on stderr, and its
// start and each event to hooks (each when set). The outcome says what ran
// even when the run ended early or failed to start.
func runLabOne(ctx context.Context, f labFlags, stderr io.Writer, hooks web.LabHooks) (lab.Outcome, error) {
	r, err := readyLab(ctx, f, stderr)
	if r.srv.close != nil {
		defer r.srv.close()
	}
	svc, cfg, srv, out := r.svc, r.cfg, r.srv, r.out
	if err != nil {
		return out, err
	}
	if hooks.Event != nil {
		cfg.Observe = func(e lab.Event) { hooks.Event(f.service, e) }
	}
	if hooks.Started != nil {
		// A throwaway server's address is whole (its DSN has no
		// password); the user's is as the progress line names it.
		where := srv.shown
		if srv.close != nil {
			where = srv.addr
		}
		hooks.Started(out, fmt.Sprintf("zklockviz serve --%s %s, lock %s (while the run lasts)", svc.flag, where, f.path))
	}
	faults := fmt.Sprintf("nemesis %s every %v (seed %d)", f.nemesis, f.every, f.seed)
	if f.schedule != "" {
		faults = fmt.Sprintf("the %d faults of %s", len(cfg.Schedule), f.schedule)
	}
	fmt.Fprintf(stderr, "lab: %d clients on %s %s %s for %v, %s, fencing %s\n",
		f.clients, svc.title, srv.shown, f.path, f.duration, faults, f.fencing)
	if svc.note != "" {
		fmt.Fprintf(stderr, "lab: on %s %s\n", svc.title, svc.note)
	}
	for _, n := range labFaultNotes(f.service, cfg.Nemesis) {
		fmt.Fprintf(stderr, "lab: %s\n", n)
	}
	recording, err := startLabWord(ctx, f, srv, stderr)
	if err != nil {
		return out, err
	}
	stopLive := recording.live(ctx, &cfg, f.service, stderr, hooks)
	out.Report, out.Events, err = lab.Run(ctx, cfg)
	stopLive()
	out.Stopped = ctx.Err() != nil
	if out.Stopped {
		fmt.Fprintln(stderr, "lab: interrupted: every client, proxy and throwaway server it started is stopped; the report is of what ran")
	}
	if err != nil {
		if recording != nil {
			recording.stop()
		}
		return out, err
	}
	out.Word, err = recording.check(out.Events)
	return out, err
}

// labServerOf is the server the flag names, or a throwaway one.
func labServerOf(ctx context.Context, svc labService, given string, stderr io.Writer) (labServer, error) {
	if given != "" {
		return svc.given(given)
	}
	fmt.Fprintf(stderr, "starting a throwaway %s…\n", svc.title)
	return svc.start(ctx)
}

// parseLabFlags reads the lab's flags: the service, its server (only its
// own service's flag), and the lock's name checked as the service names
// its locks.
func parseLabFlags(args []string, stdout io.Writer) (labFlags, error) {
	f := labFlags{servers: map[string]*string{}}
	// Not parseFlags: its ZKLOCKVIZ_* defaults would point a lab run,
	// which takes locks, at the servers serve reads (production); the lab
	// locks only where a flag names, or on its own throwaway server.
	fs := flag.NewFlagSet("lab", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&f.service, "service", lockqueue.ZooKeeper, "")
	for name, svc := range labServices {
		f.servers[name] = fs.String(svc.flag, "", "")
	}
	fs.StringVar(&f.path, "path", "", "")
	fs.IntVar(&f.clients, "clients", 3, "")
	fs.DurationVar(&f.duration, "duration", 20*time.Second, "")
	fs.Uint64Var(&f.seed, "seed", 1, "")
	fs.StringVar(&f.nemesis, "nemesis", "pause,kill", "")
	fs.DurationVar(&f.every, "every", 2*time.Second, "")
	fs.DurationVar(&f.session, "session", time.Second, "")
	fs.DurationVar(&f.pause, "pause", 0, "")
	fs.DurationVar(&f.hold, "hold", labHold, "")
	fs.StringVar(&f.fencing, "fencing", "on", "")
	fs.StringVar(&f.word, "word", "on", "")
	fs.StringVar(&f.wordDir, "word-data-dir", "", "")
	fs.BoolVar(&f.json, "json", false, "")
	fs.StringVar(&f.report, "report", "", "")
	fs.StringVar(&f.schedule, "schedule", "", "")
	fs.StringVar(&f.search, "search", "", "")
	fs.IntVar(&f.runs, "runs", 20, "")
	fs.StringVar(&f.out, "out", ".", "")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			fmt.Fprint(stdout, labUsage+labFaultsHelp())
			return f, errHelp
		}
		return f, usagef("%v", err)
	}
	if fs.NArg() > 0 {
		return f, usagef("unexpected argument %q (flags start with --)", fs.Arg(0))
	}
	if err := f.checkSearch(fs); err != nil {
		return f, err
	}
	var err error
	if f.services, err = labServiceNames(f.service); err != nil {
		return f, err
	}
	if len(f.services) > 1 {
		return f, f.checkSeveral()
	}
	f.service = f.services[0]
	svc := labServices[f.service]
	for _, name := range slices.Sorted(maps.Keys(labServices)) {
		if v := *f.servers[name]; v != "" && name != f.service {
			return f, usagef("--%s is %s's server: give --service %s, or --%s for %s", labServices[name].flag, labServices[name].title, name, svc.flag, svc.title)
		}
	}
	f.server = *f.servers[f.service]
	f.path = cmp.Or(f.path, svc.defaultPath)
	if err := svc.checkPath(f.path); err != nil {
		return f, usagef("--path: %v", err)
	}
	return f, nil
}

func (f labFlags) config(svc labService) (lab.Config, error) {
	cfg := lab.Config{Clients: f.clients, Duration: f.duration, Seed: f.seed, Every: f.every,
		PauseFor: f.pause, Fencing: f.fencing == "on"}
	if f.fencing != "on" && f.fencing != "off" {
		return cfg, usagef("--fencing %q: want on or off", f.fencing)
	}
	if f.word != "on" && f.word != "off" {
		return cfg, usagef("--word %q: want on or off", f.word)
	}
	if f.clients < 1 || f.clients > 50 {
		return cfg, usagef("--clients %d: want 1 to 50", f.clients)
	}
	for name, d := range map[string]time.Duration{"duration": f.duration, "every": f.every, "session": f.session} {
		if err := positive(name, d); err != nil {
			return cfg, usagef("%v", err)
		}
	}
	if f.hold < 0 {
		return cfg, usagef("--hold %v: want a duration, 0 or more", f.hold)
	}
	if err := svc.checkSession(f.session); err != nil {
		return cfg, usagef("%v", err)
	}
	if cfg.PauseFor == 0 {
		cfg.PauseFor = f.session * 5 / 2
	}
	if f.schedule != "" {
		s, err := readLabSchedule(f.schedule)
		if err != nil {
			return cfg, err
		}
		cfg.Schedule = s
	}
	nemesis, err := labNemesis(f.nemesis, f.service, f.server != "")
	cfg.Nemesis = nemesis
	return cfg, err
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
// zklockviz lab): it prints its events on stdout until it is stopped. Its
// server comes in $ZKLOCKVIZ_LAB_SERVER (labServerEnv).
func runLabClient(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("lab-client", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // the error says it once, through exitCode
	service := fs.String("service", lockqueue.ZooKeeper, "")
	path := fs.String("path", "", "")
	id := fs.String("id", "", "")
	resource := fs.String("resource", "", "")
	session := fs.Duration("session", time.Second, "")
	hold := fs.Duration("hold", labHold, "")
	if err := fs.Parse(args); err != nil {
		return usagef("%v", err)
	}
	addr := os.Getenv(labServerEnv)
	svc, ok := labServices[*service]
	if !ok || addr == "" || *path == "" || *id == "" || *resource == "" {
		return usagef("lab-client is started by zklockviz lab: it needs --service, --path, --id, --resource and $%s", labServerEnv)
	}
	l, closeLocker, err := svc.dial(addr, *path, *id, *session)
	if err != nil {
		return err
	}
	defer closeLocker()
	// Stopped by the lab, RunClient returns at once from an acquire, and
	// after telling the answer to a write it sent.
	return lab.RunClient(ctx, lab.ClientConfig{ID: *id, Resource: *resource, Hold: *hold, Out: stdout}, l)
}

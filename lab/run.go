package lab

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"os/exec"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/zklockviz/zklockviz/proxy"
)

// Nemesis faults.
const (
	Pause = "pause" // SIGSTOP a client past its session or lease, then SIGCONT
	Kill  = "kill"  // kill -9 a client, then start it again
)

// Nemeses are the faults Run knows (see nemesis.go for the last four).
var Nemeses = []string{Pause, Kill, ServerCrash, CutOff, Restart, Clock}

// Config is one run.
type Config struct {
	Clients  int
	Duration time.Duration
	// Seed fixes the nemesis's schedule: which fault when, and on whom:
	// on one of the clients that believe they hold at that moment, or of
	// all when none does.
	Seed    uint64
	Nemesis []string
	// Every is the time between faults; PauseFor how long a pause lasts
	// (past the service's session or lease, to matter).
	Every, PauseFor time.Duration
	Fencing         bool
	// Schedule is the faults to do; nil is Plan(cfg), the seed's.
	Schedule []Fault
	// Command is the command line of client id against the resource's
	// URL: a service's lab client (zklockviz lab-client ...).
	Command func(id, resource string) *exec.Cmd
	// Observe, when set, sees every event as it comes.
	Observe func(Event)
	// Server lets the nemesis strike the lock server (server, restart,
	// clock); Network puts the clients behind proxies it can cut (cut).
	// Nil: the run cannot do those faults.
	Server  *ServerControl
	Network *Network
}

// Run starts the resource and the clients, lets the nemesis loose for the
// run's duration, stops everything and checks what happened.
func Run(ctx context.Context, cfg Config) (Report, []Event, error) {
	for _, n := range cfg.Nemesis {
		if !slices.Contains(Nemeses, n) {
			return Report{}, nil, fmt.Errorf("unknown nemesis %q: want one of %v", n, Nemeses)
		}
	}
	for _, f := range cfg.Schedule {
		if !slices.Contains(Nemeses, f.Kind) {
			return Report{}, nil, fmt.Errorf("schedule: unknown fault %q at %v: want one of %v", f.Kind, f.At, Nemeses)
		}
	}
	if err := checkFaults(cfg); err != nil {
		return Report{}, nil, err
	}
	res := NewResource(cfg.Fencing)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return Report{}, nil, fmt.Errorf("lab resource: %w", err)
	}
	srv := &http.Server{Handler: res, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()

	r := &runner{cfg: cfg, url: "http://" + ln.Addr().String() + "/", held: make(chan struct{})}
	defer r.closeProxies()
	for i := range cfg.Clients {
		if err := r.start(fmt.Sprintf("c%d", i+1)); err != nil {
			r.stopAll()
			return Report{}, nil, err
		}
	}
	if cfg.Schedule == nil {
		cfg.Schedule = Plan(cfg)
	}
	// The run starts once a client holds the lock: a fault struck while the
	// clients still start and connect tests nothing, and on a busy machine
	// a server outage at 1 s left a whole run without one acquisition.
	select {
	case <-r.held:
	case <-time.After(firstHoldWait):
	case <-ctx.Done():
	}
	runCtx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	r.nemesis(runCtx, time.Now(), cfg.Schedule)
	end := time.Now()
	r.stopAll()
	events := r.all()
	return Check(events, res.Value(), end), events, nil
}

// firstHoldWait bounds the wait for the first holder before the run
// starts anyway (its report then says no client took the lock).
const firstHoldWait = 30 * time.Second

type runner struct {
	cfg Config
	url string
	// held is closed when a client first holds: the run starts then.
	held     chan struct{}
	heldOnce sync.Once

	mu      sync.Mutex
	procs   map[string]*exec.Cmd
	events  []Event
	holders map[string]bool // the clients that believe they hold, as their events tell
	// killed is when kill -9 was sent to each killed client process.
	killed  map[*exec.Cmd]time.Time
	readers sync.WaitGroup
	proxies map[string]*proxy.Proxy // each client's, with Config.Network
	// starting is when the server's start after a fault began, while it
	// runs; answered the first grant a client told since (sawAnswer).
	starting, answered time.Time
}

// afterKill says e, from the process cmd, was told after kill -9 was sent
// to it. A SIGKILL lands at some moment after it is sent, and the lab
// cannot know how far the dying client got: its belief ends when the kill
// is sent (a PostgreSQL waiter may hold before the lab sees the killed
// client gone), and what it tells afterwards is not counted.
func (r *runner) afterKill(cmd *exec.Cmd, e Event) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	at, ok := r.killed[cmd]
	return ok && !e.At.Before(at)
}

func (r *runner) record(e Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.sawAnswer(e)
	switch e.Kind {
	case Acquired:
		if r.holders == nil {
			r.holders = map[string]bool{}
		}
		r.holders[e.Client] = true
		if r.held != nil {
			r.heldOnce.Do(func() { close(r.held) })
		}
	case Released, Lost, Killed:
		delete(r.holders, e.Client)
	}
	r.mu.Unlock()
	if r.cfg.Observe != nil {
		r.cfg.Observe(e)
	}
}

func (r *runner) all() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// start starts client id and reads its events until it exits.
func (r *runner) start(id string) error {
	cmd := r.cfg.Command(id, r.url)
	if err := r.route(id, cmd); err != nil {
		return err
	}
	cmd.SysProcAttr = clientAttr()
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	started := make(chan error, 1)
	r.readers.Go(func() {
		// Pdeathsig fires when the *thread* that forked the child exits,
		// not the process (golang/go#27505): a thread a throwaway server's
		// goroutine locked and left (localproc) took every client forked
		// on it. Pin this goroutine to its thread for the client's whole
		// life, never unlocked, as localproc does.
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- fmt.Errorf("start client %s: %w", id, err)
			return
		}
		started <- nil
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if e, err := ParseEvent(sc.Bytes()); err == nil {
				if !r.afterKill(cmd, e) {
					r.record(e)
				}
			} else {
				r.record(Event{At: time.Now(), Client: id, Kind: Failed, Message: "unreadable line: " + sc.Text()})
			}
		}
		cmd.Wait()
	})
	if err := <-started; err != nil {
		return err
	}
	r.mu.Lock()
	if r.procs == nil {
		r.procs = map[string]*exec.Cmd{}
	}
	r.procs[id] = cmd
	r.mu.Unlock()
	r.record(Event{At: time.Now(), Client: id, Kind: Started})
	return nil
}

// Fault is one fault of a run's schedule. A schedule is data, so that a
// run can be replayed, and a failing one shrunk, fault by fault.
type Fault struct {
	// At is when it strikes, from the start of the run. A fault still
	// going at the next one's At delays it: one fault at a time.
	At   time.Duration `json:"at"`
	Kind string        `json:"kind"`
	// Pick chooses whom among those it may strike at that moment (see
	// targets): the Pick-th, modulo their number.
	Pick int `json:"pick"`
	// For is how long a pause, a cut or a server's outage lasts.
	For time.Duration `json:"for,omitempty"`
}

// Plan is the schedule cfg.Seed makes: a fault every cfg.Every until
// cfg.Duration, each of a kind drawn from cfg.Nemesis.
func Plan(cfg Config) []Fault {
	if len(cfg.Nemesis) == 0 || cfg.Every <= 0 {
		return nil
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))
	var out []Fault
	for at := cfg.Every; at < cfg.Duration; at += cfg.Every {
		out = append(out, Fault{At: at, Kind: cfg.Nemesis[rng.IntN(len(cfg.Nemesis))], Pick: rng.IntN(1 << 16), For: cfg.PauseFor})
	}
	return out
}

// nemesis does the schedule's faults, each at its time, until ctx ends.
func (r *runner) nemesis(ctx context.Context, start time.Time, schedule []Fault) {
	var last string // the client the last fault struck
	for _, f := range schedule {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(start.Add(f.At))):
		}
		// A fault due as the run ended (both ready) is no fault.
		if ctx.Err() != nil {
			return
		}
		targets := r.targets(last)
		id := targets[f.Pick%len(targets)]
		if onServer(f.Kind) {
			id = Server
		}
		last = id
		if err := r.fault(ctx, f, id); err != nil {
			r.record(Event{At: time.Now(), Client: id, Kind: Failed, Message: f.Kind + ": " + err.Error()})
		}
	}
	<-ctx.Done()
}

// targets are the clients a fault may strike: those that believe they
// hold, when any does, for a pause or a crash of a waiter shows little (a
// Redis waiter only polls, a PostgreSQL one waits in the server); every
// client otherwise. The one the last fault struck is left out while
// another believes: a pause longer than --every is followed at once by
// the next fault, and a client resumed a moment ago has not yet had the
// time to learn it lost the lock. Sorted, so the seed picks the same one
// from the same set.
func (r *runner) targets(last string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	holders := slices.Sorted(maps.Keys(r.holders))
	if i := slices.Index(holders, last); i >= 0 && len(holders) > 1 {
		holders = slices.Delete(holders, i, i+1)
	}
	if len(holders) > 0 {
		return holders
	}
	ids := make([]string, r.cfg.Clients)
	for i := range ids {
		ids[i] = fmt.Sprintf("c%d", i+1)
	}
	return ids
}

func (r *runner) fault(ctx context.Context, f Fault, id string) error {
	r.mu.Lock()
	cmd := r.procs[id]
	r.mu.Unlock()
	switch f.Kind {
	case Pause:
		if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			return err
		}
		settled(cmd.Process.Pid, "Tt", time.Second)
		r.record(Event{At: time.Now(), Client: id, Kind: Paused})
		select {
		case <-ctx.Done():
		case <-time.After(f.For):
		}
		// Stamped before the signal: the client may run before Signal
		// returns, and its first event must not come before its resume.
		resumed := time.Now()
		if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
			return err
		}
		r.record(Event{At: resumed, Client: id, Kind: Resumed})
	case Kill:
		// Stamped under the lock that afterKill reads it with: an event
		// read before this was told before it, so its belief ends with
		// the kill. Stamped before, then set, a grant told in between
		// (a busy CI machine's milliseconds) was counted, and its belief
		// outlived the process (TestLabPostgres: two believers).
		r.mu.Lock()
		sent := time.Now()
		if r.killed == nil {
			r.killed = map[*exec.Cmd]time.Time{}
		}
		r.killed[cmd] = sent
		r.mu.Unlock()
		if err := cmd.Process.Kill(); err != nil {
			return err
		}
		// Restarted once dead: the new process's events come after.
		settled(cmd.Process.Pid, "ZX", time.Second)
		r.record(Event{At: sent, Client: id, Kind: Killed})
		return r.start(id)
	case CutOff:
		return r.cut(ctx, f, id)
	case ServerCrash, Restart, Clock:
		return r.serverFault(ctx, f)
	}
	return nil
}

// stopAll ends every client (SIGCONT first: a stopped process cannot
// take SIGTERM) and waits for their last lines.
func (r *runner) stopAll() {
	r.mu.Lock()
	procs := slices.Collect(maps.Values(r.procs))
	r.mu.Unlock()
	for _, c := range procs {
		c.Process.Signal(syscall.SIGCONT)
		if err := c.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
			c.Process.Kill()
		}
	}
	done := make(chan struct{})
	go func() { r.readers.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		for _, c := range procs {
			c.Process.Kill()
		}
		<-done
	}
}

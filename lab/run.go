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
)

// Nemesis faults.
const (
	Pause = "pause" // SIGSTOP a client past its session or lease, then SIGCONT
	Kill  = "kill"  // kill -9 a client, then start it again
)

// Nemeses are the faults Run knows.
var Nemeses = []string{Pause, Kill}

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
	// Command is the command line of client id against the resource's
	// URL: a service's lab client (zklockviz lab-client ...).
	Command func(id, resource string) *exec.Cmd
	// Observe, when set, sees every event as it comes.
	Observe func(Event)
}

// Run starts the resource and the clients, lets the nemesis loose for the
// run's duration, stops everything and checks what happened.
func Run(ctx context.Context, cfg Config) (Report, []Event, error) {
	for _, n := range cfg.Nemesis {
		if !slices.Contains(Nemeses, n) {
			return Report{}, nil, fmt.Errorf("unknown nemesis %q: want one of %v", n, Nemeses)
		}
	}
	res := NewResource(cfg.Fencing)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return Report{}, nil, fmt.Errorf("lab resource: %w", err)
	}
	srv := &http.Server{Handler: res, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()

	r := &runner{cfg: cfg, url: "http://" + ln.Addr().String() + "/"}
	for i := range cfg.Clients {
		if err := r.start(fmt.Sprintf("c%d", i+1)); err != nil {
			r.stopAll()
			return Report{}, nil, err
		}
	}
	runCtx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	r.nemesis(runCtx)
	end := time.Now()
	r.stopAll()
	events := r.all()
	return Check(events, res.Value(), end), events, nil
}

type runner struct {
	cfg Config
	url string

	mu      sync.Mutex
	procs   map[string]*exec.Cmd
	events  []Event
	holders map[string]bool // the clients that believe they hold, as their events tell
	// killed is when kill -9 was sent to each killed client process.
	killed  map[*exec.Cmd]time.Time
	readers sync.WaitGroup
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
	switch e.Kind {
	case Acquired:
		if r.holders == nil {
			r.holders = map[string]bool{}
		}
		r.holders[e.Client] = true
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

// nemesis does a fault every cfg.Every until ctx ends, as the seed says.
func (r *runner) nemesis(ctx context.Context) {
	rng := rand.New(rand.NewPCG(r.cfg.Seed, r.cfg.Seed^0x9e3779b97f4a7c15))
	t := time.NewTicker(r.cfg.Every)
	defer t.Stop()
	var last string // the client the last fault struck
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		// A tick that came as the run ended (both ready) is no fault.
		if ctx.Err() != nil || len(r.cfg.Nemesis) == 0 {
			continue
		}
		fault := r.cfg.Nemesis[rng.IntN(len(r.cfg.Nemesis))]
		targets := r.targets(last)
		id := targets[rng.IntN(len(targets))]
		last = id
		if err := r.fault(ctx, fault, id); err != nil {
			r.record(Event{At: time.Now(), Client: id, Kind: Failed, Message: fault + ": " + err.Error()})
		}
	}
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

func (r *runner) fault(ctx context.Context, fault, id string) error {
	r.mu.Lock()
	cmd := r.procs[id]
	r.mu.Unlock()
	switch fault {
	case Pause:
		if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			return err
		}
		settled(cmd.Process.Pid, "Tt", time.Second)
		r.record(Event{At: time.Now(), Client: id, Kind: Paused})
		select {
		case <-ctx.Done():
		case <-time.After(r.cfg.PauseFor):
		}
		// Stamped before the signal: the client may run before Signal
		// returns, and its first event must not come before its resume.
		resumed := time.Now()
		if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
			return err
		}
		r.record(Event{At: resumed, Client: id, Kind: Resumed})
	case Kill:
		sent := time.Now()
		r.mu.Lock()
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

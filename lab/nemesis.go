package lab

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"time"

	"github.com/zklockviz/zklockviz/proxy"
)

// The nemesis's faults beyond a client's pause and kill: on the lock
// server, and on one client's connection to it.
const (
	// ServerCrash kills the lock server with kill -9, keeps it down for
	// the fault's For and starts it again on the same port with its data.
	ServerCrash = "server"
	// CutOff cuts one client's connection to the server (its proxy drops
	// it and refuses new ones) for the fault's For, then heals it.
	CutOff = "cut"
	// Restart stops the server (SIGTERM) and starts it again at once
	// (Redis: without persistence, so every key is lost, the token
	// counter too).
	Restart = "restart"
	// Clock jumps the server's clock past the lock's TTL (Redis; how is
	// the service's: see ServerControl.Jump).
	Clock = "clock"
)

// ClockJumped is the runner's event for a clock fault (Client Server):
// Message says how it was done.
const ClockJumped Kind = "clock-jumped"

// ServerControl is what the nemesis may do to the lock server: a
// throwaway one the lab started, never a user's (Kill, Stop and Start
// nil). A nil func is a fault the run cannot do.
type ServerControl struct {
	// Kill kills the server at once (kill -9), Stop stops it (SIGTERM);
	// Start starts it again on the same port with what it keeps and
	// returns once it answers.
	Kill, Stop func() error
	Start      func(context.Context) error
	// Jump makes the server's clock jump past the lock's TTL; its text is
	// how (the ClockJumped event's Message).
	Jump func(context.Context) (string, error)
	// Note is told in the ServerDown event of a kill or a restart: what
	// the server loses (Redis without persistence: every key).
	Note string
}

// Network puts each client behind a proxy.Proxy of its own to the
// server, for the cut fault.
type Network struct {
	// Target is the server's host:port the proxies forward to.
	Target string
	// Through points client cmd at its proxy's address instead of the
	// server.
	Through func(cmd *exec.Cmd, proxy string)
}

// restartTimeout bounds a server's start after a fault: a server that
// does not answer in it fails the fault, told as a Failed event.
const restartTimeout = time.Minute

// onServer reports whether fault kind strikes the server, not a client.
func onServer(kind string) bool {
	return kind == ServerCrash || kind == Restart || kind == Clock
}

// isFault reports whether an event of kind is one the nemesis did, as the
// report counts them.
func isFault(kind Kind) bool {
	switch kind {
	case Paused, Killed, Cut, ServerDown, ClockJumped:
		return true
	}
	return false
}

// Possible says whether cfg lets the nemesis do fault kind, and if not
// why: the server faults need the server's controls, a cut the network.
func Possible(cfg Config, kind string) error {
	s := cfg.Server
	var missing bool
	switch kind {
	case Pause, Kill:
	case ServerCrash:
		missing = s == nil || s.Kill == nil || s.Start == nil
	case Restart:
		missing = s == nil || s.Stop == nil || s.Start == nil
	case Clock:
		missing = s == nil || s.Jump == nil
	case CutOff:
		missing = cfg.Network == nil
	default:
		return fmt.Errorf("unknown fault %q: want one of %v", kind, Nemeses)
	}
	if missing {
		return fmt.Errorf("fault %q: this run cannot do it (no control of the server or of the clients' network)", kind)
	}
	return nil
}

func checkFaults(cfg Config) error {
	for _, n := range cfg.Nemesis {
		if err := Possible(cfg, n); err != nil {
			return err
		}
	}
	for _, f := range cfg.Schedule {
		if err := Possible(cfg, f.Kind); err != nil {
			return fmt.Errorf("schedule: at %v: %w", f.At, err)
		}
	}
	return nil
}

// route puts client id's command behind its proxy, started on the
// client's first start and kept across its restarts.
func (r *runner) route(id string, cmd *exec.Cmd) error {
	if r.cfg.Network == nil {
		return nil
	}
	r.mu.Lock()
	p := r.proxies[id]
	r.mu.Unlock()
	if p == nil {
		var err error
		if p, err = proxy.New(r.cfg.Network.Target); err != nil {
			return fmt.Errorf("client %s's proxy: %w", id, err)
		}
		r.mu.Lock()
		if r.proxies == nil {
			r.proxies = map[string]*proxy.Proxy{}
		}
		r.proxies[id] = p
		r.mu.Unlock()
	}
	r.cfg.Network.Through(cmd, p.Addr())
	return nil
}

// closeProxies closes every client's proxy, once the clients are gone.
func (r *runner) closeProxies() {
	r.mu.Lock()
	ps := slices.Collect(maps.Values(r.proxies))
	r.proxies = nil
	r.mu.Unlock()
	for _, p := range ps {
		p.Close()
	}
}

// cut cuts client id off the server for f.For: its proxy drops its
// connections and refuses new ones, then lets it back. The client itself
// runs on, and learns what its service tells a client cut off.
func (r *runner) cut(ctx context.Context, f Fault, id string) error {
	r.mu.Lock()
	p := r.proxies[id]
	r.mu.Unlock()
	if p == nil {
		return errors.New("the client has no proxy")
	}
	r.record(Event{At: time.Now(), Client: id, Kind: Cut})
	p.Cut()
	wait(ctx, f.For)
	p.Restore()
	r.record(Event{At: time.Now(), Client: id, Kind: Healed})
	return nil
}

// serverFault does a fault on the lock server. A server killed or
// restarted is down from when the signal is sent until it answers again.
// When the run ends during an outage the server stays down (no
// ServerUp): the lab closes it anyway.
func (r *runner) serverFault(ctx context.Context, f Fault) error {
	s := r.cfg.Server
	switch f.Kind {
	case Clock:
		how, err := s.Jump(ctx)
		if err != nil {
			return err
		}
		r.record(Event{At: time.Now(), Client: Server, Kind: ClockJumped, Message: how})
		return nil
	case Restart:
		down := time.Now()
		if err := s.Stop(); err != nil {
			return fmt.Errorf("stop the server: %w", err)
		}
		r.record(Event{At: down, Client: Server, Kind: ServerDown, Message: join("restarted", s.Note)})
		return r.up(ctx)
	}
	down := time.Now()
	if err := s.Kill(); err != nil {
		return fmt.Errorf("kill the server: %w", err)
	}
	r.record(Event{At: down, Client: Server, Kind: ServerDown, Message: join("kill -9", s.Note)})
	wait(ctx, f.For)
	if ctx.Err() != nil {
		return nil
	}
	return r.up(ctx)
}

// up starts the server and tells ServerUp once it answers: when Start
// returns (its readiness check passed) or, if sooner, when a client got
// the lock from it, for a client can be served before the check passes
// (a loaded JVM answers ZooKeeper's four-letter words late). A grant
// stamped before the check passed but told after it is not seen here, so
// At can follow a grant by a few milliseconds: the server first answered
// between Since and At, and only Since bounds the outage. A run that
// ends meanwhile (its time is up, or Ctrl-C) gives up the start: the lab
// closes the server anyway, and a JVM's start is seconds.
func (r *runner) up(ctx context.Context) error {
	sctx, cancel := context.WithTimeout(ctx, restartTimeout)
	defer cancel()
	r.mu.Lock()
	r.starting, r.answered = time.Now(), time.Time{}
	r.mu.Unlock()
	err := r.cfg.Server.Start(sctx)
	at := time.Now()
	r.mu.Lock()
	if !r.answered.IsZero() {
		at = r.answered
	}
	since := r.starting
	r.starting = time.Time{}
	r.mu.Unlock()
	if err != nil && ctx.Err() != nil {
		return nil
	}
	if err != nil {
		return fmt.Errorf("start the server again: %w", err)
	}
	r.record(Event{At: at, Client: Server, Kind: ServerUp, Since: since})
	return nil
}

// sawAnswer notes, while the server is starting, the first grant a
// client told since: the server answered by then. r.mu is held.
func (r *runner) sawAnswer(e Event) {
	if e.Kind == Acquired && !r.starting.IsZero() && r.answered.IsZero() && e.At.After(r.starting) {
		r.answered = e.At
	}
}

func join(a, b string) string {
	if b == "" {
		return a
	}
	return a + ": " + b
}

// wait waits d, or until ctx ends.
func wait(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// faultWords is a report's faults in words: the pauses and kills always,
// as the report always said them, then each other fault that happened.
func faultWords(faults map[string]int) string {
	s := fmt.Sprintf("%d paused, %d killed", faults[string(Paused)], faults[string(Killed)])
	for _, f := range []struct {
		kind  Kind
		words string
	}{{Cut, "cut off"}, {ServerDown, "server down"}, {ClockJumped, "server clock jumped"}} {
		if n := faults[string(f.kind)]; n > 0 {
			s += fmt.Sprintf(", %d %s", n, f.words)
		}
	}
	return s
}

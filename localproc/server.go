package localproc

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"
)

const (
	// StopGrace is how long Stop waits after the stop signal before SIGKILL.
	StopGrace = 5 * time.Second
	// startAttempts bounds retries when a port we picked was taken by
	// someone else between picking it and the child binding it.
	startAttempts = 3
	pollInterval  = 20 * time.Millisecond
	probeTimeout  = time.Second
)

// ErrPortInUse marks a start that failed because a port was taken; Launch
// retries such failures with fresh ports.
var ErrPortInUse = errors.New("port already in use")

// ErrClosed is returned when starting a closed server.
var ErrClosed = errors.New("server is closed")

// Spec describes one server.
type Spec struct {
	// Name names the server in errors, e.g. "redis 127.0.0.1:6379".
	Name string
	// Dir is the server's own directory, removed on Close.
	Dir *Dir
	// Output captures the child's output.
	Output *Output
	// Command launches the child; it is called for every (re)start.
	Command func() Command
	// Ready reports nil once the server serves requests. It is called
	// repeatedly until then, each time with a short deadline.
	Ready func(ctx context.Context) error
	// StopGrace is how long Stop waits after the stop signal before
	// SIGKILL; default StopGrace.
	StopGrace time.Duration
}

// Server is a child server process with its own directory. Its command (and
// so its ports) stay the same across Stop and Start.
type Server struct {
	spec Spec

	mu     sync.Mutex
	proc   *Process
	closed bool
}

// NewServer returns a server that is not running yet.
func NewServer(spec Spec) *Server { return &Server{spec: spec} }

// Name is the server's name as given in its Spec.
func (s *Server) Name() string { return s.spec.Name }

// Dir is the server's own temporary directory.
func (s *Server) Dir() string { return s.spec.Dir.Path() }

// Output returns the last lines the child printed during its current or most
// recent run.
func (s *Server) Output() string { return s.spec.Output.String() }

// Pid is the running child's process id (and process group id), 0 when it
// is not running.
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil || s.proc.Exited() {
		return 0
	}
	return s.proc.Pid()
}

// Running reports whether the child is alive.
func (s *Server) Running() bool { return s.Pid() != 0 }

// Start launches the child unless it is running and waits until Ready says
// it serves requests, failing fast if the child exits. ctx bounds the wait.
func (s *Server) Start(ctx context.Context) error {
	p, fresh, err := s.launch()
	if err != nil {
		return err
	}
	if err := s.waitReady(ctx, p); err != nil {
		if fresh {
			// Don't leave a half-started child behind; one that was
			// already running is the caller's business.
			_ = s.stopProc(p, 0)
		}
		return err
	}
	return nil
}

func (s *Server) launch() (p *Process, fresh bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, false, fmt.Errorf("%s: %w", s.spec.Name, ErrClosed)
	}
	if s.proc != nil && !s.proc.Exited() {
		return s.proc, false, nil
	}
	s.spec.Output.Reset()
	p, err = StartProcess(s.spec.Command(), s.spec.Output)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", s.spec.Name, err)
	}
	s.proc = p
	return p, true, nil
}

func (s *Server) waitReady(ctx context.Context, p *Process) error {
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	var last error
	for {
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		last = s.spec.Ready(pctx)
		cancel()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w (last check: %v); last output:\n%s", s.spec.Name, ctx.Err(), last, s.Output())
		case <-p.Done():
			tail := s.Output()
			err := fmt.Errorf("%s exited during startup (%v); last output:\n%s", s.spec.Name, p.Err(), tail)
			if strings.Contains(strings.ToLower(tail), "address already in use") {
				err = fmt.Errorf("%w: %w", ErrPortInUse, err)
			}
			return err
		case <-t.C:
		}
	}
}

// Stop asks the child to shut down (its stop signal, then SIGKILL after
// the Spec's StopGrace) and waits for it. Stopping a stopped server is a
// no-op; Start starts it again on the same ports and directory.
func (s *Server) Stop() error { return s.stop(cmp.Or(s.spec.StopGrace, StopGrace)) }

// Kill SIGKILLs the child's process group at once, like a crash.
// Start starts it again on the same ports and directory.
func (s *Server) Kill() error { return s.stop(0) }

func (s *Server) stop(grace time.Duration) error {
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	if p == nil {
		return nil
	}
	return s.stopProc(p, grace)
}

func (s *Server) stopProc(p *Process, grace time.Duration) error {
	err := p.Stop(grace)
	s.mu.Lock()
	if s.proc == p {
		s.proc = nil
	}
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("stop %s: %w", s.spec.Name, err)
	}
	return nil
}

// Close stops the server and removes its directory. It cannot be started
// again. Closing twice is a no-op. Nothing of it remains afterwards: no
// process, no directory.
func (s *Server) Close() error {
	err := s.Stop()
	s.mu.Lock()
	already := s.closed
	s.closed = true
	s.mu.Unlock()
	if already {
		return err
	}
	return errors.Join(err, s.spec.Dir.Remove())
}

// Starter is a server that Launch can start and clean up.
type Starter interface {
	Start(ctx context.Context) error
	Close() error
}

// Launch makes a server with newServer (fresh ports and directory each
// time) and starts it, closing it if it does not come up. It tries again
// with a new one when a port was taken between picking and binding it, up
// to a few times or until ctx ends.
func Launch[S Starter](ctx context.Context, newServer func(context.Context) (S, error)) (S, error) {
	for attempt := 1; ; attempt++ {
		s, err := newServer(ctx)
		if err != nil {
			return s, err
		}
		err = s.Start(ctx)
		if err == nil {
			return s, nil
		}
		err = errors.Join(err, s.Close())
		if !errors.Is(err, ErrPortInUse) || attempt == startAttempts || ctx.Err() != nil {
			var zero S
			return zero, err
		}
	}
}

// LookPath finds a server binary on $PATH, or returns an error wrapping
// notInstalled, whose text names the package to install.
func LookPath(name string, notInstalled error) (string, error) {
	bin, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%w: %v", notInstalled, err)
	}
	return bin, nil
}

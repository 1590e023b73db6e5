package simulator

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/zklockviz/zklockviz/fault"
	"github.com/zklockviz/zklockviz/localproc"
)

// ServerSpec says how a Backend starts its throwaway server and how its
// errors name it.
type ServerSpec[S io.Closer] struct {
	// Title names the service to a teacher: "Redis" in "Redis scenarios
	// are unavailable".
	Title string
	// Service is the classroom's name in other errors: "redis" in "redis
	// classroom: start redis-server".
	Service string
	// Program is the server's binary: "redis-server".
	Program string
	// NotInstalled is the error (wrapped) of a Start or Installed that
	// found no server; its text names the package to install.
	NotInstalled error
	// Installed says whether the server can be started here, without
	// starting it. Nil: Program is looked up on $PATH.
	Installed func() error
	// Timeout bounds one start.
	Timeout time.Duration
	// Start starts the server, ready for runs. An error that already has
	// a fault kind is returned as is.
	Start func(ctx context.Context) (S, error)
}

// Available says whether the server is installed; its error names the
// package that provides it.
func (sp ServerSpec[S]) Available() error {
	if sp.Installed != nil {
		return sp.Installed()
	}
	_, err := localproc.LookPath(sp.Program, sp.NotInstalled)
	return err
}

// start runs sp.Start within sp.Timeout; every error makes the run
// unavailable, and a missing server says which package to install.
func (sp ServerSpec[S]) start(ctx context.Context) (S, error) {
	ctx, cancel := context.WithTimeout(ctx, sp.Timeout)
	defer cancel()
	srv, err := sp.Start(ctx)
	switch {
	case err == nil:
		return srv, nil
	case errors.Is(err, sp.NotInstalled):
		err = fault.Errorf(fault.Unavailable, "%s scenarios are unavailable: %v", sp.Title, err)
	case !hasKind(err):
		err = fault.Errorf(fault.Unavailable, "%s classroom: start %s: %v", sp.Service, sp.Program, err)
	}
	var zero S
	return zero, err
}

// hasKind says whether err is already one of package fault's errors.
func hasKind(err error) bool {
	var fe *fault.Error
	return errors.As(err, &fe)
}

// LazyServer is the one server of a Backend that starts its own (Redis,
// etcd, PostgreSQL): started by the first Open, or ahead of it by
// Prestart, shared by every run, and stopped by Close. The zero value has
// no server.
type LazyServer[S io.Closer] struct {
	mu      sync.Mutex
	srv     S
	up      bool
	pending *pendingStart[S] // Prestart's start, until an Open or Close takes it
}

// pendingStart is a start under way in the background.
type pendingStart[S io.Closer] struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when srv and err are set
	srv    S
	err    error
}

// Prestart begins starting the server in the background, so that the
// first run finds it up, or part of the way there. The next Open waits for
// it and returns its error; Close cancels it and stops what it started.
// It does nothing when the server is up or already being started.
func (l *LazyServer[S]) Prestart(sp ServerSpec[S]) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.up || l.pending != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &pendingStart[S]{cancel: cancel, done: make(chan struct{})}
	l.pending = p
	go func() {
		defer close(p.done)
		p.srv, p.err = sp.start(ctx)
	}()
}

// Open starts the server as sp says unless it is up, or takes over
// Prestart's start. Opens wait for each other, so two first runs start
// one server.
func (l *LazyServer[S]) Open(ctx context.Context, sp ServerSpec[S]) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.up {
		return nil
	}
	if p := l.pending; p != nil {
		select {
		case <-p.done:
		case <-ctx.Done():
			// The start goes on for the next Open.
			return fault.Errorf(fault.Unavailable, "%s classroom: start %s: %v", sp.Service, sp.Program, ctx.Err())
		}
		l.pending = nil
		p.cancel()
		if p.err != nil {
			// The next Open tries again.
			return p.err
		}
		l.srv, l.up = p.srv, true
		return nil
	}
	srv, err := sp.start(ctx)
	if err != nil {
		return err
	}
	l.srv, l.up = srv, true
	return nil
}

// Server is the server, ok false before the first Open and after Close.
func (l *LazyServer[S]) Server() (srv S, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.srv, l.up
}

// Close stops the server (removing its directory), after cancelling and
// waiting for a Prestart's start, so that nothing it began is left; a
// later Open starts a new server.
func (l *LazyServer[S]) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p := l.pending; p != nil {
		l.pending = nil
		p.cancel()
		<-p.done
		if p.err == nil {
			return p.srv.Close()
		}
		// A start that failed, or was cancelled here, has cleaned up
		// after itself.
		return nil
	}
	if !l.up {
		return nil
	}
	err := l.srv.Close()
	var zero S
	l.srv, l.up = zero, false
	return err
}

package localproc

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"
)

// Command says how to launch a child.
type Command struct {
	Path string
	Args []string // without argv[0]
	Dir  string   // working directory; "" inherits ours
	// Env replaces the environment when non-nil.
	Env []string
	// Credential runs the child as another user (PostgreSQL refuses root).
	Credential *syscall.Credential
	// StopSignal asks the child to shut down; default SIGTERM.
	StopSignal syscall.Signal
}

// Process is one run of a child.
type Process struct {
	cmd        *exec.Cmd
	stopSignal syscall.Signal
	done       chan struct{} // closed once the process has been reaped
	err        error         // Wait's result, valid after done is closed
}

// StartProcess launches c with stdout and stderr to out. The child gets its
// own process group, so a Ctrl-C in the terminal does not reach it before the
// Go side has cleaned up, and SIGKILL when this process dies.
func StartProcess(c Command, out io.Writer) (*Process, error) {
	p := &Process{stopSignal: c.StopSignal, done: make(chan struct{})}
	p.stopSignal = cmp.Or(p.stopSignal, syscall.SIGTERM)
	started := make(chan error, 1)
	go func() {
		defer close(p.done)
		// Pdeathsig fires when the *thread* that forked the child exits,
		// not the process (golang/go#27505). Pin this goroutine to its
		// thread for the child's whole life; it is deliberately never
		// unlocked, so the thread only goes away after the child is reaped.
		runtime.LockOSThread()
		cmd := exec.Command(c.Path, c.Args...)
		cmd.Dir = c.Dir
		cmd.Env = c.Env
		cmd.Stdout = out
		cmd.Stderr = out
		cmd.SysProcAttr = sysProcAttr(c.Credential)
		// Don't hang in Wait if a grandchild inherited the output pipe.
		cmd.WaitDelay = time.Second
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		p.cmd = cmd
		started <- nil
		p.err = cmd.Wait()
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start %s: %w", c.Path, err)
	}
	return p, nil
}

// Pid is the child's process id, which is also its process group id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed once the child has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is how the child exited; valid once Done is closed.
func (p *Process) Err() error {
	<-p.done
	return p.err
}

// Exited reports whether the child has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop sends the stop signal, waits up to grace, then SIGKILLs the child's
// whole process group and waits for the child to exit. grace 0 kills at once.
func (p *Process) Stop(grace time.Duration) error {
	if p.Exited() {
		return nil
	}
	if grace > 0 {
		if err := p.cmd.Process.Signal(p.stopSignal); err != nil && !errors.Is(err, os.ErrProcessDone) {
			return fmt.Errorf("send %v: %w", p.stopSignal, err)
		}
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-p.done:
			return nil
		case <-t.C:
		}
	}
	// The group, not just the leader: PostgreSQL's backends are its
	// children and would otherwise linger until they notice.
	if err := syscall.Kill(-p.Pid(), syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("send SIGKILL: %w", err)
	}
	<-p.done
	return nil
}

// Run runs a one-shot child (initdb, cp) to completion with the same
// guarantees as StartProcess, killing it if ctx ends first. The error
// carries the child's last output.
func Run(ctx context.Context, c Command) error {
	out := NewOutput(nil, "")
	p, err := StartProcess(c, out)
	if err != nil {
		return err
	}
	select {
	case <-p.Done():
	case <-ctx.Done():
		_ = p.Stop(0)
		return fmt.Errorf("%s: %w; last output:\n%s", c.Path, ctx.Err(), out)
	}
	if err := p.Err(); err != nil {
		return fmt.Errorf("%s: %w; last output:\n%s", c.Path, err, out)
	}
	return nil
}

// Package redislocal runs real, throwaway Redis servers on loopback for
// tests, demos and the classroom: one, or several independent masters for
// Redlock.
//
// The servers keep nothing on disk (no RDB snapshots, no append-only file),
// so Restart loses every key: exactly the Redlock failure the classroom
// shows when a master restarts without persistence; Stop (SIGTERM) and Start
// do the same in two steps, Kill is a crash. Each server has its own
// temporary directory and free port, dies with this process
// (PR_SET_PDEATHSIG), and its directory is removed even after kill -9 (see
// package localproc).
package redislocal

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/zklockviz/zklockviz/localproc"
)

// ErrNotInstalled is returned (wrapped) by Start when redis-server cannot be
// found.
var ErrNotInstalled = errors.New("redislocal: redis-server is not installed (on Debian/Ubuntu: apt-get install redis-server)")

// Options configure a server. The zero value is usable.
type Options struct {
	// Log receives the server's output, line by line, prefixed with its
	// address. Default: discarded.
	Log io.Writer
	// LogLevel is redis-server's loglevel. Default "warning".
	LogLevel string
	// Args are extra redis-server arguments, e.g.
	// {"--notify-keyspace-events", "KEA"}; they override the defaults.
	Args []string
}

// Server is one redis-server process. Its port stays the same across Stop,
// Start and Restart.
type Server struct {
	*localproc.Server // Name, Dir, Pid, Running, Output, Stop, Kill, Close
	port              int
}

// Start launches a redis-server on a free loopback port and waits until it
// answers PING. ctx bounds the startup only; call Close when done.
func Start(ctx context.Context, opts Options) (*Server, error) {
	bin, err := localproc.LookPath("redis-server", ErrNotInstalled)
	if err != nil {
		return nil, err
	}
	opts.LogLevel = cmp.Or(opts.LogLevel, "warning")
	return localproc.Launch(ctx, func(ctx context.Context) (*Server, error) {
		return newServer(bin, opts)
	})
}

// StartN starts n independent masters in parallel (Redlock's usual five).
// Either all of them are returned running, or none is left behind.
func StartN(ctx context.Context, n int, opts Options) ([]*Server, error) {
	if n < 1 {
		return nil, fmt.Errorf("redislocal: StartN(%d): need at least one server", n)
	}
	opts.Log = localproc.NewSyncWriter(opts.Log)
	servers := make([]*Server, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { servers[i], errs[i] = Start(ctx, opts) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, s := range servers {
			if s != nil {
				err = errors.Join(err, s.Close())
			}
		}
		return nil, err
	}
	return servers, nil
}

func newServer(bin string, opts Options) (*Server, error) {
	ports, err := localproc.FreePorts(1)
	if err != nil {
		return nil, err
	}
	dir, err := localproc.NewDir("redislocal", "")
	if err != nil {
		return nil, err
	}
	s := &Server{port: ports[0]}
	args := []string{
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		// Nothing survives a restart: the point of Restart.
		"--save", "",
		"--appendonly", "no",
		"--dir", dir.Path(),
		"--logfile", "", // stdout, captured for errors
		"--loglevel", opts.LogLevel,
		"--daemonize", "no",
		"--databases", "1",
	}
	args = append(args, opts.Args...)
	s.Server = localproc.NewServer(localproc.Spec{
		Name:   "redis " + s.Addr(),
		Dir:    dir,
		Output: localproc.NewOutput(opts.Log, s.Addr()+": "),
		Command: func() localproc.Command {
			return localproc.Command{Path: bin, Args: args, Dir: dir.Path()}
		},
		Ready: s.ready,
	})
	return s, nil
}

// Addr is the server's address, "127.0.0.1:PORT".
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Port is the server's TCP port.
func (s *Server) Port() int { return s.port }

// Start starts a stopped server again on the same port, empty, and waits
// until it answers PING. It only waits if the server is running.
func (s *Server) Start(ctx context.Context) error {
	// Belt and braces: a dump left by an Args override must not bring
	// keys back.
	if err := os.Remove(filepath.Join(s.Dir(), "dump.rdb")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("redislocal: %w", err)
	}
	return s.Server.Start(ctx)
}

// Restart stops the server and starts a fresh one on the same port: every
// key is lost, as when a Redis master without persistence restarts.
func (s *Server) Restart(ctx context.Context) error {
	if err := s.Stop(); err != nil {
		return err
	}
	return s.Start(ctx)
}

// ready reports nil once this server's own process answers on its port.
// A PING alone is not enough: a restart reuses the port, and another
// redis-server that took it meanwhile (a parallel test's) would answer
// while this one exits on "Address already in use", to be found gone
// steps later.
// A server whose INFO is refused (renamed or denied by its Args, as a
// locked-down production one) is taken at its PING.
func (s *Server) ready(ctx context.Context) error {
	pid, err := processID(ctx, s.Addr())
	if errors.Is(err, errRefused) {
		return Ping(ctx, s.Addr())
	}
	if err != nil {
		return err
	}
	if own := s.Pid(); pid != own {
		return fmt.Errorf("redislocal: process %d answers on %s, not this server's (%d)", pid, s.Addr(), own)
	}
	return nil
}

// errRefused: the server answered a command with an error.
var errRefused = errors.New("refused")

// processID asks the server on addr for its process id (INFO server).
func processID(ctx context.Context, addr string) (int, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	if _, err := io.WriteString(c, "*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n"); err != nil {
		return 0, err
	}
	r := bufio.NewReader(c)
	head, err := r.ReadString('\n')
	if err != nil {
		return 0, err
	}
	if strings.HasPrefix(head, "-") {
		return 0, fmt.Errorf("INFO server: %w: %s", errRefused, strings.TrimSpace(head[1:]))
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(head, "$")))
	if !strings.HasPrefix(head, "$") || err != nil {
		return 0, fmt.Errorf("INFO server answered %q", head)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(body)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, fmt.Errorf("INFO server from %s has no process_id", addr)
}

// Ping sends one RESP PING to addr and returns nil if it answers +PONG. It
// speaks the protocol directly so the project needs no Redis client module
// just to know a server is up.
func Ping(ctx context.Context, addr string) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	if _, err := io.WriteString(c, "*1\r\n$4\r\nPING\r\n"); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}

// Package pglocal runs real, throwaway PostgreSQL servers on loopback for
// tests, demos and the classroom.
//
// initdb (about a second, five the first time on a cold machine) runs
// straight into the first server's directory, and then, in the background,
// into a template directory; each later server starts from a copy of the
// template. The copy (28 MB, some 1000 files) takes longer than the
// postmaster's start, so one spare copy is made ahead, in the background,
// after every Start. PostgreSQL refuses to run as root, so when this
// process is root, initdb and postgres run as the `postgres` user (created by
// Debian's postgresql package) and every directory they use is theirs.
//
// Each server has its own temporary directory (in /dev/shm when $TMPDIR is
// not set and /dev/shm is a tmpfs with room: see parentDir) and free port,
// dies with this process (PR_SET_PDEATHSIG; its backends follow their
// postmaster), and its directory is removed even after kill -9 (see package
// localproc). Settings keep a killed server from leaving anything outside
// that directory: dynamic shared memory lives in the data directory
// (dynamic_shared_memory_type=mmap, not as segments of its own in /dev/shm),
// and the reaper removes the small System V segment the postmaster keeps as
// a data-directory interlock.
//
// Stop is a fast shutdown (SIGINT: sessions are disconnected, open
// transactions rolled back); Kill SIGKILLs the postmaster and its backends,
// like a crash. Either way Start brings the committed data back.
package pglocal

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/zklockviz/zklockviz/localproc"
)

// ErrNotInstalled is returned (wrapped) by Start when PostgreSQL's server
// binaries, or the postgres user they must run as, cannot be found.
var ErrNotInstalled = errors.New("pglocal: PostgreSQL is not installed (on Debian/Ubuntu: apt-get install postgresql)")

// User is the superuser of every server, trusted without a password on
// loopback.
const User = "postgres"

// debianBinGlob is where Debian's postgresql-NN packages put the server
// binaries; they are not on $PATH. A variable so a test can point it at
// an empty directory.
var debianBinGlob = "/usr/lib/postgresql/*/bin"

// Options configure a server. The zero value is usable.
type Options struct {
	// Settings are server settings (postgres -c name=value), e.g.
	// {"deadlock_timeout": "200ms"}; they override the defaults.
	Settings map[string]string
	// Log receives the server's output, line by line. Default: discarded.
	Log io.Writer
}

// defaultSettings trade durability for speed, and keep a SIGKILLed server's
// leftovers inside its directory.
var defaultSettings = map[string]string{
	"listen_addresses":           "127.0.0.1",
	"fsync":                      "off",
	"synchronous_commit":         "off",
	"full_page_writes":           "off",
	"dynamic_shared_memory_type": "mmap",
	"log_min_messages":           "warning",
}

// reaperHook runs in the reaper shell ($d is the server's directory) before
// the directory is removed. After a SIGKILL of the postmaster (a Kill, or
// this process dying) it removes the interlock System V segment the
// postmaster keeps, whose key and id are on line 7 of postmaster.pid: the
// only thing such a server leaves outside $d. It checks that key and id
// still match so a stale file cannot remove someone else's segment.
const reaperHook = `set -- $(sed -n 7p "$d/data/postmaster.pid" 2>/dev/null)
if [ -n "$2" ] && ipcs -m | grep -q "^$(printf 0x%08x "$1") *$2 "; then ipcrm -m "$2"; fi`

// install is a PostgreSQL installation and the user to run it as.
type install struct {
	bindir string
	cred   *syscall.Credential // nil: run as ourselves (not root)
}

func (in install) command(name string, args ...string) localproc.Command {
	return localproc.Command{Path: filepath.Join(in.bindir, name), Args: args, Credential: in.cred}
}

// chown hands a directory we created to the server's user.
func (in install) chown(dir string) error {
	if in.cred == nil {
		return nil
	}
	if err := os.Chown(dir, int(in.cred.Uid), int(in.cred.Gid)); err != nil {
		return fmt.Errorf("pglocal: %w", err)
	}
	return nil
}

func findInstall() (install, error) {
	bindir, err := findBindir()
	if err != nil {
		return install{}, err
	}
	in := install{bindir: bindir}
	if os.Geteuid() != 0 {
		return in, nil
	}
	u, err := user.Lookup(User)
	if err != nil {
		return install{}, fmt.Errorf("%w: running as root needs the %q user to run the server as: %v", ErrNotInstalled, User, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return install{}, fmt.Errorf("pglocal: user %s: %w", User, err)
	}
	in.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	return in, nil
}

// findBindir picks the newest Debian server version, else postgres on $PATH.
func findBindir() (string, error) {
	dirs, _ := filepath.Glob(debianBinGlob)
	version := func(dir string) int {
		v, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
		return v
	}
	slices.SortFunc(dirs, func(a, b string) int { return version(b) - version(a) })
	for _, d := range dirs {
		if hasServer(d) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("postgres"); err == nil && hasServer(filepath.Dir(p)) {
		return filepath.Dir(p), nil
	}
	return "", fmt.Errorf("%w: no postgres and initdb in %s or on $PATH", ErrNotInstalled, debianBinGlob)
}

func hasServer(dir string) bool {
	for _, name := range []string{"postgres", "initdb"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return false
		}
	}
	return true
}

// Server is one postmaster. Its port and data stay the same across Stop and
// Start.
type Server struct {
	*localproc.Server // Name, Dir, Pid, Running, Output, Start, Stop, Kill, Close
	port              int
}

// Start launches a PostgreSQL server on a free loopback port and waits until
// it accepts a session. ctx bounds the startup (and the first call's initdb)
// only; call Close when done.
func Start(ctx context.Context, opts Options) (*Server, error) {
	in, err := findInstall()
	if err != nil {
		return nil, err
	}
	return localproc.Launch(ctx, func(ctx context.Context) (*Server, error) {
		return newServer(ctx, in, opts)
	})
}

func newServer(ctx context.Context, in install, opts Options) (*Server, error) {
	ports, err := localproc.FreePorts(1)
	if err != nil {
		return nil, err
	}
	dir, err := clusters.take(ctx, in)
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir.Path(), "data")
	s := &Server{port: ports[0]}
	settings := maps.Clone(defaultSettings)
	maps.Copy(settings, opts.Settings)
	args := []string{"-D", data, "-p", strconv.Itoa(s.port), "-k", dir.Path()}
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		args = append(args, "-c", k+"="+settings[k])
	}
	s.Server = localproc.NewServer(localproc.Spec{
		Name:   "postgresql " + s.Addr(),
		Dir:    dir,
		Output: localproc.NewOutput(opts.Log, s.Addr()+": "),
		Command: func() localproc.Command {
			c := in.command("postgres", args...)
			c.Dir = dir.Path()
			// SIGTERM is a smart shutdown that waits for every client
			// to leave; SIGINT is the fast one.
			c.StopSignal = syscall.SIGINT
			return c
		},
		Ready: func(ctx context.Context) error { return Ready(ctx, s.Addr()) },
	})
	return s, nil
}

// Addr is the server's TCP address, "127.0.0.1:PORT".
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Port is the server's TCP port.
func (s *Server) Port() int { return s.port }

// DSN is a connection URL for the superuser and database postgres over TCP,
// as pgx and psql take it.
func (s *Server) DSN() string { return s.DSNFor(User, "postgres") }

// DSNFor is a connection URL for another role and database on this server.
func (s *Server) DSNFor(role, database string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.User(role),
		Host:     s.Addr(),
		Path:     "/" + database,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// SocketDir is the directory of the server's Unix socket (psql -h).
func (s *Server) SocketDir() string { return s.Dir() }

// Ready opens a session on addr as User to database postgres and returns
// nil once the server says it is ready for a query (trust authentication).
// While the server starts it answers with an error ("the database system is
// starting up"), returned as is.
func Ready(ctx context.Context, addr string) error {
	c, err := Connect(ctx, addr)
	if err != nil {
		return err
	}
	_, _ = c.Write([]byte{'X', 0, 0, 0, 4}) // Terminate
	return c.Close()
}

// Connect opens a session on addr as User to database postgres, with trust
// authentication, and returns the connection once the server is ready for a
// query: a live backend until the caller closes it. It speaks the wire
// protocol directly so the project needs no PostgreSQL driver just to know a
// server is up; use a real driver (pgx) for anything else. ctx bounds the
// handshake.
func Connect(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if err := startup(ctx, c); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func startup(ctx context.Context, c net.Conn) error {
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
		defer c.SetDeadline(time.Time{})
	}
	params := "user\x00" + User + "\x00database\x00postgres\x00\x00"
	msg := binary.BigEndian.AppendUint32(nil, uint32(8+len(params)))
	msg = binary.BigEndian.AppendUint32(msg, 3<<16) // protocol 3.0
	msg = append(msg, params...)
	if _, err := c.Write(msg); err != nil {
		return err
	}
	// Unbuffered reads: nothing after ReadyForQuery may be swallowed from a
	// connection the caller keeps.
	for {
		var hdr [5]byte
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return fmt.Errorf("read reply: %w", err)
		}
		n := int(binary.BigEndian.Uint32(hdr[1:])) - 4
		if n < 0 || n > 1<<20 {
			return fmt.Errorf("bad message length %d", n)
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(c, body); err != nil {
			return fmt.Errorf("read reply: %w", err)
		}
		switch hdr[0] {
		case 'R': // authentication: only 0, "ok", is expected with trust
			if n >= 4 && binary.BigEndian.Uint32(body) != 0 {
				return fmt.Errorf("server asks for authentication (method %d)", binary.BigEndian.Uint32(body))
			}
		case 'E':
			return fmt.Errorf("server: %s", errorMessage(body))
		case 'Z': // ready for query
			return nil
		}
	}
}

// errorMessage extracts the severity, code and message fields of an
// ErrorResponse body.
func errorMessage(body []byte) string {
	var sev, code, text string
	for _, f := range strings.Split(string(body), "\x00") {
		if f == "" {
			continue
		}
		switch f[0] {
		case 'S':
			sev = f[1:]
		case 'C':
			code = f[1:]
		case 'M':
			text = f[1:]
		}
	}
	return fmt.Sprintf("%s %s: %s", sev, code, text)
}

// Installed says whether PostgreSQL can be started here, without starting
// it; its error wraps ErrNotInstalled and names the package to install.
func Installed() error {
	_, err := findInstall()
	return err
}

// Command zklockviz reads lock queues from ZooKeeper, Redis, etcd and
// PostgreSQL and shows them live in a browser. See `zklockviz help`.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/zklockviz/zklockviz/internal/buildinfo"
)

// version is set at build time: -ldflags "-X main.version=v1.2.3". The
// Makefile stamps the VCS facts too, for builds whose build info has none
// (a git worktree, -buildvcs=false); see internal/buildinfo.
var (
	version                          = "dev"
	revision, revisionTime, modified string
)

// build is this binary's version and VCS facts.
func build() buildinfo.Info {
	return buildinfo.Read(buildinfo.Stamped{Version: version, Revision: revision, Time: revisionTime, Modified: modified})
}

// usageError is a mistake in the command line; it exits with status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

// run dispatches a subcommand and returns the exit status: 0 fine, 1 failed,
// 2 bad command line. getenv reads the ZKLOCKVIZ_* defaults (envDefaults).
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, mainUsage)
		return 2
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "serve":
		return exitCode(stderr, "serve", runServe(ctx, rest, stdout, stderr, getenv))
	case "demo":
		return exitCode(stderr, "demo", runDemo(ctx, rest, stdout, stderr, getenv))
	case "sim":
		// The simulator's own flags live in sim.go.
		return runSim(ctx, rest, stdout, stderr, getenv)
	case "lab":
		return exitCode(stderr, "lab", runLab(ctx, rest, stdout, stderr))
	case "lab-client":
		return exitCode(stderr, "lab-client", runLabClient(ctx, rest, stdout))
	case "version", "--version", "-version":
		fmt.Fprint(stdout, build())
		return 0
	case "help", "-h", "--help", "-help":
		return help(rest, stdout, stderr, getenv)
	default:
		fmt.Fprintf(stderr, "zklockviz: unknown command %q\n\n%s", cmd, mainUsage)
		return 2
	}
}

// exitCode reports err and maps it to an exit status.
func exitCode(stderr io.Writer, cmd string, err error) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errHelp):
		return 0
	case errors.As(err, new(*usageError)):
		fmt.Fprintf(stderr, "zklockviz %s: %v\nRun 'zklockviz %s --help' for usage.\n", cmd, err, cmd)
		return 2
	default:
		fmt.Fprintf(stderr, "zklockviz %s: %v\n", cmd, err)
		return 1
	}
}

func help(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) == 0 {
		fmt.Fprint(stdout, mainUsage)
		return 0
	}
	switch args[0] {
	case "serve":
		fmt.Fprint(stdout, serveUsage)
	case "demo":
		fmt.Fprint(stdout, demoUsage)
	case "lab":
		fmt.Fprint(stdout, labUsage)
	case "sim":
		return runSim(context.Background(), []string{"--help"}, stdout, stderr, getenv)
	default:
		fmt.Fprintf(stderr, "zklockviz help: unknown command %q\n\n%s", args[0], mainUsage)
		return 2
	}
	return 0
}

const mainUsage = `zklockviz shows lock queues live in a browser, read-only: ZooKeeper, etcd,
Redis and PostgreSQL locks side by side. For each lock: who holds it, who waits and in
what order, and whom each waiter waits for, by its recipe's rule (etcd: marked
inferred) or by the server's own word (ZooKeeper's watch table; PostgreSQL's
pg_blocking_pids, marked confirmed); for Redis, each lock's holder token and
time left per master (spin-lock waiters leave no trace on the server).

Usage:
  zklockviz serve [--zk HOST:PORT[,...][/chroot]] [--etcd URL[,...]] [--redis HOST:PORT...]
                  [--postgres DSN] [flags]
  zklockviz demo [--addr 127.0.0.1:8080]
  zklockviz sim ...
  zklockviz lab [--service zookeeper|redis|etcd|postgres] [--fencing on|off] [--seed N] [flags]
  zklockviz version
  zklockviz help [serve|demo|sim|lab]

Commands:
  serve    watch locks on ZooKeeper, etcd, Redis and PostgreSQL (read-only) and serve the UI
  demo     start a throwaway local ZooKeeper and serve the UI with the simulator
  sim      run simulator scenarios from the command line
  lab      real lock clients under pauses and kills: who believed they held, what was lost
  version  print the version, the commit it was built from and the Go version

Examples:
  zklockviz demo
  zklockviz serve --zk zk1:2181,zk2:2181,zk3:2181 --watch-under /locks
  zklockviz serve --zk zk1:2181/myapp --watch /locks/orders --leases /locks/pool=3
  zklockviz serve --etcd http://etcd1:2379 --watch etcd:/locks/orders
  zklockviz serve --redis r1:6379 --redis r2:6379 --redis r3:6379 --watch redis:orders-lock
  zklockviz serve --postgres 'postgres://viz@db1/app' --watch postgres:advisory/42

Run 'zklockviz help serve' for every flag and the least privilege each
service needs (what to whitelist on a production ensemble, the etcd role,
the Redis ACL user, the PostgreSQL role).
`

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/zklockviz/zklockviz/zookeeper/zklocal"
)

// demoPrefix is where the demo looks for lock parents made by hand.
const demoPrefix = "/locks"

// demoStartTimeout bounds the local ZooKeeper's start: a JVM on a busy
// 2-core machine takes tens of seconds, far beyond --zk-timeout.
const demoStartTimeout = 2 * time.Minute

const demoUsage = `Usage: zklockviz demo [--addr 127.0.0.1:8080] [--zk-timeout 5s] [--log-level info]

Starts a throwaway ZooKeeper on free loopback ports (from the installed
Debian/Ubuntu package "zookeeper", or $ZOOKEEPER_HOME), then serves the UI
against it with the simulator on, watching lock parents under /locks too.
Ctrl-C stops everything and deletes the ZooKeeper's data.

Flags:
  --addr HOST:PORT      where to serve (default 127.0.0.1:8080; env ZKLOCKVIZ_ADDR)
  --zk-timeout DURATION how long the started ZooKeeper may take to give a
                        session (default 5s; env ZKLOCKVIZ_ZK_TIMEOUT); its
                        start itself may take up to 2m
  --log-level LEVEL     debug, info, warn or error (default info)

ZooKeeper missing? sudo apt-get install zookeeper   (or: make deps)
`

// demoFlags is demo's command line.
type demoFlags struct {
	addr, level string
	zkTimeout   time.Duration
}

func (f *demoFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.addr, "addr", defaultAddr, "")
	fs.StringVar(&f.level, "log-level", "info", "")
	fs.DurationVar(&f.zkTimeout, "zk-timeout", defaultZKTimeout, "")
}

// runDemo is the demo command.
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	f, err := parseDemoFlags(args, stdout, getenv)
	if err != nil {
		return err
	}
	// Find a taken --addr now, not after half a minute of ZooKeeper start.
	if err := checkListen(f.addr); err != nil {
		return err
	}

	fmt.Fprintln(stderr, "starting a local ZooKeeper...")
	zks, err := startDemoZK(ctx, getenv)
	if zks == nil {
		if err == nil {
			fmt.Fprintln(stderr, "interrupted")
		}
		return err
	}
	defer func() {
		if err := zks.Close(); err != nil {
			fmt.Fprintf(stderr, "zklockviz demo: stop ZooKeeper: %v\n", err)
		}
	}()

	// The demo's locks live on a throwaway server: so does their history.
	histDir, err := os.MkdirTemp("", "zklockviz-demo-history-*")
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	defer os.RemoveAll(histDir)

	m, err := demoMain(f, zks.Addr(), histDir, stdout, stderr, getenv)
	if err != nil {
		return err
	}
	if err := m.Run(ctx); err != nil {
		return errors.Join(err, m.Close())
	}
	fmt.Fprintf(stdout, "\nzklockviz demo\n  open       %s\n  ZooKeeper  %s (AdminServer %s)\n  try        %s -server %s, create lock nodes under %s/<name>\n  stop       Ctrl-C\n\n",
		m.URL(), zks.Addr(), zks.AdminURL(), zkCliPath, zks.Addr(), demoPrefix)
	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-m.Err():
	}
	return errors.Join(runErr, m.Close())
}

// parseDemoFlags reads demo's command line.
func parseDemoFlags(args []string, stdout io.Writer, getenv func(string) string) (demoFlags, error) {
	var f demoFlags
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	f.register(fs)
	if err := parseFlags(fs, args, getenv, demoUsage, stdout); err != nil {
		return f, err
	}
	if err := positive("zk-timeout", f.zkTimeout); err != nil {
		return f, usagef("%v", err)
	}
	return f, nil
}

// checkListen fails when addr cannot be listened on, and frees it again.
func checkListen(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("cannot listen on %s (pick another with --addr, or make demo ADDR=...): %w", addr, err)
	}
	ln.Close() // a probe: serve listens again once ZooKeeper is up
	return nil
}

// demoMain is the serve command the demo runs against the ZooKeeper at
// zkAddr. The demo is a serve command line like any other, so it checks
// the same things (a non-loopback --addr needs a token here too).
func demoMain(f demoFlags, zkAddr, histDir string, stdout, stderr io.Writer, getenv func(string) string) (*Main, error) {
	m := NewMain(stdout, stderr)
	m.Getenv = getenv
	err := m.ParseFlags([]string{
		"--zk", zkAddr, "--addr", f.addr, "--sim", "--watch-under", demoPrefix, "--zk-timeout", f.zkTimeout.String(),
		"--session-timeout", "4s", "--poll", "500ms", "--log-level", f.level, "--data-dir", histDir,
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// zkCliPath is where Debian's zookeeper package puts zkCli.sh, off PATH.
const zkCliPath = "/usr/share/zookeeper/bin/zkCli.sh"

// startDemoZK starts the demo's ZooKeeper. It returns nil and a nil error
// when ctx ended first (Ctrl-C while the JVM was starting).
func startDemoZK(ctx context.Context, getenv func(string) string) (*zklocal.Server, error) {
	startCtx, cancel := context.WithTimeout(ctx, demoStartTimeout)
	zks, err := zklocal.Start(startCtx, zklocal.Options{})
	cancel()
	if ctx.Err() != nil {
		if err == nil {
			zks.Close()
		}
		return nil, nil
	}
	if err == nil {
		return zks, nil
	}
	check := "sudo apt-get install zookeeper (or make deps), or set ZOOKEEPER_HOME to an Apache ZooKeeper binary distribution; java must be on PATH or in JAVA_HOME"
	switch home := getenv("ZOOKEEPER_HOME"); {
	case errors.Is(err, zklocal.ErrNotInstalled):
	case errors.Is(err, context.DeadlineExceeded):
		check = fmt.Sprintf("it did not answer within %v: a machine this busy may need another try; its output above says more", demoStartTimeout)
	case home != "":
		check = fmt.Sprintf("that ZOOKEEPER_HOME=%s holds an Apache ZooKeeper binary distribution (or unset it to use Debian's package), and that `java -version` runs", home)
	default:
		check = "the server's output above (a Java too old or too new for the installed ZooKeeper? `java -version`)"
	}
	return nil, fmt.Errorf("cannot start a local ZooKeeper: %w\ncheck: %s", err, check)
}

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

	"github.com/zklockviz/zklockviz/zklocal"
)

// demoPrefix is where the demo looks for lock parents made by hand.
const demoPrefix = "/locks"

const demoUsage = `Usage: zklockviz demo [--addr 127.0.0.1:8080] [--log-level info]

Starts a throwaway ZooKeeper on free loopback ports (from the installed
Debian/Ubuntu package "zookeeper", or $ZOOKEEPER_HOME), then serves the UI
against it with the simulator on, watching lock parents under /locks too.
Ctrl-C stops everything and deletes the ZooKeeper's data.

ZooKeeper missing? sudo apt-get install zookeeper   (or: make deps)
`

// runDemo is the demo command.
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addr := fs.String("addr", cmpOr(os.Getenv("ZKLOCKVIZ_ADDR"), defaultAddr), "")
	level := fs.String("log-level", "info", "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, demoUsage)
			return errHelp
		}
		return usagef("%v", err)
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}

	// Find a taken --addr now, not after half a minute of ZooKeeper start.
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("cannot listen on %s (pick another with --addr, or make demo ADDR=...): %w", *addr, err)
	}
	ln.Close()

	fmt.Fprintln(stderr, "starting a local ZooKeeper...")
	startCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	zks, err := zklocal.Start(startCtx, zklocal.Options{})
	cancel()
	if ctx.Err() != nil {
		// Ctrl-C while ZooKeeper was starting.
		if err == nil {
			zks.Close()
		}
		fmt.Fprintln(stderr, "interrupted")
		return nil
	}
	if errors.Is(err, zklocal.ErrNotInstalled) {
		return fmt.Errorf("ZooKeeper is not installed: run `sudo apt-get install zookeeper` (or `make deps`), or set ZOOKEEPER_HOME: %w", err)
	}
	if err != nil {
		return fmt.Errorf("start local ZooKeeper: %w", err)
	}
	defer func() {
		if err := zks.Close(); err != nil {
			fmt.Fprintf(stderr, "zklockviz demo: stop ZooKeeper: %v\n", err)
		}
	}()

	m := NewMain(stdout, stderr)
	// The demo is a serve command line like any other, so it checks the
	// same things (a non-loopback --addr needs a token here too).
	err = m.ParseFlags([]string{
		"--zk", zks.Addr(), "--addr", *addr, "--sim", "--watch-under", demoPrefix,
		"--session-timeout", "4s", "--poll", "500ms", "--log-level", *level,
	})
	if err != nil {
		return err
	}
	if err := m.Run(ctx); err != nil {
		return errors.Join(err, m.Close())
	}
	fmt.Fprintf(stdout, "\nzklockviz demo\n  open       %s\n  ZooKeeper  %s (AdminServer %s)\n  try        zkCli.sh -server %s, create lock nodes under %s/<name>\n  stop       Ctrl-C\n\n",
		m.URL(), zks.Addr(), zks.AdminURL(), zks.Addr(), demoPrefix)
	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-m.Err():
	}
	return errors.Join(runErr, m.Close())
}

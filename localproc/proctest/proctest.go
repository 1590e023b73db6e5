// Package proctest holds the test helpers for the packages that run local
// servers (zklocal, redislocal, etcdlocal, pglocal): start a server for a
// test and close it when the test ends, skip when the server is not
// installed, check that nothing is left behind, time starts. It is imported
// only from tests, so the binary does not link package testing.
package proctest

import (
	"context"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// SkipIfNotInstalled skips the test when err wraps notInstalled, or fails it
// when CI=true so CI cannot silently skip everything. Other errors pass.
func SkipIfNotInstalled(t testing.TB, err, notInstalled error) {
	t.Helper()
	if !errors.Is(err, notInstalled) {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(err)
	}
	t.Skip(err)
}

// CheckNotInstalled runs start with an empty $PATH and fails the test unless
// it fails with an error wrapping notInstalled whose text names the Debian
// package to install (aptPackage), which is all a user without the server
// needs to read.
func CheckNotInstalled(t *testing.T, notInstalled error, aptPackage string, start func(context.Context) error) {
	t.Helper()
	t.Setenv("PATH", t.TempDir())
	err := start(context.Background())
	if !errors.Is(err, notInstalled) {
		t.Fatalf("start without the server installed: %v, want %v", err, notInstalled)
	}
	if want := "apt-get install " + aptPackage; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
}

// Closer is what the service packages' servers have in common.
type Closer interface {
	Close() error
	Output() string
	Name() string
}

// TestStartTimeout bounds a test's server start. Generous: several packages'
// tests may start servers at once on a small box.
const TestStartTimeout = 90 * time.Second

// ForTest calls start with a TestStartTimeout deadline and closes what it
// returns when the test ends, logging the servers' last output if the test
// failed. When start fails with notInstalled, the test is skipped (failed
// when CI=true); any other error fails it.
func ForTest[S Closer](t testing.TB, notInstalled error, start func(context.Context) ([]S, error)) []S {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), TestStartTimeout)
	defer cancel()
	servers, err := start(ctx)
	if err != nil {
		SkipIfNotInstalled(t, err, notInstalled)
		t.Fatal(err)
	}
	for _, s := range servers {
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("last output of %s:\n%s", s.Name(), s.Output())
			}
			if err := s.Close(); err != nil {
				t.Errorf("close %s: %v", s.Name(), err)
			}
		})
	}
	return servers
}

// ForTestOne is ForTest for one server: a package's Start with its options,
// so the package's ForTestWith is one line.
func ForTestOne[S Closer, O any](t testing.TB, notInstalled error, start func(context.Context, O) (S, error), opts O) S {
	t.Helper()
	return ForTest(t, notInstalled, func(ctx context.Context) ([]S, error) {
		s, err := start(ctx, opts)
		if err != nil {
			return nil, err
		}
		return []S{s}, nil
	})[0]
}

// CheckCloseLeavesNothing closes the running server s, after a Kill (a
// crash) if kill is set, and fails the test if its process group or its
// directory is still there afterwards, or if a second Close fails.
func CheckCloseLeavesNothing(t testing.TB, s interface {
	Closer
	Pid() int
	Dir() string
	Kill() error
}, kill bool) {
	t.Helper()
	pid, dir := s.Pid(), s.Dir()
	if pid == 0 {
		t.Fatalf("%s is not running", s.Name())
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("%s: its directory before Close: %v", s.Name(), err)
	}
	if kill {
		if err := s.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if alive, err := GroupAlive(pid); err != nil || alive {
		t.Errorf("%s: process group %d alive after Close (err %v)", s.Name(), pid, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s: directory %s after Close: %v, want it gone", s.Name(), dir, err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("%s: second Close: %v", s.Name(), err)
	}
}

// BenchStart times start from call to ready, closing (untimed) what it
// returns, and reports the median as "ms-median": under load on a small
// shared box the mean is skewed by a few slow starts.
func BenchStart[S Closer](b *testing.B, notInstalled error, start func(context.Context) ([]S, error)) {
	BenchStartAfter(b, notInstalled, func() {}, start)
}

// BenchStartAfter is BenchStart with an untimed before, run ahead of every
// start (to let background work settle).
func BenchStartAfter[S Closer](b *testing.B, notInstalled error, before func(), start func(context.Context) ([]S, error)) {
	var times []time.Duration
	for b.Loop() {
		b.StopTimer()
		before()
		b.StartTimer()
		t0 := time.Now()
		servers, err := start(context.Background())
		if err != nil {
			SkipIfNotInstalled(b, err, notInstalled)
			b.Fatal(err)
		}
		times = append(times, time.Since(t0))
		b.StopTimer()
		for _, s := range servers {
			if err := s.Close(); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "ms-median")
}

// GroupAlive reports whether any process is in process group pgid. Every
// child StartProcess launches leads its own group, so this sees its
// descendants too (PostgreSQL's backends). Zombies count as gone: they hold
// no resources and are their parent's to reap.
func GroupAlive(pgid int) (bool, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		// comm, field 2, is in parentheses and may hold spaces: parse
		// after the last ')'. Then: state ppid pgrp.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 3 || f[0] == "Z" {
			continue
		}
		if g, _ := strconv.Atoi(f[2]); g == pgid {
			return true, nil
		}
	}
	return false, nil
}

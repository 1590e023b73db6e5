package redislocal_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/localproc"
	"github.com/zklockviz/zklockviz/localproc/proctest"
	"github.com/zklockviz/zklockviz/redis/redislocal"
	"github.com/zklockviz/zklockviz/redis/redislocal/redistest"
)

// do sends one command in RESP and returns the reply as text: a simple
// string or integer as is, a bulk string's contents, "(nil)" for a null,
// and an error reply as an error.
func do(t *testing.T, addr string, args ...string) (string, error) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(c, b.String()); err != nil {
		return "", err
	}
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return "", fmt.Errorf("redis: %s", line[1:])
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return "", err
		}
		if n < 0 {
			return "(nil)", nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	}
	return "", fmt.Errorf("unexpected reply %q", line)
}

func mustDo(t *testing.T, addr string, args ...string) string {
	t.Helper()
	v, err := do(t, addr, args...)
	if err != nil {
		t.Fatalf("%s %v: %v", addr, args, err)
	}
	return v
}

func TestServerAnswers(t *testing.T) {
	s := redistest.ForTest(t)
	if got := mustDo(t, s.Addr(), "PING"); got != "PONG" {
		t.Errorf("PING = %q, want PONG", got)
	}
	if got := mustDo(t, s.Addr(), "SET", "lock", "token-1", "NX", "PX", "60000"); got != "OK" {
		t.Errorf("SET NX = %q, want OK", got)
	}
	if got := mustDo(t, s.Addr(), "SET", "lock", "token-2", "NX", "PX", "60000"); got != "(nil)" {
		t.Errorf("second SET NX = %q, want (nil): the key is taken", got)
	}
	if got := mustDo(t, s.Addr(), "GET", "lock"); got != "token-1" {
		t.Errorf("GET = %q, want token-1", got)
	}
}

func TestRestartLosesKeys(t *testing.T) {
	s := redistest.ForTest(t)
	addr, pid := s.Addr(), s.Pid()
	mustDo(t, addr, "SET", "lock", "token-A", "PX", "60000")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if s.Addr() != addr {
		t.Errorf("address after restart %s, want the same %s", s.Addr(), addr)
	}
	if s.Pid() == pid || s.Pid() == 0 {
		t.Errorf("pid after restart %d, want a new running process (was %d)", s.Pid(), pid)
	}
	if got := mustDo(t, addr, "GET", "lock"); got != "(nil)" {
		t.Errorf("GET after restart = %q, want (nil): a master without persistence forgets", got)
	}
	if got := mustDo(t, addr, "DBSIZE"); got != "0" {
		t.Errorf("DBSIZE after restart = %s, want 0", got)
	}
}

func TestStopAndStart(t *testing.T) {
	s := redistest.ForTest(t)
	mustDo(t, s.Addr(), "SET", "k", "v")
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if s.Running() {
		t.Error("Running after Stop")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := redislocal.Ping(ctx, s.Addr()); err == nil {
		t.Error("a stopped server answered PING")
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if got := mustDo(t, s.Addr(), "EXISTS", "k"); got != "0" {
		t.Errorf("EXISTS k after Stop/Start = %s, want 0", got)
	}
}

func TestFiveIndependentMasters(t *testing.T) {
	servers := redistest.NForTest(t, 5)
	if len(servers) != 5 {
		t.Fatalf("got %d servers, want 5", len(servers))
	}
	var addrs []string
	for _, s := range servers {
		addrs = append(addrs, s.Addr())
		if got := mustDo(t, s.Addr(), "PING"); got != "PONG" {
			t.Errorf("%s: PING = %q", s.Addr(), got)
		}
	}
	slices.Sort(addrs)
	if len(slices.Compact(addrs)) != 5 {
		t.Errorf("addresses not distinct: %v", addrs)
	}
	// Independent masters: a key set on one is on no other.
	mustDo(t, servers[0].Addr(), "SET", "lock", "A")
	for _, s := range servers[1:] {
		if got := mustDo(t, s.Addr(), "EXISTS", "lock"); got != "0" {
			t.Errorf("%s sees a key set on %s", s.Addr(), servers[0].Addr())
		}
	}
}

func TestCloseLeavesNothing(t *testing.T) {
	for _, kill := range []bool{false, true} {
		t.Run(fmt.Sprintf("kill=%v", kill), func(t *testing.T) {
			s := redistest.ForTest(t)
			proctest.CheckCloseLeavesNothing(t, s, kill)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := s.Start(ctx); err == nil {
				t.Error("Start after Close succeeded")
			}
		})
	}
}

// A port taken by someone else is recognised from the server's own words,
// which is what lets Start retry with a fresh one.
func TestPortTaken(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The extra --port overrides the free one on every attempt.
	s, err := redislocal.Start(ctx, redislocal.Options{Args: []string{"--port", port}})
	if err == nil {
		s.Close()
		t.Fatal("Start on a taken port succeeded")
	}
	proctest.SkipIfNotInstalled(t, err, redislocal.ErrNotInstalled)
	if !errors.Is(err, localproc.ErrPortInUse) {
		t.Errorf("Start on a taken port: %v, want ErrPortInUse", err)
	}
}

// A stopped server's port taken by another redis-server (a parallel test's
// took it between a restart's stop and start): Start must not take the
// other's PONG for its own, or the caller finds its server gone later.
func TestStartOnAPortAnotherRedisTook(t *testing.T) {
	s := redistest.ForTest(t)
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	other := exec.CommandContext(ctx, "redis-server", "--port", strconv.Itoa(s.Port()), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	if err := other.Start(); err != nil {
		t.Fatalf("another redis-server: %v", err)
	}
	t.Cleanup(func() {
		_ = other.Process.Kill()
		_ = other.Wait()
	})
	for redislocal.Ping(ctx, s.Addr()) != nil {
		if ctx.Err() != nil {
			t.Fatalf("the other redis-server never answered on %s", s.Addr())
		}
		time.Sleep(20 * time.Millisecond)
	}
	err := s.Start(ctx)
	if err == nil {
		t.Fatalf("Start succeeded while process %d serves %s; this server's own is running: %v", other.Process.Pid, s.Addr(), s.Running())
	}
	if !errors.Is(err, localproc.ErrPortInUse) {
		t.Errorf("Start on a port another redis-server took: %v, want ErrPortInUse", err)
	}
}

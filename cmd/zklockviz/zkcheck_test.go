package main

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/zookeeper/zklocal"
	"github.com/zklockviz/zklockviz/zookeeper/zklocal/zktest"
)

// closedPort is a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// silentPort accepts connections and never says a word, like a peer port
// or a proxy with nothing behind it.
func silentPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	return ln.Addr().String()
}

// An unreachable or wrong ZooKeeper: serve and sim give up within
// --zk-timeout with exit status 1, naming each address tried, what failed
// there and what to check; never go-zookeeper's StateConnecting.
func TestZKUnreachable(t *testing.T) {
	zks := sharedZK(t)
	closed, silent := closedPort(t), silentPort(t)
	admin := strings.TrimPrefix(zks.AdminURL(), "http://")
	sim := func(zk string) []string {
		return []string{"sim", "--zk", zk, "--zk-timeout", "1s", "--scenario", "lock1-5", "--sim-root", "/cli/unreachable"}
	}
	serve := func(zk string, more ...string) []string {
		return append([]string{"serve", "--zk", zk, "--zk-timeout", "1s", "--addr", "127.0.0.1:0"}, more...)
	}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"serve, closed port", serve(closed),
			[]string{closed + ": connection refused", "check:", "clientPort in zoo.cfg"}},
		{"sim, closed port", sim(closed),
			[]string{closed + ": connection refused", "clientPort in zoo.cfg"}},
		{"serve, silent port", serve(silent),
			[]string{silent + ": connected, but no answer to the ZooKeeper handshake within 1s", "not a peer, election or AdminServer port"}},
		{"sim, silent port", sim(silent),
			[]string{silent + ": connected, but no answer to the ZooKeeper handshake within 1s"}},
		{"serve, every member listed fails", serve(closed + "," + silent),
			[]string{"tried " + closed + ", " + silent, closed + ": connection refused", silent + ": connected, but no answer"}},
		{"serve, the AdminServer's port", serve(admin),
			[]string{admin + ": answered, but not as ZooKeeper", "HTTP/1.1", "not its AdminServer"}},
		{"serve, an auth scheme the server has no provider for", serve(zks.Addr(), "--zk-auth", "nosuch:secret"),
			[]string{zks.Addr() + `: authentication failed: scheme "nosuch"`, "--zk-auth (or ZKLOCKVIZ_ZK_AUTH)"}},
		{"serve --zk-tls, a plain port", serve(zks.Addr(), "--zk-tls-insecure-skip-verify"),
			[]string{zks.Addr() + ": TLS handshake failed", "secureClientPort"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runBinary(t, []string{"ZKLOCKVIZ_ZK_AUTH=", "ZKLOCKVIZ_ZK_TIMEOUT="}, tc.args...)
			t.Logf("stderr:\n%s", stderr)
			if code != 1 {
				t.Errorf("exit %d, want 1\nstdout: %s\nstderr: %s", code, stdout, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			for _, bad := range []string{"StateConnecting", "panic", "listening on"} {
				if strings.Contains(stderr, bad) {
					t.Errorf("stderr has %q:\n%s", bad, stderr)
				}
			}
		})
	}
}

// --zk-timeout and its environment default are checked like any flag.
func TestZKTimeoutFlag(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"serve zero", nil, []string{"serve", "--zk", "h:1", "--zk-timeout", "0s"}, "--zk-timeout 0s: must be positive"},
		{"sim negative", nil, []string{"sim", "--zk", "h:1", "--scenario", "lock1-5", "--zk-timeout", "-1s"}, "--zk-timeout -1s: must be positive"},
		{"demo zero", nil, []string{"demo", "--zk-timeout", "0s"}, "--zk-timeout 0s: must be positive"},
		{"not a duration", nil, []string{"serve", "--zk", "h:1", "--zk-timeout", "soon"}, `invalid value "soon" for flag -zk-timeout`},
		{"environment", []string{"ZKLOCKVIZ_ZK_TIMEOUT=soon"}, []string{"serve", "--zk", "h:1"}, `ZKLOCKVIZ_ZK_TIMEOUT="soon"`},
		{"environment, demo", []string{"ZKLOCKVIZ_ZK_TIMEOUT=0s"}, []string{"demo"}, "--zk-timeout 0s: must be positive"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runBinary(t, append([]string{"ZKLOCKVIZ_ZK_TIMEOUT=", "ZKLOCKVIZ_ZK=", "ZKLOCKVIZ_ADDR="}, tc.env...), tc.args...)
			if code != 2 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, want 2 with %q:\n%s", code, tc.want, stderr)
			}
		})
	}
}

// A member down is an ensemble's normal state: serve starts on the others
// and says which one it could not reach, and why.
func TestZKOneMemberDown(t *testing.T) {
	zks := sharedZK(t)
	closed := closedPort(t)
	s := startServe(t, "--zk", zks.Addr()+","+closed, "--zk-timeout", "2s", "--addr", "127.0.0.1:0", "--log-level", "warn")
	out := s.output()
	for _, w := range []string{"ZooKeeper member not reachable", "server=" + closed, "connection refused"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

// The demo's own ZooKeeper failing to start: exit 1, the server's own
// words, and what to check. A ZOOKEEPER_HOME whose jar is not ZooKeeper
// makes a real JVM fail the way a broken installation does.
func TestDemoZooKeeperFails(t *testing.T) {
	if _, err := exec.LookPath("java"); err != nil && os.Getenv("JAVA_HOME") == "" {
		t.Skip("no java: the demo's not-installed message is covered by zklocal's TestNotInstalled")
	}
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "zookeeper-3.9.9.jar"), []byte("not a jar"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runBinary(t, []string{"ZOOKEEPER_HOME=" + home, "ZKLOCKVIZ_ADDR=", "ZKLOCKVIZ_ZK_TIMEOUT="}, "demo", "--addr", "127.0.0.1:0")
	if code != 1 {
		t.Errorf("exit %d, want 1:\n%s", code, stderr)
	}
	for _, w := range []string{"cannot start a local ZooKeeper", "exited during startup", "check: that ZOOKEEPER_HOME=" + home} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
}

// The check speaks TLS as the watcher does: a trusted server certificate
// passes, an untrusted one and a plain client on the secure port fail with
// what to check.
func TestZKCheckTLS(t *testing.T) {
	zks := zktest.ForTestWith(t, zklocal.Options{TLS: true})
	dir := t.TempDir()
	ca, wrongCA := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "wrong.pem")
	if err := os.WriteFile(ca, zks.CAPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(wrongCA, selfSigned(t), 0o644); err != nil {
		t.Fatal(err)
	}
	startServe(t, "--zk", zks.SecureAddr(), "--zk-tls-ca", ca, "--zk-timeout", "2s", "--addr", "127.0.0.1:0")

	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"untrusted certificate", []string{"--zk-tls-ca", wrongCA},
			[]string{zks.SecureAddr() + ": TLS handshake failed", "the server's certificate is not trusted", "--zk-tls-ca: it must hold the CA that signed the server's certificate"}},
		{"plain client on the secure port", nil,
			[]string{zks.SecureAddr() + ": connected, but the server closed the connection", "a secureClientPort needs --zk-tls"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"serve", "--zk", zks.SecureAddr(), "--zk-timeout", "2s", "--addr", "127.0.0.1:0"}, tc.args...)
			code, _, stderr := runBinary(t, []string{"ZKLOCKVIZ_ZK_TIMEOUT="}, args...)
			t.Logf("stderr:\n%s", stderr)
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q", w)
				}
			}
		})
	}
}

// An ensemble member that lost its quorum accepts connections and closes
// them; its four-letter words say why, and so does the check.
func TestZKCheckNoQuorum(t *testing.T) {
	e := zktest.EnsembleForTest(t, 3)
	m := e.Members()
	for _, s := range m[1:] {
		if err := s.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	// A leader notices the lost quorum a few ticks late.
	waitFor(t, "the last member to stop serving", func() bool {
		_, err := zklocal.FourLetter(context.Background(), m[0].Addr(), "srvr")
		return errors.Is(err, zklocal.ErrNotServing)
	})
	code, _, stderr := runBinary(t, []string{"ZKLOCKVIZ_ZK_TIMEOUT="}, "serve", "--zk", m[0].Addr(), "--zk-timeout", "2s", "--addr", "127.0.0.1:0")
	t.Logf("stderr:\n%s", stderr)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for _, w := range []string{m[0].Addr() + ": the server is up but not serving", "a majority of the ensemble is up"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q", w)
		}
	}
}

package main

import (
	"bufio"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/third_party/zk"
	"github.com/zklockviz/zklockviz/zookeeper/zklocal"
	"github.com/zklockviz/zklockviz/zookeeper/zklocal/zktest"
)

// serve against a ZooKeeper whose TLS port needs client certificates
// (ssl.clientAuth=need): with --zk-tls-cert/--zk-tls-key from the server's CA
// it watches a lock queue live, the watch table read over TLS too; without a
// certificate, with one from another CA, or trusting the wrong CA, it says
// which part of the TLS handshake failed and what to check.
func TestServeTLSClientAuth(t *testing.T) {
	zks := zktest.ForTestWith(t, zklocal.Options{TLSClientAuth: true})
	cert, key := zks.ClientCertFiles()
	untrustedCert, untrustedKey, err := zktest.UntrustedClientCert(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const path = "/cli/mtls"
	first := zk.NewLock(connect(t, zks.Addr()), path, zk.WorldACL(zk.PermAll))
	if err := first.Lock(); err != nil {
		t.Fatalf("first Lock: %v", err)
	}
	go zk.NewLock(connect(t, zks.Addr()), path, zk.WorldACL(zk.PermAll)).Lock() // waits; ends with its session

	t.Run("client certificate", func(t *testing.T) {
		s := startServe(t, "--zk", zks.SecureAddr(), "--zk-tls-ca", zks.CAFile(), "--zk-tls-cert", cert, "--zk-tls-key", key,
			"--addr", "127.0.0.1:0", "--watch", path, "--poll", "200ms")
		if code := getJSON(t, s.url+"/healthz", nil); code != 200 {
			t.Fatalf("GET /healthz = %d, want 200", code)
		}
		var snap lockqueue.Snapshot
		waitFor(t, "a live queue of 2 whose waiter's watch is confirmed", func() bool {
			snap = lockqueue.Snapshot{}
			return getJSON(t, s.url+"/api/v1/lock?path="+path, &snap) == 200 && snap.Live() &&
				len(snap.Nodes) == 2 && snap.Nodes[1].Edge == lockqueue.EdgeConfirmed
		})
		if snap.WatchSource != "4lw" {
			t.Errorf("watch source %q, want 4lw (over TLS, with the client certificate)", snap.WatchSource)
		}
		if err := first.Unlock(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the release to show: 1 node, holding", func() bool {
			snap = lockqueue.Snapshot{}
			return getJSON(t, s.url+"/api/v1/lock?path="+path, &snap) == 200 && snap.Live() &&
				len(snap.Nodes) == 1 && snap.Nodes[0].Holding
		})
	})

	for _, tc := range []struct {
		name string
		args []string
		want []string // all on one line of stderr, with the member's address
	}{
		{"no client certificate", []string{"--zk-tls-ca", zks.CAFile()},
			[]string{"TLS handshake", "the server requires a client certificate (ssl.clientAuth=need) and none was given", "--zk-tls-cert and --zk-tls-key"}},
		{"client certificate from another CA", []string{"--zk-tls-ca", zks.CAFile(), "--zk-tls-cert", untrustedCert, "--zk-tls-key", untrustedKey},
			[]string{"TLS handshake", "the server refused the client certificate", "--zk-tls-cert"}},
		// A certificate that did not sign the server's: any will do.
		{"wrong CA", []string{"--zk-tls-ca", untrustedCert, "--zk-tls-cert", cert, "--zk-tls-key", key},
			[]string{"TLS handshake", "the server's certificate is not trusted", "--zk-tls-ca"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--zk", zks.SecureAddr(), "--addr", "127.0.0.1:0", "--watch", path}, tc.args...)
			out := serveUntil(t, append(tc.want, zks.SecureAddr()), args...)
			if strings.Contains(out, "session established") {
				t.Errorf("a session was established:\n%s", out)
			}
		})
	}
}

// serveUntil runs `zklockviz serve args...` until a line of its stderr holds
// every one of want (or it exits), then stops it, and returns its stderr. It
// does not care whether serve keeps running while ZooKeeper is unreachable
// or gives up.
func serveUntil(t *testing.T, want []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"serve"}, args...)...)
	cmd.Env = append(os.Environ(), "ZKLOCKVIZ_TOKEN=", "ZKLOCKVIZ_ADDR=", "ZKLOCKVIZ_ZK=")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start serve: %v", err)
	}
	var (
		mu  sync.Mutex
		out strings.Builder
	)
	said := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		seen := false
		for sc.Scan() {
			mu.Lock()
			out.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if !seen && !slices.ContainsFunc(want, func(w string) bool { return !strings.Contains(sc.Text(), w) }) {
				seen = true
				close(said)
			}
		}
		cmd.Wait()
	}()
	output := func() string {
		mu.Lock()
		defer mu.Unlock()
		return out.String()
	}
	select {
	case <-said:
	case <-done:
		t.Errorf("serve exited without a line saying all of %q:\n%s", want, output())
	case <-time.After(waitTimeout):
		t.Errorf("serve printed no line saying all of %q:\n%s", want, output())
	}
	cmd.Process.Kill()
	<-done
	return output()
}

package zkwatch

import (
	"crypto/tls"
	"crypto/x509"
	"log/slog"
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

// A lock parent whose ACL lets only a digest user read it: without
// credentials the snapshot says so in Error (no crash, no empty queue shown
// as live); with them the queue is read.
func TestDigestAuth(t *testing.T) {
	s := sharedServer(t)
	c := connect(t, []string{s.Addr()}, 10*time.Second)
	if err := c.AddAuth("digest", []byte("viz:secret")); err != nil {
		t.Fatal(err)
	}
	top := fresh("/auth")
	mkdirs(t, c, top)
	path := top + "/lock"
	if _, err := c.Create(path, nil, 0, zk.DigestACL(zk.PermAll, "viz", "secret")); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := c.Create(path+"/W_", nil, zk.FlagEphemeral|zk.FlagSequence, acl); err != nil {
			t.Fatal(err)
		}
	}

	_, without := startWatcher(t, Config{Servers: []string{s.Addr()}, Paths: []string{path}})
	snap := without.wait(t, path, 0, "a not-authenticated error", func(s lockqueue.Snapshot) bool {
		return strings.Contains(s.Error, "not authenticated")
	})
	if !strings.Contains(snap.Error, "--zk-auth") || snap.Live() {
		t.Errorf("without credentials: error %q live=%t; want a not-live snapshot whose error names --zk-auth", snap.Error, snap.Live())
	}
	for _, s := range without.all(path) {
		if s.Live() && s.Exists {
			t.Errorf("without credentials a live snapshot was published: %s", describe(s))
		}
	}

	_, with := startWatcher(t, Config{Servers: []string{s.Addr()}, Paths: []string{path},
		Auth: []Auth{{Scheme: "digest", Credential: "viz:secret"}}})
	with.wait(t, path, 0, "the queue of 2, read with credentials", func(s lockqueue.Snapshot) bool {
		return s.Live() && len(s.Nodes) == 2 && s.Nodes[0].Holding
	})
}

// Credentials survive a restart of the server: go-zookeeper sends them
// again on the new connection before any read.
func TestDigestAuthAfterRestart(t *testing.T) {
	s := zktest.ForTest(t)
	c := connect(t, []string{s.Addr()}, 30*time.Second)
	if err := c.AddAuth("digest", []byte("viz:secret")); err != nil {
		t.Fatal(err)
	}
	path := "/authrestart"
	if _, err := c.Create(path, nil, 0, zk.DigestACL(zk.PermAll, "viz", "secret")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(path+"/W_", nil, zk.FlagSequence, acl); err != nil {
		t.Fatal(err)
	}
	_, rec := startWatcher(t, Config{Servers: []string{s.Addr()}, Paths: []string{path}, SessionTimeout: 30 * time.Second,
		Auth: []Auth{{Scheme: "digest", Credential: "viz:secret"}}})
	rec.wait(t, path, 0, "one node", func(s lockqueue.Snapshot) bool { return s.Live() && len(s.Nodes) == 1 })
	mark := rec.mark(path)
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, path, mark, "not live", func(s lockqueue.Snapshot) bool { return !s.Live() })
	mark = rec.mark(path)
	ctx := t.Context()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	// The test's own client redials on its own schedule: a request sent
	// before it has its session back fails with "could not connect".
	waitHasSession(t, c)
	if _, err := c.Create(path+"/W_", nil, zk.FlagSequence, acl); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, path, mark, "two nodes, read after the restart", func(s lockqueue.Snapshot) bool { return s.Live() && len(s.Nodes) == 2 })
	for _, snap := range rec.all(path)[mark:] {
		if snap.Error != "" && strings.Contains(snap.Error, "not authenticated") {
			t.Errorf("a read without credentials after the restart: %s", snap.Error)
		}
	}
}

// The watcher over TLS: its session through the TLS dialer, and the watch
// table through four-letter words on the TLS port.
func TestTLSWatcher(t *testing.T) {
	s := zktest.ForTestWith(t, zklocal.Options{TLS: true})
	path := fresh("/tls/lock")
	_, rec := startWatcher(t, Config{Servers: []string{s.SecureAddr()}, Paths: []string{path}, TLS: s.ClientTLS()})
	lockAsync(t, rec, connect(t, []string{s.Addr()}, 10*time.Second), path, 1)
	lockAsync(t, rec, connect(t, []string{s.Addr()}, 10*time.Second), path, 2)
	snap := rec.wait(t, path, 0, "queue of 2, confirmed from the watch table over TLS", queueIs(lockqueue.GoZookeeper, exclusive(2), lockqueue.EdgeConfirmed))
	if snap.WatchSource != "4lw" {
		t.Errorf("watch source %q, want 4lw over TLS", snap.WatchSource)
	}

	// Trusting no CA at all: the server's certificate cannot verify.
	badTLS(t, Config{Servers: []string{s.SecureAddr()}, Paths: []string{fresh("/tls/wrongca")},
		TLS: &tls.Config{RootCAs: x509.NewCertPool(), MinVersion: tls.VersionTLS12}},
		"TLS handshake with "+s.SecureAddr()+" failed: the server's certificate is not trusted", "check --zk-tls-ca")

	// TLS to the plain client port.
	badTLS(t, Config{Servers: []string{s.Addr()}, Paths: []string{fresh("/tls/plainport")}, TLS: s.ClientTLS()},
		"TLS handshake with "+s.Addr()+" failed: the server closed the connection during the TLS handshake", "secureClientPort")
}

// ssl.clientAuth=need, with the server's default protocol (TLS 1.2 on
// ZooKeeper 3.8) and with TLS 1.3 only, where the server refuses a client
// certificate only after the client's side of the handshake is done: with
// the CA's client certificate the queue is live; without one, or with one
// from another CA, the watcher logs what failed and nothing is live.
func TestTLSClientAuth(t *testing.T) {
	untrustedCert, untrustedKey, err := zktest.UntrustedClientCert(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	untrusted, err := tls.LoadX509KeyPair(untrustedCert, untrustedKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		extra map[string]string
	}{
		{"default protocol", nil},
		{"TLSv1.3", map[string]string{"ssl.protocol": "TLSv1.3", "ssl.enabledProtocols": "TLSv1.3",
			// ZooKeeper 3.8's default suites are TLS 1.2 ones only.
			"ssl.ciphersuites": "TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := zktest.ForTestWith(t, zklocal.Options{TLSClientAuth: true, ExtraConfig: tc.extra})
			path := fresh("/mtls/lock")
			_, rec := startWatcher(t, Config{Servers: []string{s.SecureAddr()}, Paths: []string{path}, TLS: s.ClientTLS()})
			lockAsync(t, rec, connect(t, []string{s.Addr()}, 10*time.Second), path, 1)
			lockAsync(t, rec, connect(t, []string{s.Addr()}, 10*time.Second), path, 2)
			rec.wait(t, path, 0, "queue of 2, confirmed from the watch table over TLS with a client certificate",
				queueIs(lockqueue.GoZookeeper, exclusive(2), lockqueue.EdgeConfirmed))

			noCert := s.ClientTLS()
			noCert.Certificates = nil
			badTLS(t, Config{Servers: []string{s.SecureAddr()}, Paths: []string{path}, TLS: noCert},
				"TLS handshake with "+s.SecureAddr()+" failed: the server requires a client certificate (ssl.clientAuth=need) and none was given", "check --zk-tls-cert and --zk-tls-key")

			wrongCert := s.ClientTLS()
			wrongCert.Certificates = []tls.Certificate{untrusted}
			badTLS(t, Config{Servers: []string{s.SecureAddr()}, Paths: []string{path}, TLS: wrongCert},
				"TLS handshake with "+s.SecureAddr()+" failed: the server refused the client certificate", "check --zk-tls-cert")
		})
	}
}

// badTLS starts a watcher whose TLS connection must fail: it waits for the
// warning that says why (a line with every one of want), and checks that no
// snapshot was ever shown live.
func badTLS(t *testing.T, cfg Config, want ...string) {
	t.Helper()
	logs := &logLines{t: t, added: make(chan struct{}, 1)}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	_, rec := startWatcher(t, cfg)
	logs.wait(want...)
	for _, p := range cfg.Paths {
		for _, snap := range rec.all(p) {
			if snap.Live() {
				t.Errorf("live over a failed TLS connection: %s", describe(snap))
			}
		}
	}
}

// logLines keeps a watcher's log output, for waiting on a line.
type logLines struct {
	t     testing.TB
	mu    sync.Mutex
	b     strings.Builder
	added chan struct{}
}

func (l *logLines) Write(b []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(b), "\n"))
	l.mu.Lock()
	l.b.Write(b)
	l.mu.Unlock()
	select {
	case l.added <- struct{}{}:
	default:
	}
	return len(b), nil
}

// wait returns once a line of the log holds every one of want; a liveness
// bound, not a speed assertion.
func (l *logLines) wait(want ...string) {
	l.t.Helper()
	deadline := time.After(90 * time.Second)
	for {
		l.mu.Lock()
		got := l.b.String()
		l.mu.Unlock()
		for line := range strings.Lines(got) {
			if !slices.ContainsFunc(want, func(w string) bool { return !strings.Contains(line, w) }) {
				return
			}
		}
		select {
		case <-l.added:
		case <-deadline:
			l.t.Fatalf("no line of the log says all of %q; it said:\n%s", want, got)
		}
	}
}

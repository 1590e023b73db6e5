package zkwatch

import (
	"crypto/tls"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/zklocal"
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
	s := zklocal.ForTest(t)
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
	s := zklocal.ForTestWith(t, zklocal.Options{TLS: true})
	path := fresh("/tls/lock")
	_, rec := startWatcher(t, Config{Servers: []string{s.SecureAddr()}, Paths: []string{path}, TLS: s.ClientTLS()})
	lockAsync(t, rec, connect(t, []string{s.Addr()}, 10*time.Second), path, 1)
	lockAsync(t, rec, connect(t, []string{s.Addr()}, 10*time.Second), path, 2)
	snap := rec.wait(t, path, 0, "queue of 2, confirmed from the watch table over TLS", queueIs(lockqueue.GoZookeeper, exclusive(2), lockqueue.EdgeConfirmed))
	if snap.WatchSource != "4lw" {
		t.Errorf("watch source %q, want 4lw over TLS", snap.WatchSource)
	}

	// A CA the server's certificate is not from: no session, never live.
	other := zklocal.ForTestWith(t, zklocal.Options{TLS: true})
	path2 := fresh("/tls/wrongca")
	_, bad := startWatcher(t, Config{Servers: []string{s.SecureAddr()}, Paths: []string{path2},
		TLS: &tls.Config{RootCAs: other.ClientTLS().RootCAs}})
	time.Sleep(3 * time.Second)
	for _, snap := range bad.all(path2) {
		if snap.Live() {
			t.Errorf("live over TLS with an untrusted certificate: %s", describe(snap))
		}
	}
}

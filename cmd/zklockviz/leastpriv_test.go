package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/third_party/zk"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// ZooKeeper's least privilege, as the README states it: a digest user with
// read (r) and nothing else on a lock parent and its nodes is enough for
// serve to show the queue. The application's own user owns every node; the
// world may not even read them, so without --zk-auth the lock is refused.
func TestServeZooKeeperReadOnlyACL(t *testing.T) {
	zks := sharedZK(t)
	app := connect(t, zks.Addr())
	if err := app.AddAuth("digest", []byte("app:app-pw")); err != nil {
		t.Fatal(err)
	}
	acl := append(zk.DigestACL(zk.PermAll, "app", "app-pw"), zk.DigestACL(zk.PermRead, "viz", "viz-pw")...)
	const path = "/cli/readonly-acl"
	for _, p := range []string{"/cli", path} {
		a := acl
		if p == "/cli" {
			a = zk.WorldACL(zk.PermAll)
		}
		if _, err := app.Create(p, nil, 0, a); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatalf("create %s: %v", p, err)
		}
	}
	var names []string
	for range 2 {
		n, err := app.Create(path+"/lock-", []byte("app"), zk.FlagEphemeral|zk.FlagSequence, acl)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, strings.TrimPrefix(n, path+"/"))
	}

	s := startServe(t, "--zk", zks.Addr(), "--addr", "127.0.0.1:0", "--zk-auth", "digest:viz:viz-pw", "--watch", path)
	var lock lockqueue.Snapshot
	waitFor(t, "the queue read with read-only rights", func() bool {
		// Decode each answer into a zero Snapshot: an error left out of
		// the JSON (omitempty) must not keep the last answer's.
		lock = lockqueue.Snapshot{}
		return getJSON(t, s.url+"/api/v1/lock?path="+path, &lock) == 200 && len(lock.Nodes) == 2 && lock.Error == ""
	})
	if lock.Error != "" || !lock.Nodes[0].Holding || lock.Nodes[0].Name != names[0] || lock.Nodes[1].Name != names[1] || lock.Nodes[0].Data != "app" {
		t.Errorf("read with r only: error %q, nodes %+v; want %v, the first holding, data read", lock.Error, lock.Nodes, names)
	}

	// Without the credentials the same lock is refused, and the error
	// names --zk-auth: the ACL above is really in force.
	plain := startServe(t, "--zk", zks.Addr(), "--addr", "127.0.0.1:0", "--watch", path)
	waitFor(t, "the ACL's refusal", func() bool {
		lock = lockqueue.Snapshot{}
		return getJSON(t, plain.url+"/api/v1/lock?path="+path, &lock) == 200 && strings.Contains(lock.Error, "--zk-auth")
	})
}

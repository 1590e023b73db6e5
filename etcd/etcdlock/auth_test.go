package etcdlock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/zklockviz/zklockviz/etcd/etcdlocal"
	"github.com/zklockviz/zklockviz/etcd/etcdlocal/etcdtest"
	"github.com/zklockviz/zklockviz/etcd/etcdlock"
	"github.com/zklockviz/zklockviz/lockqueue"
)

// withAuth turns etcd's auth on with a root user and a "viz" user whose
// only role reads keys under /locks/: the least privilege the reader
// needs. It returns a root client.
func withAuth(t *testing.T, srv *etcdlocal.Server) *clientv3.Client {
	t.Helper()
	ctx := context.Background()
	cli := newClient(t, srv.Endpoint())
	steps := []func() error{
		func() error { _, err := cli.RoleAdd(ctx, "root"); return err },
		func() error { _, err := cli.UserAdd(ctx, "root", "rootpw"); return err },
		func() error { _, err := cli.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := cli.RoleAdd(ctx, "viz"); return err },
		func() error {
			_, err := cli.RoleGrantPermission(ctx, "viz", "/locks/", clientv3.GetPrefixRangeEnd("/locks/"), clientv3.PermissionType(clientv3.PermRead))
			return err
		},
		func() error { _, err := cli.UserAdd(ctx, "viz", "vizpw"); return err },
		func() error { _, err := cli.UserGrantRole(ctx, "viz", "viz"); return err },
		func() error { _, err := cli.AuthEnable(ctx); return err },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("auth setup step %d: %v", i, err)
		}
	}
	root, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.Endpoint()}, Username: "root", Password: "rootpw",
		DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return root
}

func TestLeastPrivilege(t *testing.T) {
	srv := etcdtest.ForTest(t)
	root := withAuth(t, srv)
	const prefix = "/locks/orders"
	a := goMutexOn(t, root, prefix, 10)
	<-a.locked
	ep := []string{srv.Endpoint()}

	t.Run("read-only user", func(t *testing.T) {
		r, f := startReader(t, etcdlock.Config{Endpoints: ep, Username: "viz", Password: "vizpw", Prefixes: []string{prefix}})
		s := f.waitFor(t, prefix, "the holder with its lease", func(s lockqueue.Snapshot) bool {
			return len(s.Nodes) == 1 && s.Nodes[0].LeaseTTLMs() > 0
		})
		if !s.Nodes[0].Holding || s.Nodes[0].Name != a.key || !s.Live() || r.Err() != nil {
			t.Errorf("as viz: %s (Err %v)", show(s), r.Err())
		}
		checkHealthy(t, s)
	})
	for _, tc := range []struct {
		name, user, password, prefix string
		want                         []string
	}{
		{"wrong password", "viz", "nope", prefix, []string{"authentication failed", "--etcd-password"}},
		{"no credentials", "", "", prefix, []string{"requires authentication", "--etcd-user"}},
		{"prefix outside the role", "viz", "vizpw", "/other/lock", []string{"permission denied reading /other/lock/", "grant-permission"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, f := startReader(t, etcdlock.Config{Endpoints: ep, Username: tc.user, Password: tc.password,
				Prefixes: []string{tc.prefix}, Timeout: 2 * time.Second})
			// The error that says why: the reader may first see gRPC's
			// connection leave Ready and say "not reachable" (one run in
			// ten here, without credentials), until the lock's own read
			// fails and says better.
			s := f.waitFor(t, tc.prefix, "the error that says why", func(s lockqueue.Snapshot) bool { return strings.Contains(s.Error, tc.want[0]) })
			for _, want := range append(tc.want, "etcd "+srv.Addr()) {
				if !strings.Contains(s.Error, want) {
					t.Errorf("error %q lacks %q", s.Error, want)
				}
			}
			if err := r.Err(); err == nil || err.Error() != s.Error {
				t.Errorf("Err = %v, want the snapshot's error", err)
			}
			if s.Live() || len(s.Nodes) != 0 {
				t.Errorf("refused, yet %s", show(s))
			}
		})
	}
}

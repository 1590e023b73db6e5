package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/zklockviz/zklockviz/third_party/zk"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/zklockviz/zklockviz/etcd/etcdlocal"
	"github.com/zklockviz/zklockviz/etcd/etcdlocal/etcdtest"
	"github.com/zklockviz/zklockviz/lockqueue"
)

func TestParseServiceLock(t *testing.T) {
	for _, tc := range []struct {
		in            string
		service, name string
	}{
		{"/locks/orders", "zookeeper", "/locks/orders"},
		{"zookeeper:/locks/orders", "zookeeper", "/locks/orders"},
		{"etcd:/locks/orders", "etcd", "/locks/orders"},
		{"etcd:mylock", "etcd", "mylock"},
		{"etcd:/a:b", "etcd", "/a:b"},
		{"redis:orders-lock", "redis", "orders-lock"},
		{"postgres:advisory/42", "postgres", "advisory/42"},
		// Text before ':' that names no service: a ZooKeeper path.
		{"/locks/a:b", "zookeeper", "/locks/a:b"},
		{"consul:/x", "zookeeper", "consul:/x"},
		// A service's name in any case.
		{"Redis:orders", "redis", "orders"},
		{"ETCD:/locks/orders", "etcd", "/locks/orders"},
	} {
		got := parseServiceLock(tc.in)
		if got.Service != tc.service || got.Name != tc.name {
			t.Errorf("parseServiceLock(%q) = %+v, want %s %q", tc.in, got, tc.service, tc.name)
		}
	}
}

// The etcd flags as serve reads them: the command line and the
// environment, good and bad.
func TestServeEtcdFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		err  string // "" when the command line is fine
		want func(serveConfig) string
	}{
		{name: "etcd alone, no --zk", args: []string{"--etcd", "http://etcd1:2379,etcd2:2380", "--watch", "etcd:/locks/orders"},
			want: func(c serveConfig) string {
				if len(c.Servers) != 0 || c.Etcd == nil || strings.Join(c.Etcd.Endpoints, ",") != "http://etcd1:2379,http://etcd2:2380" ||
					strings.Join(c.Etcd.Prefixes, ",") != "/locks/orders" || len(c.Watch) != 0 {
					return fmt.Sprintf("%+v %+v", c, c.Etcd)
				}
				return ""
			}},
		{name: "both services, locks split", args: []string{"--zk", "zk1:2181", "--etcd", "etcd1", "--watch", "/zk/a", "--watch", "etcd:/e/a", "--watch-under", "etcd:/e", "--watch-under", "/zk"},
			want: func(c serveConfig) string {
				if strings.Join(c.Watch, ",") != "/zk/a" || strings.Join(c.WatchUnder, ",") != "/zk" ||
					strings.Join(c.Etcd.Prefixes, ",") != "/e/a" || strings.Join(c.Etcd.Under, ",") != "/e" || c.Etcd.Endpoints[0] != "http://etcd1:2379" {
					return fmt.Sprintf("%+v %+v", c, c.Etcd)
				}
				return ""
			}},
		{name: "environment", args: []string{"--watch", "etcd:/x"},
			env: map[string]string{"ZKLOCKVIZ_ETCD": "etcd1:2379", "ZKLOCKVIZ_ETCD_USER": "viz", "ZKLOCKVIZ_ETCD_PASSWORD": "pw"},
			want: func(c serveConfig) string {
				if c.Etcd == nil || c.Etcd.Username != "viz" || c.Etcd.Password != "pw" {
					return fmt.Sprintf("%+v", c.Etcd)
				}
				return ""
			}},
		{name: "no service", args: nil, err: "missing --zk"},
		{name: "etcd lock without --etcd", args: []string{"--zk", "zk1:2181", "--watch", "etcd:/x"}, err: "no etcd server given: add --etcd"},
		{name: "zookeeper lock without --zk", args: []string{"--etcd", "etcd1:2379", "--watch", "/x"}, err: "need --zk"},
		{name: "sim without --zk", args: []string{"--etcd", "etcd1:2379", "--sim"}, err: "need --zk"},
		{name: "bad endpoint", args: []string{"--etcd", "ftp://etcd1:2379"}, err: "bad endpoint"},
		{name: "bad prefix", args: []string{"--etcd", "etcd1", "--watch", "etcd:/x/"}, err: "trailing /"},
		{name: "user without password", args: []string{"--etcd", "etcd1", "--etcd-user", "viz"}, err: "go together"},
		{name: "credentials without etcd", args: []string{"--zk", "zk1", "--etcd-user", "viz", "--etcd-password", "pw"}, err: "need --etcd"},
		{name: "etcd given twice", args: []string{"--etcd", "etcd1", "--etcd", "etcd2"}, err: "--etcd given 2 times"},
		{name: "environment overridden once", args: []string{"--etcd", "etcd2"}, env: map[string]string{"ZKLOCKVIZ_ETCD": "etcd1"},
			want: func(c serveConfig) string {
				if c.Etcd == nil || c.Etcd.Endpoints[0] != "http://etcd2:2379" {
					return fmt.Sprintf("%+v", c.Etcd)
				}
				return ""
			}},
		{name: "missing CA file", args: []string{"--etcd", "etcd1", "--etcd-tls-ca", "/nonexistent.pem"}, err: "--etcd-tls-ca"},
		{name: "postgres lock alone", args: []string{"--postgres", "postgres://viz@db1/app", "--watch", "postgres:advisory/42"},
			want: func(c serveConfig) string {
				if len(c.Servers) != 0 || strings.Join(c.Postgres.Watch, ",") != "advisory/42" {
					return fmt.Sprintf("%+v %+v", c.Servers, c.Postgres)
				}
				return ""
			}},
		{name: "postgres lock without --postgres", args: []string{"--zk", "zk1:2181", "--watch", "postgres:advisory/42"}, err: "no postgres server given: add --postgres"},
		{name: "postgres bad lock name", args: []string{"--postgres", "postgres://viz@db1/app", "--watch", "postgres:advisory/x"}, err: "--watch postgres:advisory/x"},
		{name: "postgres given twice", args: []string{"--postgres", "postgres://a@db1/app", "--postgres", "postgres://b@db2/app"}, err: "--postgres given 2 times"},
		{name: "zk given twice", args: []string{"--zk", "zk1:2181", "--zk", "zk2:2181"}, err: "--zk given 2 times"},
		{name: "postgres discovery", args: []string{"--postgres", "postgres://viz@db1/app", "--watch-under", "postgres:advisory", "--watch-under", "postgres:rows"},
			want: func(c serveConfig) string {
				if len(c.Servers) != 0 || strings.Join(c.Postgres.Discover, ",") != "advisory,rows" {
					return fmt.Sprintf("%+v %+v", c.Servers, c.Postgres)
				}
				return ""
			}},
		{name: "postgres discovery of nothing it knows", args: []string{"--postgres", "postgres://viz@db1/app", "--watch-under", "postgres:nope"},
			err: `--watch-under postgres:nope: invalid lock name "nope" for postgres discovery: want advisory (every advisory lock held or waited on) or rows`},
		{name: "postgres discovery of one lock", args: []string{"--postgres", "postgres://viz@db1/app", "--watch-under", "postgres:advisory/42"}, err: "want advisory"},
		{name: "postgres discovery without --postgres", args: []string{"--zk", "zk1:2181", "--watch-under", "postgres:advisory"}, err: "--watch-under postgres:advisory: no postgres server given: add --postgres"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMain(io.Discard, io.Discard)
			m.Getenv = func(k string) string { return tc.env[k] }
			err := m.ParseFlags(tc.args)
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("ParseFlags: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("ParseFlags = %v, want an error with %q", err, tc.err)
			case tc.err == "":
				if bad := tc.want(m.Config); bad != "" {
					t.Errorf("config: %s", bad)
				}
			}
		})
	}
}

// etcdForTest is a throwaway etcd with a client of its own.
func etcdForTest(t *testing.T) (*etcdlocal.Server, *clientv3.Client) {
	t.Helper()
	return etcdForTestWith(t, etcdlocal.Options{})
}

// etcdForTestWith is etcdForTest with options; with TLS, the client
// trusts the server's CA and shows its client certificate.
func etcdForTestWith(t *testing.T, opts etcdlocal.Options) (*etcdlocal.Server, *clientv3.Client) {
	t.Helper()
	srv := etcdtest.ForTestWith(t, opts)
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.Endpoint()}, TLS: srv.ClientTLS(),
		DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return srv, cli
}

// queueMutex queues a concurrency.Mutex client on prefix with a session
// of its own and returns its key and its session (closing it releases).
func queueMutex(t *testing.T, cli *clientv3.Client, prefix string) (string, *concurrency.Session) {
	t.Helper()
	s, err := concurrency.NewSession(cli, concurrency.WithTTL(30))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go concurrency.NewMutex(s, prefix).Lock(ctx)
	return lockqueue.LeaseHex(int64(s.Lease())), s
}

// etcdLock reads an etcd lock through the API; ok false until it is read.
func etcdLock(t *testing.T, base, prefix string) (lockqueue.Snapshot, bool) {
	t.Helper()
	var s lockqueue.Snapshot
	code := getJSON(t, base+"/api/v1/lock?service=etcd&path="+url.QueryEscape(prefix), &s)
	return s, code == http.StatusOK
}

// The real binary with etcd alone (no --zk): `etcdctl lock` and Go Mutex
// contenders read back through /api/v1/lock?service=etcd and
// /api/v1/locks, a release followed.
func TestServeEtcdReadBack(t *testing.T) {
	srv, cli := etcdForTest(t)
	const prefix = "/locks/orders"
	a, aSess := queueMutex(t, cli, prefix)
	s := startServe(t, "--etcd", srv.Endpoint(), "--addr", "127.0.0.1:0", "--watch", "etcd:"+prefix, "--poll", "200ms")
	var snap lockqueue.Snapshot
	waitFor(t, "a holding", func() bool {
		var ok bool
		snap, ok = etcdLock(t, s.url, prefix)
		return ok && len(snap.Nodes) == 1 && snap.Nodes[0].Holding
	})
	etcdctl := exec.Command("etcdctl", "--endpoints", srv.Endpoint(), "lock", "--ttl=20", prefix)
	etcdctl.Env = []string{"ETCDCTL_API=3"}
	if err := etcdctl.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { etcdctl.Process.Kill(); etcdctl.Wait() })
	waitFor(t, "etcdctl queued behind a, leases read", func() bool {
		var ok bool
		snap, ok = etcdLock(t, s.url, prefix)
		return ok && len(snap.Nodes) == 2 && snap.Nodes[1].LeaseTTLMs() > 0
	})
	b := snap.Nodes[1]
	if snap.Service != "etcd" || !snap.Live() || snap.Recipe != lockqueue.EtcdMutex || len(snap.Alerts) != 0 {
		t.Errorf("snapshot: %+v", snap)
	}
	if h := snap.Nodes[0]; h.Name != a || !h.Holding || h.Client() != a || h.LeaseTTLMs() != 30_000 {
		t.Errorf("holder: %+v", h)
	}
	if b.Holding || b.WaitsFor != a || b.WaitsForSource() != lockqueue.ByRule || b.LeaseTTLMs() != 20_000 || b.Order() <= snap.Nodes[0].Order() {
		t.Errorf("waiter: %+v", b)
	}
	var locks struct {
		Locks []struct {
			Service, Path string
			Holders       []string
			Waiters       []string
		}
	}
	getJSON(t, s.url+"/api/v1/locks", &locks)
	if len(locks.Locks) != 1 || locks.Locks[0].Service != "etcd" || locks.Locks[0].Path != prefix ||
		strings.Join(locks.Locks[0].Holders, ",") != a || strings.Join(locks.Locks[0].Waiters, ",") != b.Name {
		t.Errorf("/api/v1/locks: %+v", locks)
	}
	if err := aSess.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "etcdctl holding after a's release", func() bool {
		snap, _ = etcdLock(t, s.url, prefix)
		return len(snap.Nodes) == 1 && snap.Nodes[0].Name == b.Name && snap.Nodes[0].Holding
	})
	// An etcd lock added at run time, and one asked of a server without
	// a ZooKeeper reader.
	for _, tc := range []struct {
		body string
		code int
	}{
		{`{"service":"etcd","path":"/locks/later"}`, http.StatusOK},
		{`{"service":"etcd","path":"/locks/later/"}`, http.StatusBadRequest},
		{`{"path":"/zk/lock"}`, http.StatusServiceUnavailable},
	} {
		resp, err := http.Post(s.url+"/api/v1/watch", "application/json", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("POST /api/v1/watch %s = %d, want %d", tc.body, resp.StatusCode, tc.code)
		}
	}
	waitFor(t, "/locks/later read", func() bool {
		later, ok := etcdLock(t, s.url, "/locks/later")
		return ok && later.Live() && len(later.Nodes) == 0
	})
	// A plain path is still ZooKeeper's, which this server does not watch.
	if code := getJSON(t, s.url+"/api/v1/lock?path="+prefix, nil); code != http.StatusNotFound {
		t.Errorf("GET /api/v1/lock?path=%s (ZooKeeper): %d, want 404", prefix, code)
	}
}

// etcdMetric reads one metric (summed over its labels that match label)
// off etcd's /metrics.
func etcdMetric(t testing.TB, srv *etcdlocal.Server, name, label string) float64 {
	t.Helper()
	resp, err := http.Get(srv.Endpoint() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sum float64
	found := false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) || (label != "" && !strings.Contains(line, label)) {
			continue
		}
		if rest := line[len(name):]; rest[0] != ' ' && rest[0] != '{' {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		sum, found = sum+v, true
	}
	if !found {
		t.Fatalf("etcd's /metrics has no %s{%s}", name, label)
	}
	return sum
}

// One upstream watch per lock however many browsers look: 1 viewer, then
// 100 viewers of the same lock's websocket, and etcd counts the same
// watchers and no more reads than the viewers' arrival costs (none).
func TestEtcdViewersShareOneWatch(t *testing.T) {
	srv, cli := etcdForTest(t)
	const prefix = "/locks/shared"
	queueMutex(t, cli, prefix)
	s := startServe(t, "--etcd", srv.Endpoint(), "--addr", "127.0.0.1:0", "--watch", "etcd:"+prefix)
	waitFor(t, "the lock read", func() bool {
		snap, ok := etcdLock(t, s.url, prefix)
		return ok && len(snap.Nodes) == 1
	})
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	dial := func() {
		t.Helper()
		c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.url, "http")+"/ws?service=etcd&path="+url.QueryEscape(prefix), nil)
		if err != nil {
			t.Fatalf("dial /ws: %v", err)
		}
		t.Cleanup(func() { c.CloseNow() })
		c.SetReadLimit(16 << 20)
		if _, _, err := c.Read(ctx); err != nil { // its first snapshot
			t.Fatalf("read /ws: %v", err)
		}
	}
	dial()
	watchers := etcdMetric(t, srv, "etcd_debugging_mvcc_watcher_total", "")
	ranges := etcdMetric(t, srv, "grpc_server_started_total", `grpc_method="Range"`)
	for range 99 {
		dial()
	}
	if w := etcdMetric(t, srv, "etcd_debugging_mvcc_watcher_total", ""); w != watchers {
		t.Errorf("etcd watchers: %v with 1 viewer, %v with 100", watchers, w)
	}
	if r := etcdMetric(t, srv, "grpc_server_started_total", `grpc_method="Range"`); r != ranges {
		t.Errorf("etcd range reads went from %v to %v as 99 viewers joined", ranges, r)
	}
	t.Logf("etcd watchers with 1 viewer and with 100: %v", watchers)
}

// etcd that cannot be used, unreachable or refusing the password: serve
// still starts, the ZooKeeper side keeps working, and the etcd lock and
// the log say etcd, the address and what to check.
func TestServeEtcdBadConnection(t *testing.T) {
	zks := sharedZK(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nowhere := ln.Addr().String()
	ln.Close()
	authed := etcdtest.ForTest(t)
	for _, args := range [][]string{{"user", "add", "root:rootpw"}, {"auth", "enable"}} {
		cmd := exec.Command("etcdctl", append([]string{"--endpoints", authed.Endpoint()}, args...)...)
		cmd.Env = []string{"ETCDCTL_API=3"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("etcdctl %v: %v\n%s", args, err, out)
		}
	}
	for i, tc := range []struct {
		name, addr string
		args       []string
		want       []string
	}{
		{"unreachable", nowhere, nil, []string{"not reachable", "check that etcd is up"}},
		{"wrong password", authed.Addr(), []string{"--etcd-user", "root", "--etcd-password", "wrong"},
			[]string{"authentication failed", "check --etcd-user and --etcd-password"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			zkPath := fmt.Sprintf("/cli-etcd-bad-%d", i)
			conn := connect(t, zks.Addr())
			if _, err := conn.Create(zkPath, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { conn.Delete(zkPath, -1) })
			s := startServe(t, append([]string{"--zk", zks.Addr(), "--etcd", "http://" + tc.addr, "--addr", "127.0.0.1:0",
				"--watch", zkPath, "--watch", "etcd:/locks/orders"}, tc.args...)...)
			var snap lockqueue.Snapshot
			waitFor(t, "the etcd lock's error", func() bool {
				var ok bool
				snap, ok = etcdLock(t, s.url, "/locks/orders")
				return ok && snap.Error != ""
			})
			wants := append(tc.want, "etcd "+tc.addr)
			for _, want := range wants {
				if !strings.Contains(snap.Error, want) {
					t.Errorf("error %q lacks %q", snap.Error, want)
				}
			}
			// The lock's error is set before the line reaches the log, so
			// wait for the line rather than read the log once.
			waitFor(t, "the log to say why etcd is unusable", func() bool {
				out := s.output()
				for _, want := range wants {
					if !strings.Contains(out, want) {
						return false
					}
				}
				return true
			})
			if snap.Connection == lockqueue.Connected {
				t.Errorf("etcd shown connected: %+v", snap)
			}
			var zkSnap lockqueue.Snapshot
			// Its session may still be opening; what matters is that it
			// goes live while etcd stays unusable.
			live := false
			deadline := time.Now().Add(waitTimeout)
			for !live && time.Now().Before(deadline) {
				live = getJSON(t, s.url+"/api/v1/lock?path="+zkPath, &zkSnap) == http.StatusOK && zkSnap.Live()
				if !live {
					time.Sleep(50 * time.Millisecond)
				}
			}
			if !live {
				t.Errorf("ZooKeeper side with etcd unusable never went live: %+v", zkSnap)
			}
		})
	}
}

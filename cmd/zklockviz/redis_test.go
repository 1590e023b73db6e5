package main

import (
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/redis/redislocal/redistest"
)

// redisCLI runs redis-cli, a third-party client, against addr.
func redisCLI(t *testing.T, addr string, args ...string) {
	t.Helper()
	host, port, _ := strings.Cut(addr, ":")
	if out, err := exec.Command("redis-cli", append([]string{"-h", host, "-p", port}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli %v: %v\n%s", args, err, out)
	}
}

// watchRedis asks serve to follow a Redis lock, as the dashboard does.
func watchRedis(t *testing.T, s *server, name string) {
	t.Helper()
	resp, err := http.Post(s.url+"/api/v1/watch", "application/json",
		strings.NewReader(`{"service":"redis","path":"`+name+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 {
		t.Fatalf("POST /api/v1/watch redis %s = %d %s", name, resp.StatusCode, b)
	}
}

// redisLock waits until serve's API shows the Redis lock name as ok wants.
func redisLock(t *testing.T, s *server, name, what string, ok func(lockqueue.Snapshot) bool) lockqueue.Snapshot {
	t.Helper()
	var snap lockqueue.Snapshot
	waitFor(t, what, func() bool {
		snap = lockqueue.Snapshot{}
		return getJSON(t, s.url+"/api/v1/lock?service=redis&path="+name, &snap) == 200 && ok(snap)
	})
	return snap
}

// serve with three Redis masters beside ZooKeeper: a redis-cli holder on
// two of them holds the Redlock, read back through the HTTP API with its
// per-master breakdown; its release, and a lock that does not exist, show
// as free.
func TestServeRedis(t *testing.T) {
	zks := sharedZK(t)
	masters := redistest.NForTest(t, 3)
	s := startServe(t, "--zk", zks.Addr(), "--addr", "127.0.0.1:0", "--poll", "200ms",
		"--redis", masters[0].Addr(), "--redis", masters[1].Addr()+","+masters[2].Addr())
	for _, m := range masters[:2] {
		redisCLI(t, m.Addr(), "SET", "orders-lock", "tok-A", "NX", "PX", "600000")
	}
	watchRedis(t, s, "orders-lock")
	watchRedis(t, s, "no-such-lock")

	snap := redisLock(t, s, "orders-lock", "tok-A holding 2 of 3", func(s lockqueue.Snapshot) bool {
		return s.Live() && len(s.Holders()) == 1 && s.Nodes[0].Client() == "tok-A"
	})
	n := snap.Nodes[0]
	if snap.Service != "redis" || snap.Recipe != "redlock" || !strings.Contains(n.Data, "holds 2 of 3 masters") ||
		!strings.Contains(n.Data, masters[2].Addr()+": free") || n.LeaseLeftMs() <= 0 || len(snap.Alerts) != 0 {
		t.Errorf("service %q recipe %q data %q left %d alerts %v", snap.Service, snap.Recipe, n.Data, n.LeaseLeftMs(), snap.Alerts)
	}
	redisLock(t, s, "no-such-lock", "a lock that does not exist, free", func(s lockqueue.Snapshot) bool {
		return s.Live() && !s.Exists && len(s.Nodes) == 0 && s.Error == ""
	})

	for _, m := range masters[:2] {
		redisCLI(t, m.Addr(), "DEL", "orders-lock")
	}
	redisLock(t, s, "orders-lock", "free after the release", func(s lockqueue.Snapshot) bool {
		return s.Live() && !s.Exists && len(s.Nodes) == 0
	})

	var locks struct {
		Locks []struct{ Service, Path string }
	}
	if code := getJSON(t, s.url+"/api/v1/locks", &locks); code != 200 {
		t.Fatalf("GET /api/v1/locks = %d", code)
	}
	var listed []string
	for _, l := range locks.Locks {
		listed = append(listed, l.Service+":"+l.Path)
	}
	for _, want := range []string{"redis:orders-lock", "redis:no-such-lock"} {
		if !slices.Contains(listed, want) {
			t.Errorf("GET /api/v1/locks lists %v, lacking %s", listed, want)
		}
	}
}

// serve with Redis alone (no --zk), its lock named on the command line.
func TestServeRedisAlone(t *testing.T) {
	m := redistest.ForTest(t)
	redisCLI(t, m.Addr(), "SET", "billing-lock", "tok-B", "NX", "PX", "600000")
	s := startServe(t, "--addr", "127.0.0.1:0", "--poll", "200ms", "--redis", m.Addr(), "--watch", "redis:billing-lock")
	snap := redisLock(t, s, "billing-lock", "tok-B holding", func(s lockqueue.Snapshot) bool {
		return s.Live() && len(s.Holders()) == 1 && s.Nodes[0].Client() == "tok-B"
	})
	if snap.Recipe != "redis-set-nx" || len(snap.Alerts) != 0 {
		t.Errorf("recipe %q alerts %v", snap.Recipe, snap.Alerts)
	}
}

// The lock page says what Redis cannot show, and counts Redisson's
// waiters without names: a Redisson-shaped hash, and a redis-cli
// process subscribed to its unlock channel as a Redisson waiter is.
func TestServeRedisLockPage(t *testing.T) {
	m := redistest.ForTest(t)
	redisCLI(t, m.Addr(), "HSET", "inventory", "8c1e6f4a:57", "2")
	redisCLI(t, m.Addr(), "PEXPIRE", "inventory", "600000")
	host, port, _ := strings.Cut(m.Addr(), ":")
	waiter := exec.Command("redis-cli", "-h", host, "-p", port, "SUBSCRIBE", "redisson_lock__channel:{inventory}")
	if err := waiter.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { waiter.Process.Kill(); waiter.Wait() })
	s := startServe(t, "--addr", "127.0.0.1:0", "--poll", "200ms", "--redis", m.Addr(), "--watch", "redis:inventory")
	redisLock(t, s, "inventory", "the owner holding, one waiting client", func(s lockqueue.Snapshot) bool {
		return s.Live() && len(s.Holders()) == 1 && s.AnonymousWaiters == 1
	})
	resp, err := http.Get(s.url + "/lock?service=redis&path=inventory")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	page, _ := io.ReadAll(resp.Body)
	for _, want := range []string{`data-stat="note"`, "cannot be named or ordered", "more waiting, unnamed", "thread 57, reentrancy 2"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the lock page lacks %q", want)
		}
	}
}

// A wrong Redis password is named in serve's log and on the lock, with
// the master's address and what to check, while ZooKeeper keeps serving.
func TestServeRedisWrongPassword(t *testing.T) {
	zks := sharedZK(t)
	m := redistest.ForTest(t)
	redisCLI(t, m.Addr(), "ACL", "SETUSER", "viewer", "on", ">right", "~*", "-@all", "+ping", "+type", "+pttl", "+get")
	s := startServe(t, "--zk", zks.Addr(), "--addr", "127.0.0.1:0", "--poll", "200ms",
		"--redis", m.Addr(), "--redis-user", "viewer", "--redis-password", "pw-0xdeadbeef")
	watchRedis(t, s, "orders-lock")
	want := []string{"redis " + m.Addr(), "WRONGPASS", "--redis-password"}
	snap := redisLock(t, s, "orders-lock", "the lock's error", func(s lockqueue.Snapshot) bool { return s.Error != "" })
	waitFor(t, "the log line naming the problem", func() bool {
		return slices.ContainsFunc(strings.Split(s.output(), "\n"), func(line string) bool {
			return !slices.ContainsFunc(want, func(w string) bool { return !strings.Contains(line, w) })
		})
	})
	for _, w := range want {
		if !strings.Contains(snap.Error, w) {
			t.Errorf("lock error %q lacks %q", snap.Error, w)
		}
	}
	if strings.Contains(s.output(), "pw-0xdeadbeef") {
		t.Errorf("the password is in the log:\n%s", s.output())
	}
	if code := getJSON(t, s.url+"/healthz", nil); code != 200 {
		t.Errorf("GET /healthz = %d while Redis refuses the password", code)
	}
}

func TestRedisFlags(t *testing.T) {
	clean := []string{"ZKLOCKVIZ_ZK=", "ZKLOCKVIZ_ADDR=", "ZKLOCKVIZ_TOKEN=", "ZKLOCKVIZ_REDIS=", "ZKLOCKVIZ_REDIS_USER=", "ZKLOCKVIZ_REDIS_PASSWORD="}
	for _, tc := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"bad address", []string{"--redis", "r1:x"}, `--redis "r1:x": want HOST:PORT`},
		{"empty address", []string{"--redis", "r1:6379,"}, `--redis "": want HOST:PORT`},
		{"a master twice", []string{"--redis", "r1:6379", "--redis", "r2:6379,r1"}, "--redis r1:6379 given twice"},
		{"credentials without --redis", []string{"--redis-password", "p"}, "need --redis HOST:PORT"},
		{"TLS without --redis", []string{"--redis-tls"}, "need --redis HOST:PORT"},
		{"user without password", []string{"--redis", "r1", "--redis-user", "viewer"}, "--redis-user viewer needs --redis-password"},
		{"cert without key", []string{"--redis", "r1", "--redis-tls-cert", "c.pem"}, "--redis-tls-cert and --redis-tls-key go together"},
		{"a Redis lock without --redis", []string{"--watch", "redis:orders"}, "--watch redis:orders: no redis server given: add --redis"},
		{"a bad Redis lock name", []string{"--redis", "r1", "--watch", "redis:a b"}, "--watch redis:a b: invalid lock name"},
		{"--watch-under an empty Redis pattern", []string{"--redis", "r1", "--watch-under", "redis:"}, "--watch-under redis:: invalid lock name: a key pattern cannot be empty"},
		{"--watch-under a Redis pattern without --redis", []string{"--watch-under", "redis:lock:*"}, "--watch-under redis:lock:*: no redis server given: add --redis"},
		{"a SCAN COUNT of nothing", []string{"--redis", "r1", "--watch-under", "redis:lock:*", "--redis-scan-count", "0"}, "--redis-scan-count 0: want a positive SCAN COUNT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runBinary(t, clean, append([]string{"serve", "--zk", "h:1"}, tc.args...)...)
			if code != 2 || !strings.Contains(stderr, tc.stderr) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, tc.stderr)
			}
		})
	}

	// The environment's masters are a default the command line replaces.
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"e1:6379", "e2:6380"}},
		{[]string{"--redis", "c1:6379"}, []string{"c1:6379"}},
	} {
		m := NewMain(io.Discard, io.Discard)
		m.Getenv = func(k string) string {
			return map[string]string{"ZKLOCKVIZ_REDIS": "e1,e2:6380", "ZKLOCKVIZ_REDIS_PASSWORD": "from-env"}[k]
		}
		if err := m.ParseFlags(append([]string{"--zk", "h:1"}, tc.args...)); err != nil {
			t.Fatal(err)
		}
		if got := m.Config.Redis.addrs(); !slices.Equal(got, tc.want) || m.Config.Redis.Password != "from-env" {
			t.Errorf("%v with ZKLOCKVIZ_REDIS=e1,e2:6380: masters %v password %q, want %v from-env", tc.args, got, m.Config.Redis.Password, tc.want)
		}
	}
}

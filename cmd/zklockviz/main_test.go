package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/third_party/zk"
	"github.com/zklockviz/zklockviz/web"
	"github.com/zklockviz/zklockviz/web/wiretest"
	"github.com/zklockviz/zklockviz/zookeeper/zklocal"
)

// waitTimeout bounds every wait for a state: a liveness bound for a loaded
// 2-core box, not a speed assertion.
const waitTimeout = 90 * time.Second

var (
	binary string // the zklockviz binary under test

	zkOnce sync.Once
	zkSrv  *zklocal.Server
	zkErr  error
)

func TestMain(m *testing.M) {
	if os.Getenv(naiveProcessEnv) != "" {
		// The naive broadcaster's own process (TestNaiveProcess): no
		// binary to build.
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "zklockviz-cli-*")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "zklockviz")
	// serve records history by default under $XDG_STATE_HOME: not the
	// home directory of whoever runs the tests.
	os.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build zklockviz:", err)
		os.Exit(1)
	}
	code := m.Run()
	if zkSrv != nil {
		if err := zkSrv.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "close ZooKeeper:", err)
		}
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// sharedZK is the one ZooKeeper every test here uses, each on its own paths.
// Missing ZooKeeper skips, or fails under CI=true.
func sharedZK(t testing.TB) *zklocal.Server {
	t.Helper()
	zkOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		zkSrv, zkErr = zklocal.Start(ctx, zklocal.Options{})
	})
	if errors.Is(zkErr, zklocal.ErrNotInstalled) {
		msg := fmt.Sprintf("ZooKeeper is not installed (apt-get install zookeeper): %v", zkErr)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if zkErr != nil {
		t.Fatalf("start ZooKeeper: %v", zkErr)
	}
	return zkSrv
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

func connect(t testing.TB, addr string) *zk.Conn {
	t.Helper()
	c, _, err := zk.Connect([]string{addr}, 4*time.Second, zk.WithLogger(quiet{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatalf("connect to ZooKeeper: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// runBinary runs zklockviz to completion.
func runBinary(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatalf("run zklockviz %v: %v", args, err)
	}
	return code, out.String(), errb.String()
}

func TestCommandLine(t *testing.T) {
	clean := []string{"ZKLOCKVIZ_ZK=", "ZKLOCKVIZ_ADDR=", "ZKLOCKVIZ_TOKEN="}
	tests := []struct {
		name   string
		env    []string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"no command", nil, nil, 2, "", "Usage:"},
		{"unknown command", nil, []string{"frobnicate"}, 2, "", `unknown command "frobnicate"`},
		{"help", nil, []string{"help"}, 0, "zklockviz demo", ""},
		{"--help", nil, []string{"--help"}, 0, "Usage:", ""},
		{"help serve tells what to whitelist", nil, []string{"help", "serve"}, 0, "4lw.commands.whitelist=wchp,wchc,cons,dump,mntr,ruok,srvr", ""},
		{"serve --help", nil, []string{"serve", "--help"}, 0, "--zk-admin URL", ""},
		{"demo --help", nil, []string{"demo", "-h"}, 0, "apt-get install zookeeper", ""},
		{"help unknown", nil, []string{"help", "nope"}, 2, "", `unknown command "nope"`},
		{"version", nil, []string{"version"}, 0, "zklockviz ", ""},
		{"serve without --zk", nil, []string{"serve"}, 2, "", "missing --zk"},
		{"unknown flag", nil, []string{"serve", "--zk", "h:1", "--bogus"}, 2, "", "flag provided but not defined: -bogus"},
		{"stray argument", nil, []string{"serve", "--zk", "h:1", "/locks"}, 2, "", `unexpected argument "/locks"`},
		{"bad server", nil, []string{"serve", "--zk", "h:x"}, 2, "", `bad server "h:x"`},
		{"empty server", nil, []string{"serve", "--zk", "h:1,,h:2"}, 2, "", "empty server"},
		{"bad chroot", nil, []string{"serve", "--zk", "h:1/a//b"}, 2, "", "--zk chroot"},
		{"relative --watch", nil, []string{"serve", "--zk", "h:1", "--watch", "locks"}, 2, "", "--watch: invalid znode path"},
		{"bad --watch-under", nil, []string{"serve", "--zk", "h:1", "--watch-under", "/a/"}, 2, "", "--watch-under: invalid znode path"},
		{"bad --leases", nil, []string{"serve", "--zk", "h:1", "--leases", "/pool"}, 2, "", "want /path=N"},
		{"zero --leases", nil, []string{"serve", "--zk", "h:1", "--leases", "/pool=0"}, 2, "", "want /path=N"},
		{"bad --zk-admin", nil, []string{"serve", "--zk", "h:1", "--zk-admin", "zk1:8080"}, 2, "", "want an AdminServer base URL"},
		{"bad --poll", nil, []string{"serve", "--zk", "h:1", "--poll", "-1s"}, 2, "", "--poll -1s: must be positive"},
		{"bad --log-level", nil, []string{"serve", "--zk", "h:1", "--log-level", "loud"}, 2, "", `--log-level "loud"`},
		{"bad --sim-root", nil, []string{"serve", "--zk", "h:1", "--sim-root", "/"}, 2, "", "--sim-root"},
		// The simulator's own rule, at flag time: not "simulator: simulator: ..." at startup.
		{"--sim-root under /zookeeper", nil, []string{"serve", "--zk", "h:1", "--sim", "--sim-root", "/zookeeper/x"}, 2, "", `--sim-root "/zookeeper/x": /zookeeper is ZooKeeper's own`},
		{"sim --sim-root under /zookeeper", nil, []string{"sim", "--zk", "h:1", "--scenario", "lock1-5", "--sim-root", "/zookeeper/x"}, 2, "", `--sim-root "/zookeeper/x": /zookeeper is ZooKeeper's own`},
		{"sim --clients without \"*\" steps", nil, []string{"sim", "--zk", "h:1", "--scenario", "lock1-5", "--clients", "7"}, 2, "", `--clients 7: scenario lock1-5 has no steps with client "*"`},
		{"sim YAML scenario", nil, []string{"sim", "--zk", "h:1", "--scenario", "my.yaml"}, 2, "", "scenario files are JSON"},
		{"sim --format yaml", nil, []string{"sim", "--zk", "h:1", "--scenario", "lock1-5", "--format", "yaml"}, 2, "", `--format "yaml": want text, json or svg`},
		{"bad --addr", nil, []string{"serve", "--zk", "h:1", "--addr", "8080"}, 2, "", "want HOST:PORT"},
		{"public --addr without a token", nil, []string{"serve", "--zk", "h:1", "--addr", "0.0.0.0:8080"}, 2, "", "set --auth-token"},
		{"public --addr from the environment", []string{"ZKLOCKVIZ_ADDR=:8080"}, []string{"serve", "--zk", "h:1"}, 2, "", "--addr :8080 is reachable from other hosts"},
		{"bad --zk from the environment", []string{"ZKLOCKVIZ_ZK=h:1:2"}, []string{"serve"}, 2, "", `bad server "h:1:2"`},
		{"demo stray argument", nil, []string{"demo", "now"}, 2, "", `unexpected argument "now"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runBinary(t, append(clean, tc.env...), tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
			}
			if tc.stdout != "" && !strings.Contains(stdout, tc.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tc.stdout, stdout)
			}
			if tc.stderr != "" && !strings.Contains(stderr, tc.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tc.stderr, stderr)
			}
			if tc.code == 2 && tc.stderr != "" && strings.Contains(stderr, "panic") {
				t.Errorf("a usage error panicked:\n%s", stderr)
			}
		})
	}
}

// server is a running `zklockviz serve`.
type server struct {
	cmd  *exec.Cmd
	url  string
	mu   sync.Mutex
	logs strings.Builder
	done chan error
}

func (s *server) output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logs.String()
}

// startServe runs `zklockviz serve args...` and waits for its
// "listening on" line. Cleanup stops it as Ctrl-C would, unless the test
// stopped it already.
func startServe(t testing.TB, args ...string) *server {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"serve"}, args...)...)
	cmd.Env = append(os.Environ(), "ZKLOCKVIZ_TOKEN=", "ZKLOCKVIZ_ADDR=", "ZKLOCKVIZ_ZK=")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatalf("start serve: %v", err)
	}
	s := &server{cmd: cmd, done: make(chan error, 1)}
	listening := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.logs.WriteString(line + "\n")
			s.mu.Unlock()
			if u, ok := strings.CutPrefix(line, "listening on "); ok {
				listening <- u
			}
		}
		s.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Signal(os.Interrupt)
			select {
			case <-s.done:
			case <-time.After(waitTimeout):
				cmd.Process.Kill()
				<-s.done
			}
		}
		if t.Failed() {
			t.Logf("serve output:\n%s", s.output())
		}
	})
	select {
	case s.url = <-listening:
	case err := <-s.done:
		t.Fatalf("serve exited before listening: %v\n%s", err, s.output())
	case <-time.After(waitTimeout):
		t.Fatalf("serve did not print its address\n%s", s.output())
	}
	return s
}

func getJSON(t testing.TB, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode == 200 && v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("GET %s: %v\n%s", url, err, b)
		}
	}
	return resp.StatusCode
}

// waitFor polls until ok holds.
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The real binary against a real ZooKeeper and a real go-zookeeper lock
// queue: health, the lock's JSON, the live socket following a release,
// adding a watch over HTTP, and a graceful stop on SIGTERM.
func TestServe(t *testing.T) {
	zks := sharedZK(t)
	const path = "/cli/orders"

	var locks []*zk.Lock
	for i := range 3 {
		l := zk.NewLock(connect(t, zks.Addr()), path, zk.WorldACL(zk.PermAll))
		locks = append(locks, l)
		if i == 0 {
			if err := l.Lock(); err != nil {
				t.Fatalf("first Lock: %v", err)
			}
			continue
		}
		go l.Lock() // blocks until its turn; ends when its session closes
	}
	admin := connect(t, zks.Addr())
	var kids []string
	waitFor(t, "3 lock nodes", func() bool {
		kids, _, _ = admin.Children(path)
		return len(kids) == 3
	})
	byseq := func(names []string) []string {
		slices.SortFunc(names, func(a, b string) int {
			_, sa, _ := lockqueue.SplitSeq(a)
			_, sb, _ := lockqueue.SplitSeq(b)
			return int(sa - sb)
		})
		return names
	}
	kids = byseq(kids)

	s := startServe(t, "--zk", zks.Addr(), "--addr", "127.0.0.1:0", "--watch", path, "--poll", "200ms", "--log-level", "debug")

	resp, err := http.Get(s.url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET /healthz = %d, want 200", resp.StatusCode)
	}

	var snap lockqueue.Snapshot
	waitFor(t, "the queue of 3 with edges confirmed", func() bool {
		snap = lockqueue.Snapshot{}
		if getJSON(t, s.url+"/api/v1/lock?path="+path, &snap) != 200 || len(snap.Nodes) != 3 {
			return false
		}
		for _, n := range snap.Nodes[1:] {
			if n.Edge != lockqueue.EdgeConfirmed {
				return false
			}
		}
		return true
	})
	if snap.Recipe != lockqueue.GoZookeeper || snap.Connection != lockqueue.Connected || snap.WatchSource != "4lw" {
		t.Errorf("recipe %q connection %q watchSource %q, want go-zookeeper, connected, 4lw", snap.Recipe, snap.Connection, snap.WatchSource)
	}
	if h := snap.Holders(); !slices.Equal(h, kids[:1]) {
		t.Errorf("holders %v, want the first locker's node %s", h, kids[0])
	}
	if w := snap.Waiters(); !slices.Equal(w, kids[1:]) {
		t.Errorf("waiters %v, want %v", w, kids[1:])
	}
	for i, n := range snap.Nodes[1:] {
		if n.WaitsFor != kids[i] {
			t.Errorf("%s waits for %q, want its predecessor %s", n.Name, n.WaitsFor, kids[i])
		}
	}

	var list web.LocksResponse
	if code := getJSON(t, s.url+"/api/v1/locks", &list); code != 200 || len(list.Locks) != 1 || list.Locks[0].Path != path || list.Locks[0].QueueLength != 3 {
		t.Errorf("GET /api/v1/locks = %d %+v, want %s with 3 nodes", code, list, path)
	}

	// The socket follows a release: the second node becomes the holder.
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.url, "http")+"/ws?path="+path, nil)
	if err != nil {
		t.Fatalf("dial /ws: %v", err)
	}
	defer c.CloseNow()
	c.SetReadLimit(16 << 20)
	var live lockqueue.Snapshot
	read := func() {
		t.Helper()
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("read /ws: %v", err)
		}
		var f web.Frame
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatalf("decode frame: %v\n%s", err, b)
		}
		switch f.Type {
		case web.FrameSnapshot:
			live = *f.Snapshot
		case web.FrameDelta:
			if live, err = wiretest.ApplyDelta(live, b); err != nil {
				t.Fatalf("apply delta: %v", err)
			}
		default:
			t.Fatalf("frame %s", b)
		}
	}
	read()
	if h := live.Holders(); !slices.Equal(h, kids[:1]) {
		t.Fatalf("first frame holders %v, want %v", h, kids[:1])
	}
	if err := locks[0].Unlock(); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	for !slices.Equal(live.Holders(), kids[1:2]) || len(live.Nodes) != 2 {
		read()
	}

	// Adding a watch over HTTP, for a parent that does not exist yet.
	resp, err = http.Post(s.url+"/api/v1/watch", "application/json", strings.NewReader(`{"path":"/cli/later"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("POST /api/v1/watch = %d, want 200", resp.StatusCode)
	}
	waitFor(t, "/cli/later to be read", func() bool {
		var later lockqueue.Snapshot
		return getJSON(t, s.url+"/api/v1/lock?path=/cli/later", &later) == 200 && !later.Exists
	})

	// SIGTERM: the socket is told the server is going away, and the
	// process exits cleanly.
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for {
		_, _, err := c.Read(ctx)
		if err == nil {
			continue // a last update raced the signal
		}
		if st := websocket.CloseStatus(err); st != websocket.StatusGoingAway {
			t.Errorf("socket closed with %v (%v), want StatusGoingAway", st, err)
		}
		break
	}
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("serve exited with %v after SIGTERM, want status 0", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("serve did not exit after SIGTERM")
	}
}

// Main in-process on port 0, off loopback behind a token.
func TestMainWithToken(t *testing.T) {
	zks := sharedZK(t)
	var stderr syncBuffer
	m := NewMain(io.Discard, &stderr)
	m.Getenv = func(k string) string {
		return map[string]string{"ZKLOCKVIZ_ZK": zks.Addr(), "ZKLOCKVIZ_ADDR": "0.0.0.0:0", "ZKLOCKVIZ_TOKEN": "tok"}[k]
	}
	if err := m.ParseFlags([]string{"--log-level", "warn"}); err != nil {
		t.Fatalf("ParseFlags: %v", err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatalf("Run: %v", err)
	}
	defer m.Close()
	_, port, _ := strings.Cut(m.Addr(), "]:")
	if port == "" {
		_, port, _ = strings.Cut(m.Addr(), ":")
	}
	base := "http://127.0.0.1:" + port
	for _, tc := range []struct {
		path, token string
		code        int
	}{
		{"/healthz", "", 200},
		{"/api/v1/locks", "", 401},
		{"/api/v1/locks", "nope", 401},
		{"/api/v1/locks", "tok", 200},
	} {
		req, _ := http.NewRequest("GET", base+tc.path, nil)
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("GET %s with token %q = %d, want %d", tc.path, tc.token, resp.StatusCode, tc.code)
		}
	}
	if err := m.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if !strings.Contains(stderr.String(), "listening on http://") {
		t.Errorf("stderr lacks the listening line:\n%s", stderr.String())
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Ctrl-C after the ZooKeeper under the classroom went away is a clean
// shutdown: exit 0, with one warning naming the sandbox left behind and how
// to delete it, not a "simulator: simulator:" failure.
func TestServeStopsCleanlyAfterZooKeeperWentAway(t *testing.T) {
	sharedZK(t) // skips, or fails under CI, without ZooKeeper
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	zks, err := zklocal.Start(ctx, zklocal.Options{})
	if err != nil {
		t.Fatalf("start ZooKeeper: %v", err)
	}
	defer zks.Close()
	s := startServe(t, "--zk", zks.Addr(), "--sim", "--addr", "127.0.0.1:0")
	resp, err := http.Post(s.url+"/api/v1/sim/runs", "application/json", strings.NewReader(`{"scenario":"lock1-5"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("start a run: %s", resp.Status)
	}
	if err := zks.Close(); err != nil {
		t.Fatalf("stop ZooKeeper: %v", err)
	}
	s.cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-s.done:
		out := s.output()
		if err != nil || strings.Contains(out, "simulator: simulator:") || !strings.Contains(out, "sandbox is left on ZooKeeper") || !strings.Contains(out, "deleteall /zklockviz") {
			t.Errorf("serve exited with %v; want exit 0 and a warning naming the sandbox left behind\n%s", err, out)
		}
	case <-time.After(2 * waitTimeout):
		t.Fatalf("serve did not stop\n%s", s.output())
	}
}

// A port another program holds (ZooKeeper's AdminServer takes 8080 by
// default) stops serve with an error that says so and names --addr.
func TestServeAddrInUse(t *testing.T) {
	zks := sharedZK(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	code, _, stderr := runBinary(t, nil, "serve", "--zk", zks.Addr(), "--addr", ln.Addr().String(), "--history=off")
	if code != 1 || !strings.Contains(stderr, "another program listens there") || !strings.Contains(stderr, "--addr") {
		t.Errorf("serve on a port in use: exit %d, %q; want 1, saying another program listens there and naming --addr", code, stderr)
	}
}

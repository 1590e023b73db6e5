package zkwatch

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/third_party/zk"
	"github.com/zklockviz/zklockviz/zookeeper/zklocal"
)

// waitTimeout bounds every wait for a state: a liveness bound for a loaded
// 2-core box, not a speed assertion.
const waitTimeout = 90 * time.Second

var (
	sharedOnce sync.Once
	sharedSrv  *zklocal.Server
	sharedErr  error
	scratchDir string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "zkwatch-test-*")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	scratchDir = dir
	code := m.Run()
	if sharedSrv != nil {
		if err := sharedSrv.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "close shared ZooKeeper:", err)
		}
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// missing skips the test, or fails it under CI=true, when a required
// client or server is not installed.
func missing(t testing.TB, what string, err error) {
	t.Helper()
	msg := fmt.Sprintf("%s is not available: %v", what, err)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// sharedServer is the one standalone ZooKeeper every test in the package
// uses (each on its own lock paths); restart and ensemble tests start their own.
func sharedServer(t testing.TB) *zklocal.Server {
	t.Helper()
	sharedOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		sharedSrv, sharedErr = zklocal.Start(ctx, zklocal.Options{})
	})
	if sharedErr != nil {
		if errors.Is(sharedErr, zklocal.ErrNotInstalled) {
			missing(t, "ZooKeeper", sharedErr)
		}
		t.Fatalf("start shared ZooKeeper: %v", sharedErr)
	}
	return sharedSrv
}

func testLogger(t testing.TB) *slog.Logger {
	level := slog.LevelWarn
	if os.Getenv("ZKWATCH_DEBUG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: level}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// recorder keeps every published snapshot, per path.
type recorder struct {
	mu      sync.Mutex
	snaps   map[string][]lockqueue.Snapshot
	changed chan struct{}
	// forgot is, per path Config.Forget was called with, how many
	// snapshots of it had been published at each call.
	forgot map[string][]int
}

func newRecorder() *recorder {
	return &recorder{snaps: map[string][]lockqueue.Snapshot{}, changed: make(chan struct{}), forgot: map[string][]int{}}
}

func (r *recorder) forget(path string) {
	r.mu.Lock()
	r.forgot[path] = append(r.forgot[path], len(r.snaps[path]))
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
}

// forgotten waits until Forget was called with path and returns how many
// snapshots of it had been published then.
func (r *recorder) forgotten(t testing.TB, path string) int {
	t.Helper()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		f, ch := r.forgot[path], r.changed
		r.mu.Unlock()
		if len(f) > 0 {
			return f[0]
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("Forget(%s) never called", path)
		}
	}
}

func (r *recorder) publish(s lockqueue.Snapshot) {
	r.mu.Lock()
	r.snaps[s.Path] = append(r.snaps[s.Path], s)
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
}

// mark is the number of snapshots of path so far: wait from it to see only
// what is published after an action.
func (r *recorder) mark(path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.snaps[path])
}

func (r *recorder) all(path string) []lockqueue.Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]lockqueue.Snapshot(nil), r.snaps[path]...)
}

// wait returns the first snapshot of path, from index since on, that pred
// accepts; it fails the test with the last one seen when none comes.
func (r *recorder) wait(t testing.TB, path string, since int, desc string, pred func(lockqueue.Snapshot) bool) lockqueue.Snapshot {
	t.Helper()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		snaps := r.snaps[path]
		ch := r.changed
		for i := since; i < len(snaps); i++ {
			if pred(snaps[i]) {
				r.mu.Unlock()
				return snaps[i]
			}
		}
		since = max(since, len(snaps))
		last := "none"
		if len(snaps) > 0 {
			last = describe(snaps[len(snaps)-1])
		}
		r.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("%s: no snapshot of %s where %s after %v; last: %s", t.Name(), path, desc, waitTimeout, last)
		}
	}
}

// describe is a one-line summary for failure messages.
func describe(s lockqueue.Snapshot) string {
	var b strings.Builder
	fmt.Fprintf(&b, "rev=%d conn=%s exists=%t recipe=%q source=%s err=%q nodes=[", s.Revision, s.Connection, s.Exists, s.Recipe, s.WatchSource, s.Error)
	for i, n := range s.Nodes {
		if i == 12 {
			fmt.Fprintf(&b, " …%d more", len(s.Nodes)-i)
			break
		}
		state := "wait"
		if n.Holding {
			state = "HOLD"
		}
		fmt.Fprintf(&b, " %s:%s→%s(%s) watching=%v zombie=%t;", n.Name, state, n.WaitsFor, n.Edge, n.Watching, n.Zombie)
	}
	b.WriteString(" ] alerts=[")
	for _, a := range s.Alerts {
		fmt.Fprintf(&b, " %s:%v", a.Kind, a.Nodes)
	}
	b.WriteString(" ]")
	return b.String()
}

// startWatcher runs a Watcher until the test ends.
func startWatcher(t testing.TB, cfg Config) (*Watcher, *recorder) {
	t.Helper()
	rec := newRecorder()
	if cfg.Publish == nil {
		cfg.Publish = rec.publish
	}
	if cfg.Forget == nil {
		cfg.Forget = rec.forget
	}
	if cfg.SessionTimeout == 0 {
		cfg.SessionTimeout = 4 * time.Second
	}
	if cfg.Poll == 0 {
		cfg.Poll = 300 * time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = testLogger(t)
	}
	w, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	errc := make(chan error, 1)
	go func() { errc <- w.Run(context.Background()) }()
	t.Cleanup(func() {
		w.Close()
		if err := <-errc; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return w, rec
}

// connect opens a go-zookeeper session and waits until it has one.
func connect(t testing.TB, servers []string, timeout time.Duration) *zk.Conn {
	t.Helper()
	return connectVia(t, servers, timeout, nil)
}

// connectVia is connect with a host provider (nil: go-zookeeper's own).
func connectVia(t testing.TB, servers []string, timeout time.Duration, hp zk.HostProvider) *zk.Conn {
	t.Helper()
	ready := make(chan struct{})
	var once sync.Once
	cb := zk.WithEventCallback(func(ev zk.Event) {
		if ev.Type == zk.EventSession && ev.State == zk.StateHasSession {
			once.Do(func() { close(ready) })
		}
	})
	logger := zk.WithLogger(zkLogger{testLogger(t)})
	// Like the watcher's: a ZooKeeper restarting swallows connect
	// requests, and go-zookeeper alone waits ten receive timeouts (200 s
	// at 30 s) on each (handshake.go).
	dialer := zk.WithDialer(boundHandshake(net.DialTimeout, timeout*2/3))
	var conn *zk.Conn
	var err error
	if hp != nil {
		conn, _, err = zk.Connect(servers, timeout, zk.WithLogInfo(false), logger, cb, dialer, zk.WithHostProvider(hp))
	} else {
		conn, _, err = zk.Connect(servers, timeout, zk.WithLogInfo(false), logger, cb, dialer)
	}
	if err != nil {
		t.Fatalf("connect %v: %v", servers, err)
	}
	t.Cleanup(conn.Close)
	select {
	case <-ready:
	case <-time.After(waitTimeout):
		t.Fatalf("no session from %v", servers)
	}
	return conn
}

// waitHasSession waits until c has its session again, after a server
// restart.
func waitHasSession(t testing.TB, c *zk.Conn) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for c.State() != zk.StateHasSession {
		if time.Now().After(deadline) {
			t.Fatalf("the test's client has no session after %v (state %v)", waitTimeout, c.State())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var acl = zk.WorldACL(zk.PermAll)

// mkdirs creates path and its parents as persistent nodes.
func mkdirs(t testing.TB, c *zk.Conn, path string) {
	t.Helper()
	p := ""
	for _, seg := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		p += "/" + seg
		if _, err := c.Create(p, nil, 0, acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatalf("create %s: %v", p, err)
		}
	}
}

// wantNode is what a test expects of the node at one queue position.
type wantNode struct {
	holding  bool
	waitsFor int // queue index, -1 for none
}

// queueIs checks recipe, holders, waitsFor, and that every waiter's actual
// watch is confirmed, with a live connection.
func queueIs(recipe lockqueue.Recipe, want []wantNode, edge lockqueue.Edge) func(lockqueue.Snapshot) bool {
	return func(s lockqueue.Snapshot) bool {
		if !s.Live() || !s.Exists || s.Recipe != recipe || len(s.Nodes) != len(want) {
			return false
		}
		for i, w := range want {
			n := s.Nodes[i]
			if n.Holding != w.holding {
				return false
			}
			wf := ""
			if w.waitsFor >= 0 {
				wf = s.Nodes[w.waitsFor].Name
			}
			if n.WaitsFor != wf {
				return false
			}
			if !n.Holding && n.Edge != edge {
				return false
			}
		}
		return true
	}
}

func hasAlert(s lockqueue.Snapshot, kind string) bool {
	for _, a := range s.Alerts {
		if a.Kind == kind {
			return true
		}
	}
	return false
}

// clientProc is a lock client in another process (kazoo, Curator, the
// ZooKeeper recipe) that prints what it does, line by line.
type clientProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	name  string

	mu      sync.Mutex
	seen    []string
	exited  bool
	changed chan struct{}
}

func startClient(t testing.TB, name string, args ...string) *clientProc {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Stderr = testWriter{t}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	// Die with the test binary, whatever happens to it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	c := &clientProc{cmd: cmd, stdin: stdin, name: filepath.Base(name), changed: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			c.mu.Lock()
			c.seen = append(c.seen, sc.Text())
			close(c.changed)
			c.changed = make(chan struct{})
			c.mu.Unlock()
		}
		c.mu.Lock()
		c.exited = true
		close(c.changed)
		c.changed = make(chan struct{})
		c.mu.Unlock()
	}()
	t.Cleanup(func() {
		c.stdin.Close()
		done := make(chan struct{})
		go func() { c.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			c.cmd.Process.Kill()
			<-done
		}
	})
	return c
}

// expect waits until the client has printed a line starting with prefix
// (at any time: threads print in any order) and returns it.
func (c *clientProc) expect(t testing.TB, prefix string) string {
	t.Helper()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		for _, line := range c.seen {
			if strings.HasPrefix(line, "error") {
				c.mu.Unlock()
				t.Fatalf("%s: %s", c.name, line)
			}
			if strings.HasPrefix(line, prefix) {
				c.mu.Unlock()
				return line
			}
		}
		exited, ch, seen := c.exited, c.changed, strings.Join(c.seen, " | ")
		c.mu.Unlock()
		if exited {
			t.Fatalf("%s exited before printing %q; printed: %s", c.name, prefix, seen)
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("%s printed no %q line; printed: %s", c.name, prefix, seen)
		}
	}
}

func (c *clientProc) send(t testing.TB, line string) {
	t.Helper()
	if _, err := io.WriteString(c.stdin, line+"\n"); err != nil {
		t.Fatalf("%s: write %q: %v", c.name, line, err)
	}
}

// clientsDir is testdata/clients at the module root.
func clientsDir(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "testdata", "clients"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

const python = "/usr/bin/python3"

var (
	kazooOnce sync.Once
	kazooErr  error
)

// needKazoo checks that Debian's python3-kazoo is importable.
func needKazoo(t testing.TB) {
	t.Helper()
	kazooOnce.Do(func() {
		out, err := exec.Command(python, "-c", "import kazoo").CombinedOutput()
		if err != nil {
			kazooErr = fmt.Errorf("%s -c 'import kazoo': %w: %s (apt-get install python3-kazoo)", python, err, out)
		}
	})
	if kazooErr != nil {
		missing(t, "kazoo", kazooErr)
	}
}

func startKazoo(t testing.TB, servers, path string, timeout time.Duration, kinds ...string) *clientProc {
	t.Helper()
	needKazoo(t)
	args := append([]string{filepath.Join(clientsDir(t), "kazoo_lock.py"), servers, path,
		fmt.Sprintf("%.1f", timeout.Seconds())}, kinds...)
	return startClient(t, python, args...)
}

var (
	javaOnce sync.Once
	javaCP   string
	javaErr  error
)

// javaJars are the Debian jars the Java clients need: Curator, ZooKeeper's
// client and lock recipe, SLF4J with a silent binding, Guava for Curator.
var javaJars = []string{
	"curator-framework.jar", "curator-client.jar", "curator-recipes.jar",
	"zookeeper.jar", "zookeeper-jute.jar", "zookeeper-recipes-lock.jar",
	"slf4j-api.jar", "slf4j-nop.jar", "guava.jar",
}

// javaClasspath compiles testdata/clients/*.java once per test run and
// returns the classpath to run them with.
func javaClasspath(t testing.TB) string {
	t.Helper()
	javaOnce.Do(func() {
		var cp []string
		for _, j := range javaJars {
			p := filepath.Join("/usr/share/java", j)
			if _, err := os.Stat(p); err != nil {
				javaErr = fmt.Errorf("%s missing (apt-get install libcurator-recipes-java zookeeper): %w", p, err)
				return
			}
			cp = append(cp, p)
		}
		javac, err := exec.LookPath("javac")
		if err != nil {
			javaErr = fmt.Errorf("javac: %w (apt-get install default-jdk-headless)", err)
			return
		}
		out := filepath.Join(scratchDir, "classes")
		srcs, _ := filepath.Glob(filepath.Join(clientsDir(t), "*.java"))
		args := append([]string{"-d", out, "-cp", strings.Join(cp, ":")}, srcs...)
		if b, err := exec.Command(javac, args...).CombinedOutput(); err != nil {
			javaErr = fmt.Errorf("javac: %w: %s", err, b)
			return
		}
		javaCP = strings.Join(append([]string{out}, cp...), ":")
	})
	if javaErr != nil {
		missing(t, "Java lock clients", javaErr)
	}
	return javaCP
}

func startJava(t testing.TB, class string, args ...string) *clientProc {
	t.Helper()
	cp := javaClasspath(t)
	java, err := exec.LookPath("java")
	if err != nil {
		missing(t, "java", err)
	}
	all := append([]string{"-Xmx64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto",
		"-XX:-UsePerfData", "-cp", cp, class}, args...)
	return startClient(t, java, all...)
}

var pathSeq atomic.Int64

// fresh makes p unique to this call, so tests can share one server and be
// run again (-count) without meeting their own leftovers.
func fresh(p string) string { return fmt.Sprintf("/t%d%s", pathSeq.Add(1), p) }

package pglock

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/postgres/pglocal"
	"github.com/zklockviz/zklockviz/postgres/pglocal/pgtest"
)

// waitTimeout bounds every wait for a state: a liveness bound for a loaded
// 2-core box, not a speed assertion.
const waitTimeout = 90 * time.Second

// hba trusts the superuser on loopback (the tests' own sessions) and asks
// every other role for its password, so a wrong one can be refused.
const hba = `local all all trust
host all postgres 127.0.0.1/32 trust
host all all 127.0.0.1/32 scram-sha-256
`

// server starts a PostgreSQL whose deadlock check waits an hour, so a wait
// cycle lasts until the test breaks it, and whose other roles need a
// password.
func server(t testing.TB, settings map[string]string) *pglocal.Server {
	t.Helper()
	dir, err := os.MkdirTemp("", "pglock-hba-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// The postgres user reads the file.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "pg_hba.conf")
	if err := os.WriteFile(file, []byte(hba), 0o644); err != nil {
		t.Fatal(err)
	}
	s := map[string]string{"deadlock_timeout": "1h", "hba_file": file}
	for k, v := range settings {
		s[k] = v
	}
	return pgtest.ForTestWith(t, pglocal.Options{Settings: s})
}

// superuser is a connection for the test's own checks and setup.
func superuser(t testing.TB, srv *pglocal.Server) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	c, err := pgx.Connect(ctx, srv.DSN())
	if err != nil {
		t.Fatalf("connect as the superuser: %v", err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func exec1(t testing.TB, c *pgx.Conn, sql string, args ...any) {
	t.Helper()
	if _, err := c.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// psqlSession is a real psql process fed statements on its standard input,
// so a test can hold a lock open, then act, then release. It runs as the
// superuser under an application_name that finds its backend.
type psqlSession struct {
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	mu    sync.Mutex
	out   strings.Builder
	done  chan struct{}
}

func startPsql(t testing.TB, srv *pglocal.Server, name string) *psqlSession {
	t.Helper()
	bin, err := exec.LookPath("psql")
	if err != nil {
		t.Fatalf("psql (postgresql-client, pulled in by postgresql): %v", err)
	}
	u, err := url.Parse(srv.DSN())
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", name)
	u.RawQuery = q.Encode()
	p := &psqlSession{name: name, done: make(chan struct{})}
	p.cmd = exec.Command(bin, "-X", "-q", "-A", "-t", "-d", u.String())
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stderr = p.cmd.Stdout
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start psql: %v", err)
	}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.mu.Lock()
			p.out.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
		}
		p.cmd.Wait()
	}()
	t.Cleanup(p.kill)
	return p
}

// send writes statements to psql; they run as soon as it reads them.
func (p *psqlSession) send(t testing.TB, sql string) {
	t.Helper()
	if _, err := io.WriteString(p.stdin, sql+"\n"); err != nil {
		t.Fatalf("psql %s: send %q: %v", p.name, sql, err)
	}
}

func (p *psqlSession) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// quit ends psql as a user would, closing its input.
func (p *psqlSession) quit() {
	p.stdin.Close()
	<-p.done
}

// kill ends the psql process abruptly: its backend sees the connection
// drop and releases everything.
func (p *psqlSession) kill() {
	if p.cmd.Process != nil {
		p.cmd.Process.Kill()
	}
	<-p.done
}

// pidOf waits for the backend of the psql session named name.
func pidOf(t testing.TB, c *pgx.Conn, name string) int {
	t.Helper()
	var pid int
	waitUntil(t, "the backend of "+name, func() bool {
		err := c.QueryRow(context.Background(), `SELECT pid FROM pg_stat_activity WHERE application_name = $1`, name).Scan(&pid)
		return err == nil
	})
	return pid
}

// waitingOn waits until backend pid waits for a lock (any lock).
func waitingOn(t testing.TB, c *pgx.Conn, pid int) {
	t.Helper()
	waitQuery(t, c, fmt.Sprintf("pid %d to wait for a lock", pid), `SELECT count(*) > 0 FROM pg_locks WHERE pid = $1 AND NOT granted`, pid)
}

// holdsAdvisory waits until backend pid holds n advisory locks.
func holdsAdvisory(t testing.TB, c *pgx.Conn, pid, n int) {
	t.Helper()
	waitQuery(t, c, fmt.Sprintf("pid %d to hold %d advisory locks", pid, n),
		`SELECT count(*) = $2 FROM pg_locks WHERE pid = $1 AND granted AND locktype = 'advisory'`, pid, n)
}

// idleInTx waits until backend pid is idle in a transaction: its last
// statement is done. psql sends "BEGIN; SELECT …" as two statements, and
// the backend is idle in a transaction between them too: until the one
// after BEGIN is done, what it locks is not yet held (CI saw the next
// session take the row first).
func idleInTx(t testing.TB, c *pgx.Conn, pid int) {
	t.Helper()
	waitQuery(t, c, fmt.Sprintf("pid %d to be idle in a transaction", pid),
		`SELECT state = 'idle in transaction' AND query !~* '^\s*begin\s*;?\s*$' FROM pg_stat_activity WHERE pid = $1`, pid)
}

// waitQuery waits until sql, a boolean query, is true.
func waitQuery(t testing.TB, c *pgx.Conn, what, sql string, args ...any) {
	t.Helper()
	waitUntil(t, what, func() bool {
		var ok bool
		err := c.QueryRow(context.Background(), sql, args...).Scan(&ok)
		return err == nil && ok
	})
}

func waitUntil(t testing.TB, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// collector keeps the newest snapshot of each lock a Reader published.
type collector struct {
	mu     sync.Mutex
	latest map[string]lockqueue.Snapshot
	count  map[string]int
}

func newCollector() *collector {
	return &collector{latest: map[string]lockqueue.Snapshot{}, count: map[string]int{}}
}

func (c *collector) publish(s lockqueue.Snapshot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.latest[s.Path] = s
	c.count[s.Path]++
}

func (c *collector) get(name string) (lockqueue.Snapshot, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.latest[name]
	return s, ok
}

// await waits until the lock's newest snapshot satisfies ok and returns it.
func (c *collector) await(t testing.TB, name, what string, ok func(lockqueue.Snapshot) bool) lockqueue.Snapshot {
	t.Helper()
	var s lockqueue.Snapshot
	deadline := time.Now().Add(waitTimeout)
	for {
		var seen bool
		if s, seen = c.get(name); seen && ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: timed out waiting for %s; last snapshot: %+v", name, what, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startReader runs a Reader over dsn, publishing to a new collector, until
// the test ends.
func startReader(t testing.TB, cfg Config) (*Reader, *collector) {
	t.Helper()
	col := newCollector()
	cfg.Publish = col.publish
	if cfg.Poll == 0 {
		cfg.Poll = 50 * time.Millisecond
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		r.Close()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return r, col
}

// shape is what a test asserts of a queue: names in order, who holds, and
// each waiter's blockers.
type shape struct {
	order   []string
	holders []string
	blocked map[string][]string
}

func shapeOf(s lockqueue.Snapshot) shape {
	sh := shape{blocked: map[string][]string{}}
	for _, n := range s.Nodes {
		sh.order = append(sh.order, n.Name)
		if n.Holding {
			sh.holders = append(sh.holders, n.Name)
		} else {
			sh.blocked[n.Name] = n.BlockedBy()
		}
	}
	return sh
}

func (a shape) equal(b shape) bool {
	return fmt.Sprint(a.order, a.holders, a.blocked) == fmt.Sprint(b.order, b.holders, b.blocked)
}

func pids(ps ...int) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = nodeName(p)
	}
	return out
}

func alertKinds(s lockqueue.Snapshot) []string {
	var out []string
	for _, a := range s.Alerts {
		out = append(out, a.Kind)
	}
	return out
}

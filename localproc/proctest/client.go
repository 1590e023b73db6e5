package proctest

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Client is a real lock client process (kazoo, Curator) driven over its
// standard input; every line it prints is kept with when it arrived,
// which is the client's own account of when it queued, acquired, released
// or gave up.
type Client struct {
	Cmd   *exec.Cmd
	Stdin io.WriteCloser

	mu      sync.Mutex
	lines   []clientLine
	changed chan struct{}
}

type clientLine struct {
	text string
	at   time.Time
}

// StartClient runs name with args as a client that dies with the test
// process. When the test ends its standard input is closed, which tells
// the clients of testdata/clients to end their sessions and exit; one that
// has not exited 15 s later is killed.
func StartClient(t testing.TB, name string, args ...string) *Client {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	c := &Client{Cmd: cmd, Stdin: stdin, changed: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			c.mu.Lock()
			c.lines = append(c.lines, clientLine{sc.Text(), time.Now()})
			close(c.changed)
			c.changed = make(chan struct{})
			c.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	return c
}

// Expect waits up to timeout for a line starting with prefix and returns
// its words and when it came.
func (c *Client) Expect(t testing.TB, prefix string, timeout time.Duration) ([]string, time.Time) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		c.mu.Lock()
		for _, l := range c.lines {
			if strings.HasPrefix(l.text, prefix) {
				c.mu.Unlock()
				return strings.Fields(l.text), l.at
			}
		}
		ch := c.changed
		c.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			c.mu.Lock()
			defer c.mu.Unlock()
			t.Fatalf("client never printed %q; it printed %v", prefix, c.lines)
		}
	}
}

// Send writes line to the client's standard input.
func (c *Client) Send(t testing.TB, line string) {
	t.Helper()
	if _, err := io.WriteString(c.Stdin, line+"\n"); err != nil {
		t.Fatalf("send %q: %v", line, err)
	}
}

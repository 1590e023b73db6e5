package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/zklockviz/zklockviz/third_party/zk"
)

// naiveBroadcaster is BenchmarkChangeToFrame's baseline: the live view
// anyone would write first. One children watch on the parent; on every
// event it lists the children again (no data reads, no model) and writes
// the whole list, as JSON, to every socket in turn, uncompressed.
type naiveBroadcaster struct {
	url string

	mu     sync.Mutex
	conns  map[*websocket.Conn]bool
	latest []byte
}

// startNaive serves path's children on ws://.../ws from its own ZooKeeper
// session, as zklockviz has its own; probe sees each listing before it is
// sent.
func startNaive(b testing.TB, zkAddr, path string, probe *hubProbe) *naiveBroadcaster {
	b.Helper()
	n := &naiveBroadcaster{conns: map[*websocket.Conn]bool{}}
	srv := httptest.NewServer(http.HandlerFunc(n.serve))
	n.url = "ws" + srv.URL[len("http"):] + "/ws"
	c := connect(b, zkAddr)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { n.watch(ctx, c, path, probe) })
	b.Cleanup(func() {
		cancel()
		c.Close() // ends a ChildrenW in flight
		wg.Wait()
		n.mu.Lock()
		for conn := range n.conns {
			conn.CloseNow()
		}
		n.mu.Unlock()
		srv.Close()
	})
	return n
}

func (n *naiveBroadcaster) watch(ctx context.Context, c *zk.Conn, path string, probe *hubProbe) {
	for {
		children, _, ev, err := c.ChildrenW(path)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		probe.see(time.Now(), func(pre string) bool {
			return slices.ContainsFunc(children, func(c string) bool { return strings.HasPrefix(c, pre) })
		})
		msg, _ := json.Marshal(children)
		n.mu.Lock()
		n.latest = msg
		for conn := range n.conns {
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			if conn.Write(wctx, websocket.MessageText, msg) != nil {
				conn.CloseNow()
				delete(n.conns, conn)
			}
			cancel()
		}
		n.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-ev:
		}
	}
}

func (n *naiveBroadcaster) serve(w http.ResponseWriter, r *http.Request) {
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	n.mu.Lock()
	if n.latest != nil {
		conn.Write(r.Context(), websocket.MessageText, n.latest)
	}
	n.conns[conn] = true
	n.mu.Unlock()
	<-conn.CloseRead(context.Background()).Done()
	n.mu.Lock()
	delete(n.conns, conn)
	n.mu.Unlock()
}

// naiveProcessEnv, set to "ZKADDR PATH", has this test binary serve the
// naive broadcaster of PATH in a process of its own (TestNaiveProcess).
const naiveProcessEnv = "ZKLOCKVIZ_NAIVE_PROCESS"

// TestNaiveProcess is the naive broadcaster in a process of its own, for
// the race against the zklockviz binary (benchVsNaive), which starts this
// test binary so: each side is a process beside the viewers', as neither
// shares the viewers' runtime. It says its URL on stdout and serves until
// its stdin closes. Skipped otherwise.
func TestNaiveProcess(t *testing.T) {
	spec := os.Getenv(naiveProcessEnv)
	if spec == "" {
		t.Skip("the naive broadcaster's process, started by BenchmarkChangeToFrame/vs-naive-binary")
	}
	zkAddr, path, _ := strings.Cut(spec, " ")
	n := startNaive(t, zkAddr, path, &hubProbe{})
	fmt.Printf("naive listening on %s\n", n.url)
	io.Copy(io.Discard, os.Stdin)
}

// startNaiveProcess starts the naive broadcaster of path in a process of
// its own (TestNaiveProcess) and returns its socket's URL.
func startNaiveProcess(b testing.TB, zkAddr, path string) string {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestNaiveProcess$")
	cmd.Env = append(os.Environ(), naiveProcessEnv+"="+zkAddr+" "+path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatalf("start the naive broadcaster's process: %v", err)
	}
	b.Cleanup(func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			b.Logf("the naive broadcaster's process: %v", err)
		}
	})
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if u, ok := strings.CutPrefix(sc.Text(), "naive listening on "); ok {
			go io.Copy(io.Discard, stdout)
			return u
		}
	}
	b.Fatalf("the naive broadcaster's process said no URL: %v", sc.Err())
	return ""
}

// naiveShows reports whether a naive frame (a JSON list of names) lists
// name.
func naiveShows(frame []byte, name string) bool {
	return bytes.Contains(frame, []byte(strconv.Quote(name)))
}

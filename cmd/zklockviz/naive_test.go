package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/go-zookeeper/zk"
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

// naiveShows reports whether a naive frame (a JSON list of names) lists
// name.
func naiveShows(frame []byte, name string) bool {
	return bytes.Contains(frame, []byte(strconv.Quote(name)))
}

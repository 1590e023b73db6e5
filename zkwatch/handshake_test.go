package zkwatch

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// loadingMember stands in front of a real ZooKeeper the way one that is
// still loading its database does after a restart: it accepts the first
// connection and never answers it; later connections reach the server.
// left is closed when the client gives up on that first connection.
func loadingMember(t *testing.T, target string) (addr string, left <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		first := true
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			if first {
				first = false
				wg.Go(func() {
					io.Copy(io.Discard, c) // the connect request, unanswered, until the client closes
					close(gone)
				})
				continue
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			t.Cleanup(func() { s.Close() })
			wg.Go(func() { io.Copy(s, c); s.Close() })
			wg.Go(func() { io.Copy(c, s); c.Close() })
		}
	})
	return ln.Addr().String(), gone
}

// A member that takes the connection and never answers the connect request
// is given up after one receive timeout (two thirds of the session
// timeout: under 3 s here), not go-zookeeper's ten (27 s), and the next
// connection gets the session.
func TestUnansweredConnectIsGivenUp(t *testing.T) {
	s := sharedServer(t)
	addr, left := loadingMember(t, s.Addr())
	path := fresh("/handshake/lock")
	_, rec := startWatcher(t, Config{Servers: []string{addr}, Paths: []string{path}, SessionTimeout: 4 * time.Second})
	select {
	case <-left:
	case <-time.After(15 * time.Second):
		t.Fatal("the watcher still waits on the member that never answered its connect request after 15 s")
	}
	rec.wait(t, path, 0, "live", func(s lockqueue.Snapshot) bool { return s.Live() })
}

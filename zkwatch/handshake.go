package zkwatch

import (
	"encoding/binary"
	"net"
	"time"

	"github.com/zklockviz/zklockviz/third_party/zk"
)

// boundHandshake makes dial's connections give up on a member that does not
// answer the connect request within limit. go-zookeeper waits ten receive
// timeouts for that answer (67 s at a 10 s session timeout), and a
// ZooKeeper that accepts a connection while it is still loading its
// database never answers it (its worker fails on "zkDb is null" and leaves
// the socket open): after a restart the watcher sat a minute on that
// socket, showing NOT LIVE, with the server long back up. Given up, the
// connection fails and go-zookeeper tries again at once.
func boundHandshake(dial zk.Dialer, limit time.Duration) zk.Dialer {
	return func(network, addr string, timeout time.Duration) (net.Conn, error) {
		c, err := dial(network, addr, timeout)
		if err != nil {
			return nil, err
		}
		return &handshakeConn{Conn: c, limit: limit}, nil
	}
}

// handshakeConn bounds the read deadlines go-zookeeper sets until the
// connect response (a length-prefixed packet, the first thing the member
// sends) has been read whole. After it, go-zookeeper's own deadlines
// (one receive timeout per read) apply. go-zookeeper reads a connection
// from one goroutine at a time, so the fields need no lock.
type handshakeConn struct {
	net.Conn
	limit time.Duration
	hdr   [4]byte
	got   int // bytes of the connect response read so far
	done  bool
}

func (c *handshakeConn) SetReadDeadline(t time.Time) error {
	if !c.done {
		if bound := time.Now().Add(c.limit); t.IsZero() || t.After(bound) {
			t = bound
		}
	}
	return c.Conn.SetReadDeadline(t)
}

func (c *handshakeConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if !c.done && n > 0 {
		c.note(b[:n])
	}
	return n, err
}

// note counts the connect response's bytes in b.
func (c *handshakeConn) note(b []byte) {
	if c.got < len(c.hdr) {
		copy(c.hdr[c.got:], b)
	}
	c.got += len(b)
	c.done = c.got >= len(c.hdr) && c.got >= len(c.hdr)+int(binary.BigEndian.Uint32(c.hdr[:]))
}

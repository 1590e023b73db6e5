// Package proxy is a loopback TCP proxy that can cut its clients off.
//
// It lets tests and the simulator take a ZooKeeper client off the network
// without killing it: a crash is a cut that is never restored, a long GC
// pause or partition is a cut that outlasts the session timeout and is then
// restored, so the client comes back to find its session expired.
package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

const dialTimeout = 5 * time.Second

// Proxy forwards connections accepted on a loopback port to a target address.
type Proxy struct {
	target string
	ln     net.Listener
	wg     sync.WaitGroup
	// ctx is cancelled by Close so pending dials don't delay it.
	ctx    context.Context
	cancel context.CancelFunc

	// fromTarget counts the bytes the target sent through the proxy.
	fromTarget atomic.Int64

	mu      sync.Mutex
	conns   map[net.Conn]struct{} // both ends of every live pair
	cutting bool
	closed  bool
	// refused is why the proxy last closed a connection it accepted
	// without forwarding it; its client only saw EOF.
	refused error
}

// New starts a proxy on a free loopback port forwarding to target. The
// target is dialled per connection, so it need not be up yet.
func New(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("proxy: listen: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{target: target, ln: ln, ctx: ctx, cancel: cancel, conns: make(map[net.Conn]struct{})}
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

func (p *Proxy) refuse(err error) {
	p.mu.Lock()
	p.refused = err
	p.mu.Unlock()
}

// Refused is why the proxy last closed a connection it accepted without
// forwarding it (nil if it never did): the client saw only EOF.
func (p *Proxy) Refused() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refused
}

// Addr is the proxy's listening address, "127.0.0.1:PORT".
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// FromTarget is how many bytes the target has sent its clients through
// the proxy so far: what reading through it cost.
func (p *Proxy) FromTarget() int64 { return p.fromTarget.Load() }

// Target is the address connections are forwarded to.
func (p *Proxy) Target() string { return p.target }

// Cut closes every open connection and, until Restore, closes new ones as
// soon as they are accepted. Clients see their connection drop and every
// reconnect attempt fail, while the server side sees the client vanish.
func (p *Proxy) Cut() {
	p.mu.Lock()
	p.cutting = true
	conns := p.takeConns()
	p.mu.Unlock()
	slog.Debug("proxy: cut", "addr", p.Addr(), "target", p.target, "closed", len(conns)/2)
	closeAll(conns)
}

// Restore makes the proxy accept and forward connections again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	p.cutting = false
	p.mu.Unlock()
	slog.Debug("proxy: restore", "addr", p.Addr(), "target", p.target)
}

// Cutting reports whether the proxy is currently cut.
func (p *Proxy) Cutting() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cutting
}

// Close stops listening, closes every connection and waits for all of the
// proxy's goroutines to finish. It is safe to call more than once.
func (p *Proxy) Close() error {
	p.mu.Lock()
	already := p.closed
	p.closed = true
	conns := p.takeConns()
	p.mu.Unlock()
	p.cancel()
	var err error
	if !already {
		if cerr := p.ln.Close(); cerr != nil {
			err = fmt.Errorf("proxy: close listener: %w", cerr)
		}
	}
	closeAll(conns)
	p.wg.Wait()
	return err
}

// takeConns empties the connection set; p.mu must be held.
func (p *Proxy) takeConns() []net.Conn {
	conns := make([]net.Conn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	clear(p.conns)
	return conns
}

func closeAll(conns []net.Conn) {
	for _, c := range conns {
		c.Close()
	}
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	var backoff time.Duration
	for {
		client, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Most likely out of file descriptors; don't spin.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			slog.Debug("proxy: accept", "addr", p.Addr(), "err", err)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		if p.Cutting() {
			slog.Debug("proxy: refusing connection while cut", "addr", p.Addr(), "client", client.RemoteAddr())
			p.refuse(errors.New("the proxy is cut"))
			client.Close()
			continue
		}
		p.wg.Add(1)
		go p.handle(client)
	}
}

func (p *Proxy) handle(client net.Conn) {
	defer p.wg.Done()
	ctx, cancel := context.WithTimeout(p.ctx, dialTimeout)
	var d net.Dialer
	server, err := d.DialContext(ctx, "tcp", p.target)
	cancel()
	if err != nil {
		slog.Debug("proxy: dial target", "target", p.target, "err", err)
		p.refuse(fmt.Errorf("the proxy could not reach %s: %w", p.target, err))
		client.Close()
		return
	}
	// Cut or Close may have run while we were dialling; registering under
	// the lock after checking guarantees they either see this pair or we
	// see their flag.
	p.mu.Lock()
	if p.cutting || p.closed {
		p.refused = errors.New("the proxy was cut or closed while it dialled")
		p.mu.Unlock()
		client.Close()
		server.Close()
		return
	}
	p.conns[client] = struct{}{}
	p.conns[server] = struct{}{}
	p.mu.Unlock()
	slog.Debug("proxy: forwarding", "client", client.RemoteAddr(), "target", p.target)

	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn, n *atomic.Int64) {
		_, err := io.Copy(countingWriter{dst, n}, src)
		if err == nil {
			// Clean EOF: pass the half-close on so request/response
			// protocols still get their answer.
			if cw, ok := dst.(interface{ CloseWrite() error }); ok {
				cw.CloseWrite()
			}
		} else {
			// Reset or cut: tear down both directions.
			client.Close()
			server.Close()
		}
		done <- struct{}{}
	}
	var toTarget atomic.Int64 // not asked for
	go pipe(server, client, &toTarget)
	go pipe(client, server, &p.fromTarget)
	<-done
	<-done

	p.mu.Lock()
	delete(p.conns, client)
	delete(p.conns, server)
	p.mu.Unlock()
	client.Close()
	server.Close()
}

// countingWriter counts what it writes as it goes, so a count read while
// a connection is open is up to date.
type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n.Add(int64(n))
	return n, err
}

package main

// Before serve, sim or demo start work, one short ZooKeeper handshake with
// each member, done by hand, tells what is wrong in words a user can act on.
// go-zookeeper cannot: it retries forever and reports only StateConnecting,
// and from a port that answers something else (an AdminServer's HTTP) it
// takes the first four bytes as a length and allocates that much.

import (
	"context"
	"crypto/tls"
	byteorder "encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/zklockviz/zklockviz/zkwatch"
	"github.com/zklockviz/zklockviz/zkwatch/fourlw"
)

// defaultZKTimeout is --zk-timeout's default.
const defaultZKTimeout = 5 * time.Second

// zkTarget is what the connection check tries.
type zkTarget struct {
	Servers []string
	TLS     *tls.Config
	Auth    []zkwatch.Auth
	Timeout time.Duration
}

// probeKind is what stopped one member's handshake.
type probeKind int

const (
	probeOK probeKind = iota
	probeDNS
	probeRefused
	probeDialTimeout
	probeDial // any other failure to connect
	probeTLS
	probeSilent
	probeClosed
	probeNotServing
	probeNotZK
	probeAuth
)

// probeResult is how one member answered.
type probeResult struct {
	Server string
	Kind   probeKind
	Err    error
	// ClientCert: a client certificate was offered, which tells a
	// refused certificate from a missing one.
	ClientCert bool
}

// describe says what failed and what to check, for a user. A TLS failure
// is put in zkwatch's words (ExplainTLS), the ones the watcher logs, when
// they can tell which part failed; otherwise the check names every part.
func (r probeResult) describe(timeout time.Duration) (what, check string) {
	switch r.Kind {
	case probeDNS:
		return fmt.Sprintf("cannot resolve the host name: %v", r.Err), "the host names in --zk"
	case probeRefused:
		return "connection refused: nothing listens on that port",
			"that ZooKeeper runs there and --zk names its client port (clientPort in zoo.cfg, 2181 by default)"
	case probeDialTimeout:
		return fmt.Sprintf("no TCP connection within %v", timeout),
			"that the host is up and no firewall drops the packets (nc -vz HOST PORT)"
	case probeDial:
		return fmt.Sprintf("cannot connect: %v", r.Err), "the network route to the host"
	case probeTLS:
		if f := zkwatch.ExplainTLS(r.Server, r.Err, r.ClientCert); f != nil {
			// The check on the same line too: it is the line the
			// watcher logs for the same failure once running.
			return fmt.Sprintf("TLS handshake failed: %s (check %s): %v", f.What, f.Check, r.Err), f.Check
		}
		return fmt.Sprintf("TLS handshake failed: %v", r.Err),
			"with --zk-tls, that --zk names each member's secureClientPort, that --zk-tls-ca trusts the server's certificate, " +
				"and --zk-tls-cert/--zk-tls-key if the server wants a client certificate (ssl.clientAuth=need)"
	case probeSilent:
		return fmt.Sprintf("connected, but no answer to the ZooKeeper handshake within %v", timeout),
			"that the port is a ZooKeeper client port (not a peer, election or AdminServer port, nor a proxy with nothing behind it); " +
				"a secureClientPort needs --zk-tls"
	case probeClosed:
		return fmt.Sprintf("connected, but the server closed the connection during the ZooKeeper handshake (%v)", r.Err),
			"a secureClientPort needs --zk-tls; otherwise the server's log says why (maxClientCnxns reached?)"
	case probeNotServing:
		return fmt.Sprintf("the server is up but not serving: %v", r.Err),
			"that a majority of the ensemble is up, so that it has a leader (echo srvr | nc HOST PORT); a server may still be loading its data"
	case probeNotZK:
		return fmt.Sprintf("answered, but not as ZooKeeper: %v", r.Err),
			"that --zk names ZooKeeper's client port, not its AdminServer (admin.serverPort, 8080 by default) or another service"
	case probeAuth:
		return fmt.Sprintf("authentication failed: %v", r.Err),
			"--zk-auth (or ZKLOCKVIZ_ZK_AUTH): the server must have a provider for the scheme (digest always has one, " +
				"and checks a digest password only against each node's ACL)"
	}
	return "ok", ""
}

// zkUnreachableError: no member gave a session within the timeout.
type zkUnreachableError struct {
	Results []probeResult
	Timeout time.Duration
}

func (e *zkUnreachableError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "no ZooKeeper session: tried %s, each for up to %v (--zk-timeout):", serverList(e.Results), e.Timeout)
	var checks []string
	for _, r := range e.Results {
		what, check := r.describe(e.Timeout)
		fmt.Fprintf(&b, "\n  %s: %s", r.Server, what)
		if !slices.Contains(checks, check) {
			checks = append(checks, check)
		}
	}
	b.WriteString("\ncheck:")
	for _, c := range checks {
		fmt.Fprintf(&b, "\n  - %s", c)
	}
	return b.String()
}

func serverList(rs []probeResult) string {
	names := make([]string, len(rs))
	for i, r := range rs {
		names[i] = r.Server
	}
	return strings.Join(names, ", ")
}

// checkZK tries every member at once, each within t.Timeout, and returns
// their answers; the error is a *zkUnreachableError when none of them gave
// a session (and accepted the credentials).
func checkZK(ctx context.Context, t zkTarget) ([]probeResult, error) {
	ctx, cancel := context.WithTimeout(ctx, t.Timeout)
	defer cancel()
	results := make([]probeResult, len(t.Servers))
	var wg sync.WaitGroup
	for i, addr := range t.Servers {
		wg.Go(func() { results[i] = probeMember(ctx, addr, t) })
	}
	wg.Wait()
	for _, r := range results {
		if r.Kind == probeOK {
			return results, nil
		}
	}
	return results, &zkUnreachableError{Results: results, Timeout: t.Timeout}
}

// probeMember connects to one member, opens a session, sends the
// credentials and closes the session again.
func probeMember(ctx context.Context, addr string, t zkTarget) probeResult {
	r := probeResult{Server: addr, ClientCert: t.TLS != nil && (len(t.TLS.Certificates) > 0 || t.TLS.GetClientCertificate != nil)}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		r.Kind, r.Err = dialKind(err), err
		return r
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if t.TLS != nil {
		tc := tls.Client(conn, tlsFor(t.TLS, addr))
		if err := tc.HandshakeContext(ctx); err != nil {
			r.Kind, r.Err = probeTLS, err
			return r
		}
		conn = tc
	}
	r.Kind, r.Err = zkHandshake(conn, t.Auth)
	if r.Kind != probeClosed {
		return r
	}
	// A member without a quorum closes the connection; its four-letter
	// words (when whitelisted) say so.
	if _, err := fourlw.Ask(ctx, addr, "srvr", t.TLS); errors.Is(err, fourlw.ErrNotServing) {
		r.Kind, r.Err = probeNotServing, err
	} else if t.TLS != nil {
		// With TLS 1.3 a server verifies the client's certificate after
		// the client's side of the handshake is done, and may only close.
		r.Kind, r.Err = probeTLS, fmt.Errorf("the server closed the connection after the handshake (%w)", r.Err)
	}
	return r
}

// tlsFor names the server to verify as tls.Dialer would.
func tlsFor(cfg *tls.Config, addr string) *tls.Config {
	if cfg.ServerName != "" {
		return cfg
	}
	c := cfg.Clone()
	c.ServerName, _, _ = net.SplitHostPort(addr)
	return c
}

func dialKind(err error) probeKind {
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &dnsErr):
		return probeDNS
	case errors.Is(err, syscall.ECONNREFUSED):
		return probeRefused
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return probeDialTimeout
	}
	return probeDial
}

// readKind classifies a failed read of the server's answer.
func readKind(err error) probeKind {
	var op *net.OpError
	switch {
	case errors.As(err, new(notZKError)):
		return probeNotZK
	case errors.Is(err, os.ErrDeadlineExceeded):
		return probeSilent
	case errors.As(err, &op) && op.Op == "remote error":
		return probeTLS // a TLS alert, e.g. a client certificate refused after the handshake
	}
	return probeClosed
}

// The jute encoding of the few packets the check sends (ZooKeeper's
// ConnectRequest, RequestHeader, AuthPacket), big-endian.
const (
	opSetAuth      = 100
	opCloseSession = -11
	xidAuth        = -4
	errAuthFailed  = -115
	// maxAnswer is well above any reply the check reads (a connect reply
	// is 37 bytes): a larger length means the peer is not ZooKeeper.
	maxAnswer = 1024
)

func packet(fields ...any) []byte {
	b := []byte{0, 0, 0, 0}
	for _, f := range fields {
		switch v := f.(type) {
		case int32:
			b = byteorder.BigEndian.AppendUint32(b, uint32(v))
		case int64:
			b = byteorder.BigEndian.AppendUint64(b, uint64(v))
		case bool:
			b = append(b, 0)
			if v {
				b[len(b)-1] = 1
			}
		case []byte:
			b = byteorder.BigEndian.AppendUint32(b, uint32(len(v)))
			b = append(b, v...)
		}
	}
	byteorder.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// zkHandshake opens a session, sends each credential and closes the
// session, on a connection whose deadline is set.
func zkHandshake(conn net.Conn, auth []zkwatch.Auth) (probeKind, error) {
	// protocolVersion, lastZxidSeen, timeOut (ms), sessionId, passwd, readOnly
	connect := packet(int32(0), int64(0), int32(10_000), int64(0), make([]byte, 16), false)
	if _, err := conn.Write(connect); err != nil {
		return readKind(err), err
	}
	reply, err := readAnswer(conn)
	if err != nil {
		return readKind(err), err
	}
	if len(reply) < 16 {
		return probeNotZK, fmt.Errorf("a %d-byte answer to the connect request", len(reply))
	}
	if timeout := int32(byteorder.BigEndian.Uint32(reply[4:])); timeout <= 0 {
		return probeNotServing, errors.New("it refused a new session")
	}
	for _, a := range auth {
		if _, err := conn.Write(packet(int32(xidAuth), int32(opSetAuth), int32(0), []byte(a.Scheme), []byte(a.Credential))); err != nil {
			return probeAuth, fmt.Errorf("scheme %q: %w", a.Scheme, err)
		}
		reply, err := readAnswer(conn)
		if err != nil {
			return probeAuth, fmt.Errorf("scheme %q: the server closed the connection (%w)", a.Scheme, err)
		}
		// xid, zxid, err
		if len(reply) >= 16 && int32(byteorder.BigEndian.Uint32(reply[12:])) == errAuthFailed {
			return probeAuth, fmt.Errorf("scheme %q: the server answered AUTH_FAILED", a.Scheme)
		}
	}
	// Close the session now rather than leave it to expire; its answer
	// does not matter.
	if _, err := conn.Write(packet(int32(1), int32(opCloseSession))); err == nil {
		_, _ = readAnswer(conn)
	}
	return probeOK, nil
}

// readAnswer reads one length-prefixed answer; a length no ZooKeeper
// answer here has means another protocol, whose first bytes it quotes.
func readAnswer(conn net.Conn) ([]byte, error) {
	var head [4]byte
	if _, err := io.ReadFull(conn, head[:]); err != nil {
		return nil, err
	}
	n := byteorder.BigEndian.Uint32(head[:])
	if n > maxAnswer {
		more := make([]byte, 60)
		_ = conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		k, _ := conn.Read(more)
		return nil, notZKError(append(head[:], more[:k]...))
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(conn, b); err != nil {
		return nil, err
	}
	return b, nil
}

// notZKError quotes what a peer that is not ZooKeeper sent, up to its
// first line.
type notZKError []byte

func (e notZKError) Error() string {
	line, _, _ := strings.Cut(string(e), "\n")
	return fmt.Sprintf("it sent %q", strings.TrimSpace(line))
}

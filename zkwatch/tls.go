package zkwatch

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zklockviz/zklockviz/third_party/zk"
)

// tlsDialer dials members with TLS for go-zookeeper. go-zookeeper only logs
// a failed connection at debug level and retries for ever, so the dialer
// explains each failure itself (what failed, what to check) and logs it as a
// warning, once per member until that member's failure changes or a
// connection to it works.
func tlsDialer(cfg *tls.Config, log *slog.Logger) zk.Dialer {
	r := &tlsReporter{log: log, last: map[string]string{}, haveCert: len(cfg.Certificates) > 0 || cfg.GetClientCertificate != nil}
	return func(network, addr string, timeout time.Duration) (net.Conn, error) {
		d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: timeout}, Config: cfg}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, r.fail(addr, err)
		}
		return &tlsConn{Conn: c, addr: addr, r: r}, nil
	}
}

// tlsConn reports the first read's failure too: with TLS 1.3 the client's
// side of the handshake is over before the server has checked the client's
// certificate, so a refusal arrives as an alert on the first read.
type tlsConn struct {
	net.Conn
	addr string
	r    *tlsReporter
	once sync.Once
}

func (c *tlsConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.once.Do(func() {
		var op *net.OpError
		switch {
		case n > 0:
			c.r.ok(c.addr)
		case errors.As(err, &op) && op.Op == "remote error":
			err = c.r.fail(c.addr, err)
		}
	})
	return n, err
}

type tlsReporter struct {
	log      *slog.Logger
	haveCert bool

	mu   sync.Mutex
	last map[string]string // by member: the failure last logged
}

// fail explains err, logs the explanation unless it is the one last logged
// for addr, and returns it wrapping err.
func (r *tlsReporter) fail(addr string, err error) error {
	why := fmt.Errorf("TLS to %s: %w", addr, err)
	if f := ExplainTLS(addr, err, r.haveCert); f != nil {
		why = f
	}
	msg := why.Error()
	r.mu.Lock()
	repeated := r.last[addr] == msg
	r.last[addr] = msg
	r.mu.Unlock()
	if !repeated {
		r.log.Warn("ZooKeeper TLS connection failed", "server", addr, "err", msg)
	}
	return why
}

func (r *tlsReporter) ok(addr string) {
	r.mu.Lock()
	_, failed := r.last[addr]
	delete(r.last, addr)
	r.mu.Unlock()
	if failed {
		r.log.Info("ZooKeeper TLS connection works again", "server", addr)
	}
}

// TLSFailure is a failed TLS connection to a member, explained: what
// failed, in words a user can act on, and what to check.
type TLSFailure struct {
	Addr  string
	What  string // e.g. "the server requires a client certificate (ssl.clientAuth=need) and none was given"
	Check string // e.g. "--zk-tls-cert and --zk-tls-key"
	Err   error
}

func (f *TLSFailure) Error() string {
	return fmt.Sprintf("TLS handshake with %s failed: %s (check %s): %v", f.Addr, f.What, f.Check, f.Err)
}

func (f *TLSFailure) Unwrap() error { return f.Err }

// ExplainTLS explains err, from a TLS handshake with the member at addr or
// from the first read after it, or returns nil if err is not a TLS failure.
// clientCert tells whether a client certificate was offered. It is the one
// place these words live, for the watcher and for anyone checking a member
// before it.
func ExplainTLS(addr string, err error, clientCert bool) *TLSFailure {
	f := &TLSFailure{Addr: addr, Err: err}
	const notTLSPort = "that --zk names each member's secureClientPort, not its clientPort"
	var verr *tls.CertificateVerificationError
	var rec tls.RecordHeaderError
	var op *net.OpError
	switch {
	case errors.As(err, &verr):
		f.What, f.Check = "the server's certificate is not trusted", "--zk-tls-ca: it must hold the CA that signed the server's certificate"
	case errors.As(err, &rec):
		f.What, f.Check = "the server did not answer in TLS", notTLSPort
	case errors.As(err, &op) && op.Op == "remote error":
		// The alert the server sent. Java sends bad_certificate both for
		// a missing client certificate and for one it does not trust.
		switch alert := op.Err.Error(); {
		case isCertAlert(alert) && !clientCert:
			f.What, f.Check = "the server requires a client certificate (ssl.clientAuth=need) and none was given", "--zk-tls-cert and --zk-tls-key"
		case isCertAlert(alert):
			f.What, f.Check = "the server refused the client certificate",
				"--zk-tls-cert: it must be signed by a CA in the server's ssl.trustStore, and not be expired or revoked"
		default:
			f.What, f.Check = "the server refused the TLS handshake",
				"the server's ssl.protocol and ssl.ciphersuites: no TLS version or cipher suite in common?"
		}
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		f.What, f.Check = "the server closed the connection during the TLS handshake", notTLSPort
	default:
		return nil
	}
	return f
}

// isCertAlert reports whether a TLS alert is about the client's certificate.
func isCertAlert(alert string) bool {
	return slices.ContainsFunc([]string{"bad certificate", "certificate required", "unknown certificate", "unsupported certificate", "expired certificate", "revoked certificate", "access denied"},
		func(s string) bool { return strings.Contains(alert, s) })
}

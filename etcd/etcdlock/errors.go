package etcdlock

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// errConnDown is the gRPC connection being down with nothing read.
var errConnDown = errors.New("no connection")

// errSpeaksTLS: an http:// endpoint answered a TLS handshake.
var errSpeaksTLS = errors.New("the server speaks TLS")

// diagnose finds why no connection to the endpoints comes up, which
// gRPC's client does not say (its requests just time out): it dials each
// one and shakes hands with TLS. nil when every endpoint looks fine at
// that level. Used only while the connection is down.
func diagnose(ctx context.Context, endpoints []string, cfg *tls.Config, timeout time.Duration) error {
	for _, ep := range endpoints {
		if err := probe(ctx, ep, cfg, timeout); err != nil {
			return err
		}
	}
	return nil
}

func probe(ctx context.Context, endpoint string, cfg *tls.Config, timeout time.Duration) error {
	u, err := url.Parse(endpoint)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return err
	}
	defer conn.Close()
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg != nil {
		tc = cfg.Clone()
	}
	if tc.ServerName == "" {
		tc.ServerName = u.Hostname()
	}
	tc.NextProtos = []string{"h2"}
	tconn := tls.Client(conn, tc)
	herr := tconn.HandshakeContext(ctx)
	if u.Scheme == "https" {
		if herr == nil {
			herr = refusedAfterHandshake(ctx, tconn)
		}
		if herr != nil {
			return tlsError{err: herr, clientCert: len(tc.Certificates) > 0 || tc.GetClientCertificate != nil}
		}
		return nil
	}
	// http://: a server that answers a TLS handshake at all (even with a
	// certificate this side does not trust) speaks TLS.
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var certInvalid x509.CertificateInvalidError
	var alert tls.AlertError
	if herr == nil || errors.As(herr, &unknownCA) || errors.As(herr, &hostname) || errors.As(herr, &certInvalid) || errors.As(herr, &alert) {
		return errSpeaksTLS
	}
	return nil
}

// unanswered reports a request that timed out: gRPC's client tells no
// more, diagnose may.
func unanswered(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded
}

// refusedAfterHandshake returns the alert a server sends right after a
// TLS 1.3 handshake, nil if none comes within a moment. In TLS 1.3 the
// client is done before the server has checked its certificate, so a
// server that requires one (--client-cert-auth) says no only to the first
// read: without this, the refusal looks like an unreachable server.
func refusedAfterHandshake(ctx context.Context, conn *tls.Conn) error {
	if conn.ConnectionState().Version < tls.VersionTLS13 {
		return nil
	}
	deadline := time.Now().Add(250 * time.Millisecond)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := conn.SetReadDeadline(deadline); err != nil {
		return nil
	}
	_, err := conn.Read(make([]byte, 1))
	if op := (*net.OpError)(nil); errors.As(err, &op) && op.Op == "remote error" {
		return err
	}
	return nil
}

// tlsError is a failed TLS handshake with an https:// endpoint.
type tlsError struct {
	err        error
	clientCert bool // a client certificate was offered
}

// clientCertAlert reports the server refusing the client's certificate,
// or its lack of one.
func (e tlsError) clientCertAlert() bool {
	var op *net.OpError
	return errors.As(e.err, &op) && op.Op == "remote error" && strings.Contains(op.Err.Error(), "certificate")
}

func (e tlsError) Error() string { return "TLS handshake: " + e.err.Error() }
func (e tlsError) Unwrap() error { return e.err }

// isDial reports a failed TCP dial: refused, no route, no such host.
func isDial(err error) bool {
	var op *net.OpError
	var dns *net.DNSError
	return errors.As(err, &op) || errors.As(err, &dns)
}

// describe turns a failed request into what an engineer on call needs:
// the service, the address, what went wrong and what to check. prefix is
// the lock being read, "" for the connection itself.
func describe(err error, endpoints []string, prefix string, timeout time.Duration) error {
	what, check := classify(err, prefix, timeout)
	return fmt.Errorf("etcd %s: %s: %s", AddrOf(endpoints), what, check)
}

func classify(err error, prefix string, timeout time.Duration) (what, check string) {
	desc := rpctypes.ErrorDesc(err)
	is := func(target error) bool { return errors.Is(err, target) || desc == rpctypes.ErrorDesc(target) }
	switch {
	case is(rpctypes.ErrAuthFailed):
		return "authentication failed (wrong user or password)", "check --etcd-user and --etcd-password"
	case is(rpctypes.ErrAuthNotEnabled):
		return "authentication is not enabled on this server", "drop --etcd-user and --etcd-password"
	case is(rpctypes.ErrUserEmpty), is(rpctypes.ErrInvalidAuthToken), is(rpctypes.ErrAuthOldRevision):
		return "the server requires authentication", "set --etcd-user and --etcd-password"
	case is(rpctypes.ErrPermissionDenied):
		target := "the lock prefixes"
		if prefix != "" {
			target = prefix + "/"
		}
		return "permission denied reading " + target,
			fmt.Sprintf("give the user a role with read on it: etcdctl role grant-permission ROLE read --prefix %s", cmpOr(prefix+"/", "PREFIX/"))
	case errors.Is(err, errSpeaksTLS):
		return "the server speaks TLS", "write its URL as https:// in --etcd (and give --etcd-tls-ca unless a system CA signed its certificate)"
	case isTLS(err):
		detail := shortErr(err)
		var te tlsError
		if errors.As(err, &te) {
			detail = te.err.Error()
			var verr *tls.CertificateVerificationError
			switch {
			case errors.As(te.err, &verr):
				return "TLS handshake failed: the server's certificate is not trusted (" + detail + ")",
					"check --etcd-tls-ca: it must hold the CA that signed the server's certificate"
			case te.clientCertAlert() && !te.clientCert:
				return "TLS handshake failed: the server requires a client certificate (--client-cert-auth) and none was given (" + detail + ")",
					"give --etcd-tls-cert and --etcd-tls-key"
			case te.clientCertAlert():
				return "TLS handshake failed: the server refused the client certificate (" + detail + ")",
					"check --etcd-tls-cert and --etcd-tls-key: the certificate must be signed by a CA in the server's --trusted-ca-file, and not be expired"
			}
		}
		return "TLS handshake failed (" + detail + ")",
			"write the URL as http:// if the server speaks plain HTTP; otherwise check --etcd-tls-ca, --etcd-tls-cert and --etcd-tls-key"
	case unanswered(err):
		return fmt.Sprintf("no answer within %v", timeout), checkUp
	case errors.Is(err, errConnDown), status.Code(err) == codes.Unavailable:
		return "not reachable", checkUp
	case isDial(err):
		return "not reachable (" + err.Error() + ")", checkUp
	case is(rpctypes.ErrNoLeader), is(rpctypes.ErrGRPCNoLeader):
		return "the member has no leader (it is cut off from its cluster's majority)", "check the etcd cluster's health: etcdctl endpoint health --cluster"
	}
	return shortErr(err), "check the etcd server's log"
}

const checkUp = "check that etcd is up and that --etcd names its client URL (http:// or https://, usually port 2379)"

func isTLS(err error) bool {
	if errors.As(err, new(tlsError)) {
		return true
	}
	s := err.Error()
	return strings.Contains(s, "x509:") || strings.Contains(s, "tls:") || strings.Contains(s, "first record does not look like a TLS handshake")
}

// shortErr is err's message without gRPC's "rpc error: code = … desc =".
func shortErr(err error) string {
	if st, ok := status.FromError(err); ok && st.Message() != "" {
		return st.Message()
	}
	return err.Error()
}

func cmpOr(s, def string) string {
	if s == "/" {
		return def
	}
	return s
}

// isPermission reports a missing privilege: the user may not read
// something, which is no fault of the connection.
func isPermission(err error) bool {
	return errors.Is(err, rpctypes.ErrPermissionDenied) || rpctypes.ErrorDesc(err) == rpctypes.ErrorDesc(rpctypes.ErrPermissionDenied)
}

package etcdlock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// errConnDown is the gRPC connection being down with nothing read.
var errConnDown = errors.New("no connection")

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
	case isTLS(err):
		return "TLS handshake failed (" + shortErr(err) + ")",
			"check that the endpoint's scheme is https:// for a TLS server, and --etcd-tls-ca, --etcd-tls-cert, --etcd-tls-key"
	case errors.Is(err, context.DeadlineExceeded), status.Code(err) == codes.DeadlineExceeded:
		return fmt.Sprintf("no answer within %v", timeout), checkUp
	case errors.Is(err, errConnDown), status.Code(err) == codes.Unavailable:
		return "not reachable", checkUp
	case is(rpctypes.ErrNoLeader), is(rpctypes.ErrGRPCNoLeader):
		return "the member has no leader (it is cut off from its cluster's majority)", "check the etcd cluster's health: etcdctl endpoint health --cluster"
	}
	return shortErr(err), "check the etcd server's log"
}

const checkUp = "check that etcd is up and that --etcd names its client URL (http:// or https://, usually port 2379)"

func isTLS(err error) bool {
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

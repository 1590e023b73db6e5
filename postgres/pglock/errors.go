package pglock

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// describe turns a connection or query error into what a person on call
// needs: the service, the address, what failed and what to check. pgx's
// own text is kept at the end for the details.
func describe(addr, user string, err error) error {
	what, check := classify(user, err)
	return fmt.Errorf("postgres %s: %s: %s (%w)", addr, what, check, err)
}

func classify(user string, err error) (what, check string) {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		switch pg.Code {
		case "28P01":
			return "wrong password for role " + user,
				"check the password in --postgres, --postgres-password (ZKLOCKVIZ_POSTGRES_PASSWORD) or PGPASSWORD"
		case "28000":
			return "the server refuses role " + user + " from here",
				"check pg_hba.conf on the server, the role's name and sslmode in --postgres"
		case "3D000":
			return "no such database", "check the database name in --postgres"
		case "42501":
			return "permission denied", "GRANT pg_monitor TO " + user
		case "57014":
			return "the poll's query was cancelled (statement_timeout)", "check the server's load"
		case "53300":
			return "too many connections", "check max_connections on the server"
		}
		return "server error " + pg.Code, "see the message"
	}
	var x509err x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	switch {
	case errors.As(err, &x509err) || errors.As(err, &hostErr) || strings.Contains(err.Error(), "tls:") ||
		strings.Contains(err.Error(), "x509:"):
		return "TLS handshake failed", "check sslmode, sslrootcert, sslcert and sslkey in --postgres"
	case strings.Contains(err.Error(), "server refused TLS connection"):
		return "the server does not offer TLS", "check sslmode in --postgres and ssl=on on the server"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused", "check the host and port in --postgres and that PostgreSQL is up"
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return "no answer in time", "check the host and port in --postgres, the network and firewalls"
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return "unknown host", "check the host in --postgres"
	}
	return "cannot read locks", "check --postgres and that the server is up"
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

package pglock

import (
	"net/url"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/testca"
	"github.com/zklockviz/zklockviz/testca/catest"
)

// serverCert writes a certificate for 127.0.0.1 from ca and its key,
// readable by the server (PostgreSQL refuses a key others may read).
func serverCert(t *testing.T, ca *testca.CA, dir string) (certFile, keyFile string) {
	t.Helper()
	certFile, keyFile = catest.Cert(t, ca, dir, "server")
	if os.Getuid() == 0 { // pglocal runs the server as postgres
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatal(err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(keyFile, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	return certFile, keyFile
}

// sslDSN is srv's superuser DSN with sslmode and sslrootcert.
func sslDSN(t *testing.T, dsn, mode, rootcert string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("sslmode", mode)
	if rootcert != "" {
		q.Set("sslrootcert", rootcert)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// TLS as the DSN sets it, against a real PostgreSQL with ssl=on: the
// server's certificate verified (verify-full) with the right CA; with
// another CA, and against a server without TLS, errors that say what to
// check.
func TestTLS(t *testing.T) {
	dir, err := os.MkdirTemp("", "pglock-tls-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ca, other := catest.New(t, "pglock test CA"), catest.New(t, "another CA")
	certFile, keyFile := serverCert(t, ca, dir)
	caFile, otherFile := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "other.pem")
	if err := ca.WriteCA(caFile); err != nil {
		t.Fatal(err)
	}
	if err := other.WriteCA(otherFile); err != nil {
		t.Fatal(err)
	}
	tlsSrv := server(t, map[string]string{"ssl": "on", "ssl_cert_file": certFile, "ssl_key_file": keyFile})
	plain := server(t, nil)

	for _, tc := range []struct {
		name, dsn string
		want      []string // in the error; none: it reads
	}{
		{"verify-full with the server's CA", sslDSN(t, tlsSrv.DSN(), "verify-full", caFile), nil},
		{"verify-full with another CA", sslDSN(t, tlsSrv.DSN(), "verify-full", otherFile),
			[]string{"postgres " + tlsSrv.Addr() + ": TLS handshake failed", "check sslmode, sslrootcert"}},
		{"require against a server without TLS", sslDSN(t, plain.DSN(), "require", ""),
			[]string{"postgres " + plain.Addr() + ": the server does not offer TLS", "check sslmode"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, col := startReader(t, Config{DSN: tc.dsn, Watch: []string{"advisory/1"}})
			s := col.await(t, "advisory/1", "a read or an error", func(s lockqueue.Snapshot) bool { return s.Live() || s.Error != "" })
			if tc.want == nil {
				if !s.Live() {
					t.Errorf("over TLS: %q", s.Error)
				}
				waitQuery(t, superuser(t, tlsSrv), "the reader's session to use TLS", `SELECT coalesce(bool_and(s.ssl), false)
					FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'zklockviz'`)
				return
			}
			for _, w := range tc.want {
				if !strings.Contains(s.Error, w) {
					t.Errorf("error %q does not say %q", s.Error, w)
				}
			}
		})
	}
}

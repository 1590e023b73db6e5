package pglock

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/url"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// testCA issues throwaway certificates.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// serverCert writes a certificate for 127.0.0.1 and its key, readable by
// the server (PostgreSQL refuses a key others may read).
func (ca *testCA) serverCert(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	pk, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk}), 0o600); err != nil {
		t.Fatal(err)
	}
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
	ca, other := newTestCA(t, "pglock test CA"), newTestCA(t, "another CA")
	certFile, keyFile := ca.serverCert(t, dir)
	caFile, otherFile := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "other.pem")
	if err := os.WriteFile(caFile, ca.pem, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(otherFile, other.pem, 0o644); err != nil {
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

package redislock_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/localproc"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/redislocal"
	"github.com/zklockviz/zklockviz/redislock"
)

// certPair is a throwaway CA and a server certificate it signed for
// 127.0.0.1, as PEM files in dir.
func certPair(t *testing.T, dir, name string) (caFile, certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(err)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name + " CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	must(err)
	ca, err := x509.ParseCertificate(caDER)
	must(err)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		KeyUsage:    x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	must(err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	must(err)
	write := func(file, typ string, b []byte) string {
		p := filepath.Join(dir, file)
		must(os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600))
		return p
	}
	pool = x509.NewCertPool()
	pool.AddCert(ca)
	return write(name+"-ca.pem", "CERTIFICATE", caDER), write(name+".pem", "CERTIFICATE", der),
		write(name+"-key.pem", "EC PRIVATE KEY", keyDER), pool
}

// A Redis master on a TLS port: with its CA trusted the reader reads the
// lock over TLS; trusting another CA, or speaking plain text to the TLS
// port, is an error naming redis, the address and what to check.
func TestReaderTLS(t *testing.T) {
	dir := t.TempDir()
	ca, cert, key, pool := certPair(t, dir, "redis")
	_, _, _, otherPool := certPair(t, dir, "other")
	ports, err := localproc.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	srv := redislocal.ForTestWith(t, redislocal.Options{Args: []string{
		"--tls-port", strconv.Itoa(ports[0]), "--tls-cert-file", cert, "--tls-key-file", key,
		"--tls-ca-cert-file", ca, "--tls-auth-clients", "no",
	}})
	tlsAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
	cli(t, srv.Addr(), "SET", "tls-lock", "tok-tls", "NX", "PX", "600000")

	_, s := startReader(t, redislock.Config{Addrs: []string{tlsAddr}, Names: []string{"tls-lock"},
		TLS: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}})
	s.waitSnap(t, "tls-lock", "tok-tls holding, read over TLS", held("tok-tls"))

	for _, tc := range []struct {
		name string
		tls  *tls.Config
		want []string
	}{
		{"another CA", &tls.Config{RootCAs: otherPool, MinVersion: tls.VersionTLS12},
			[]string{"redis " + tlsAddr, "not trusted", "--redis-tls-ca"}},
		{"plain text to the TLS port", nil, []string{"redis " + tlsAddr, "--redis-tls"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, s := startReader(t, redislock.Config{Addrs: []string{tlsAddr}, Names: []string{"tls-lock"}, TLS: tc.tls})
			snap := s.waitSnap(t, "tls-lock", "an error", func(s lockqueue.Snapshot) bool { return s.Error != "" })
			for _, w := range tc.want {
				if !strings.Contains(snap.Error, w) {
					t.Errorf("error %q lacks %q", snap.Error, w)
				}
			}
		})
	}
}

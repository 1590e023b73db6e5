package redislock_test

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/localproc"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/redis/redislocal"
	"github.com/zklockviz/zklockviz/redis/redislocal/redistest"
	"github.com/zklockviz/zklockviz/redis/redislock"
	"github.com/zklockviz/zklockviz/testca/catest"
)

// certPair is a throwaway CA and a server certificate it signed for
// 127.0.0.1, as PEM files in dir.
func certPair(t *testing.T, dir, name string) (caFile, certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	ca := catest.New(t, name+" CA")
	caFile = filepath.Join(dir, name+"-ca.pem")
	if err := ca.WriteCA(caFile); err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = catest.Cert(t, ca, dir, name)
	return caFile, certFile, keyFile, ca.Pool()
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
	srv := redistest.ForTestWith(t, redislocal.Options{Args: []string{
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

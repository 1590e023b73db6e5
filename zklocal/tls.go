package zklocal

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// testCA is a throwaway certificate authority. Its certificates are PEM
// files ZooKeeper reads directly (ssl.keyStore.type=PEM, supported since
// 3.6), so no keytool is needed.
type testCA struct {
	cert   *x509.Certificate
	key    *rsa.PrivateKey
	pem    []byte
	serial int64
}

func newTestCA(name string) (*testCA, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("zklocal: TLS CA key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("zklocal: TLS CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("zklocal: TLS CA certificate: %w", err)
	}
	return &testCA{cert: cert, key: key, pem: pemBlock("CERTIFICATE", der), serial: 1}, nil
}

// issue returns a PEM key and certificate for 127.0.0.1 and localhost,
// good for either end of a connection.
func (ca *testCA) issue(name string) (keyPEM, certPEM []byte, err error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, nil, fmt.Errorf("zklocal: TLS key for %s: %w", name, err)
	}
	ca.serial++
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(ca.serial), Subject: pkix.Name{CommonName: name},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, nil, fmt.Errorf("zklocal: TLS certificate for %s: %w", name, err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("zklocal: TLS key for %s: %w", name, err)
	}
	return pemBlock("PRIVATE KEY", pkcs8), pemBlock("CERTIFICATE", der), nil
}

// writeClientCert writes a client certificate and its key as two PEM files
// in dir, the way --zk-tls-cert and --zk-tls-key take them.
func (ca *testCA) writeClientCert(dir, name string) (certFile, keyFile string, err error) {
	keyPEM, certPEM, err := ca.issue(name)
	if err != nil {
		return "", "", err
	}
	certFile, keyFile = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	if err := os.WriteFile(certFile, certPEM, 0o644); err != nil {
		return "", "", fmt.Errorf("zklocal: write TLS client certificate: %w", err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		return "", "", fmt.Errorf("zklocal: write TLS client key: %w", err)
	}
	return certFile, keyFile, nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// tlsFiles are a server's throwaway CA, its server certificate and a client
// certificate from the same CA, as files.
type tlsFiles struct {
	caPEM      []byte
	client     tls.Certificate
	keyStore   string // server key and certificate chain
	trust      string // the CA
	clientCert string
	clientKey  string
	clientAuth string // ssl.clientAuth
}

func writeTLSFiles(dir string, needClientCert bool) (tlsFiles, error) {
	ca, err := newTestCA("zklocal test CA")
	if err != nil {
		return tlsFiles{}, err
	}
	keyPEM, certPEM, err := ca.issue("127.0.0.1")
	if err != nil {
		return tlsFiles{}, err
	}
	f := tlsFiles{
		caPEM:      ca.pem,
		keyStore:   filepath.Join(dir, "server.pem"),
		trust:      filepath.Join(dir, "ca.pem"),
		clientAuth: "want",
	}
	if needClientCert {
		f.clientAuth = "need"
	}
	ks := append(append(keyPEM, certPEM...), ca.pem...)
	if err := os.WriteFile(f.keyStore, ks, 0o600); err != nil {
		return tlsFiles{}, fmt.Errorf("zklocal: write TLS key store: %w", err)
	}
	if err := os.WriteFile(f.trust, ca.pem, 0o644); err != nil {
		return tlsFiles{}, fmt.Errorf("zklocal: write TLS trust store: %w", err)
	}
	if f.clientCert, f.clientKey, err = ca.writeClientCert(dir, "client"); err != nil {
		return tlsFiles{}, err
	}
	if f.client, err = tls.LoadX509KeyPair(f.clientCert, f.clientKey); err != nil {
		return tlsFiles{}, fmt.Errorf("zklocal: load TLS client certificate: %w", err)
	}
	return f, nil
}

// config is the zoo.cfg for a TLS client port beside the plain one.
func (f tlsFiles) config(securePort int) [][2]string {
	return [][2]string{
		{"secureClientPort", strconv.Itoa(securePort)},
		{"secureClientPortAddress", "127.0.0.1"},
		// Only the Netty connection factory speaks TLS.
		{"serverCnxnFactory", "org.apache.zookeeper.server.NettyServerCnxnFactory"},
		{"ssl.keyStore.location", f.keyStore},
		{"ssl.keyStore.type", "PEM"},
		{"ssl.trustStore.location", f.trust},
		{"ssl.trustStore.type", "PEM"},
		// "want": clients need no certificate, but one they send must be
		// from the CA; "need": no certificate, no connection.
		{"ssl.clientAuth", f.clientAuth},
	}
}

// SecureAddr is the TLS client address, "127.0.0.1:PORT"; "" unless the
// server was started with Options.TLS.
func (s *Server) SecureAddr() string {
	if s.securePort == 0 {
		return ""
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.securePort))
}

// CAPEM is the PEM certificate of the CA that signed the server's TLS
// certificate; nil unless the server was started with Options.TLS.
func (s *Server) CAPEM() []byte { return s.tls.caPEM }

// CAFile is the path of CAPEM as a file (for --zk-tls-ca); "" without
// Options.TLS.
func (s *Server) CAFile() string { return s.tls.trust }

// ClientCertFiles are a client certificate and its key, PEM files signed by
// the server's CA (for --zk-tls-cert and --zk-tls-key); "" without
// Options.TLS.
func (s *Server) ClientCertFiles() (certFile, keyFile string) {
	return s.tls.clientCert, s.tls.clientKey
}

// ClientTLS is a client TLS configuration that trusts the server's CA and
// presents the client certificate of ClientCertFiles, so it works with
// Options.TLSClientAuth too.
func (s *Server) ClientTLS() *tls.Config {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.tls.caPEM)
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{s.tls.client}, MinVersion: tls.VersionTLS12}
}

// UntrustedClientCert writes a client certificate and key (PEM files in
// dir) from a fresh CA that no zklocal server trusts: what a server with
// Options.TLSClientAuth must refuse.
func UntrustedClientCert(dir string) (certFile, keyFile string, err error) {
	ca, err := newTestCA("zklocal untrusted CA")
	if err != nil {
		return "", "", err
	}
	return ca.writeClientCert(dir, "untrusted-client")
}

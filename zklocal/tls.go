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

// tlsFiles is a throwaway CA and a server certificate for 127.0.0.1 and
// localhost, written as PEM files ZooKeeper reads directly
// (ssl.keyStore.type=PEM, supported since 3.6), so no keytool is needed.
type tlsFiles struct {
	caPEM    []byte
	keyStore string // server key and certificate chain
	trust    string // the CA
}

func writeTLSFiles(dir string) (tlsFiles, error) {
	caKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return tlsFiles{}, fmt.Errorf("zklocal: TLS CA key: %w", err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "zklocal test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return tlsFiles{}, fmt.Errorf("zklocal: TLS CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return tlsFiles{}, fmt.Errorf("zklocal: TLS CA certificate: %w", err)
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return tlsFiles{}, fmt.Errorf("zklocal: TLS server key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return tlsFiles{}, fmt.Errorf("zklocal: TLS server certificate: %w", err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return tlsFiles{}, fmt.Errorf("zklocal: TLS server key: %w", err)
	}
	f := tlsFiles{
		caPEM:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		keyStore: filepath.Join(dir, "server.pem"),
		trust:    filepath.Join(dir, "ca.pem"),
	}
	ks := append(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	ks = append(ks, f.caPEM...)
	if err := os.WriteFile(f.keyStore, ks, 0o600); err != nil {
		return tlsFiles{}, fmt.Errorf("zklocal: write TLS key store: %w", err)
	}
	if err := os.WriteFile(f.trust, f.caPEM, 0o644); err != nil {
		return tlsFiles{}, fmt.Errorf("zklocal: write TLS trust store: %w", err)
	}
	return f, nil
}

// tlsConfig is the zoo.cfg for a TLS client port beside the plain one.
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
		// Clients need no certificate of their own (a test may still send one).
		{"ssl.clientAuth", "want"},
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

// ClientTLS is a client TLS configuration that trusts the server's CA.
func (s *Server) ClientTLS() *tls.Config {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.tls.caPEM)
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

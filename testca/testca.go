// Package testca is a throwaway certificate authority for tests and local
// servers: it issues certificates for the loopback address (127.0.0.1 and
// localhost), good for either end of a TLS connection, and writes them as
// PEM files the servers the project runs (ZooKeeper, Redis, PostgreSQL,
// etcd) read directly. Nothing it makes is meant to outlive a test run.
package testca

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// validity covers clock skew before now and any test run after it.
const validity = 24 * time.Hour

// CA is a throwaway certificate authority. It is safe for concurrent use.
type CA struct {
	name string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte

	mu     sync.Mutex
	serial int64
}

// New makes a CA named name (its certificate's common name).
func New(name string) (*CA, error) {
	// ECDSA P-256: a key in microseconds where RSA 2048 takes a good part
	// of a second, and every server here (Java's PEM key store too) takes it.
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("testca: key for %s: %w", name, err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(validity),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("testca: certificate for %s: %w", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("testca: certificate for %s: %w", name, err)
	}
	return &CA{name: name, cert: cert, key: key, pem: pemBlock("CERTIFICATE", der), serial: 1}, nil
}

// PEM is the CA's certificate, PEM encoded.
func (ca *CA) PEM() []byte { return ca.pem }

// Pool is a certificate pool holding only the CA, for tls.Config.RootCAs
// or ClientCAs.
func (ca *CA) Pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	return pool
}

// WriteCA writes the CA's certificate to file, readable by all (servers
// may run as another user).
func (ca *CA) WriteCA(file string) error {
	if err := os.WriteFile(file, ca.pem, 0o644); err != nil {
		return fmt.Errorf("testca: write %s certificate: %w", ca.name, err)
	}
	return nil
}

// Issue returns a PEM key (PKCS #8) and certificate named name for
// 127.0.0.1 and localhost, for server and client authentication alike.
func (ca *CA) Issue(name string) (keyPEM, certPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("testca: key for %s: %w", name, err)
	}
	ca.mu.Lock()
	ca.serial++
	serial := ca.serial
	ca.mu.Unlock()
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(validity),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, nil, fmt.Errorf("testca: certificate for %s: %w", name, err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("testca: key for %s: %w", name, err)
	}
	return pemBlock("PRIVATE KEY", pkcs8), pemBlock("CERTIFICATE", der), nil
}

// WriteCert issues a certificate named name and writes it and its key in
// dir as name.pem (readable by all) and name-key.pem (by the owner only:
// PostgreSQL refuses a key others may read).
func (ca *CA) WriteCert(dir, name string) (certFile, keyFile string, err error) {
	keyPEM, certPEM, err := ca.Issue(name)
	if err != nil {
		return "", "", err
	}
	certFile, keyFile = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	if err := os.WriteFile(certFile, certPEM, 0o644); err != nil {
		return "", "", fmt.Errorf("testca: write certificate for %s: %w", name, err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		return "", "", fmt.Errorf("testca: write key for %s: %w", name, err)
	}
	return certFile, keyFile, nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// Files are what a local TLS server and its clients need, from a CA of
// their own, as PEM files in one directory.
type Files struct {
	CA                    string // the CA's certificate
	ServerCert, ServerKey string
	ClientCert, ClientKey string

	caPEM  []byte
	client tls.Certificate
}

// WriteFiles makes a CA named name and writes it, a server certificate
// and a client certificate it issued, into dir as ca.pem, server.pem,
// server-key.pem, client.pem and client-key.pem.
func WriteFiles(dir, name string) (Files, error) {
	ca, err := New(name)
	if err != nil {
		return Files{}, err
	}
	f := Files{CA: filepath.Join(dir, "ca.pem"), caPEM: ca.PEM()}
	if err := ca.WriteCA(f.CA); err != nil {
		return Files{}, err
	}
	if f.ServerCert, f.ServerKey, err = ca.WriteCert(dir, "server"); err != nil {
		return Files{}, err
	}
	if f.ClientCert, f.ClientKey, err = ca.WriteCert(dir, "client"); err != nil {
		return Files{}, err
	}
	if f.client, err = tls.LoadX509KeyPair(f.ClientCert, f.ClientKey); err != nil {
		return Files{}, fmt.Errorf("testca: load client certificate: %w", err)
	}
	return f, nil
}

// CAPEM is the CA's certificate, PEM encoded; nil for the zero Files.
func (f Files) CAPEM() []byte { return f.caPEM }

// ClientTLS is a client configuration that trusts the CA and presents the
// client certificate, so it passes servers that require one too.
func (f Files) ClientTLS() *tls.Config {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(f.caPEM)
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{f.client}, MinVersion: tls.VersionTLS12}
}

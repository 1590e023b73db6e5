package testca_test

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"os"
	"testing"

	"github.com/zklockviz/zklockviz/testca"
	"github.com/zklockviz/zklockviz/testca/catest"
)

// A server with WriteFiles' server certificate and a client with its
// ClientTLS shake hands both ways on loopback, the client's certificate
// verified too; a client trusting another CA does not.
func TestHandshake(t *testing.T) {
	f, err := testca.WriteFiles(t.TempDir(), "testca test")
	if err != nil {
		t.Fatal(err)
	}
	// PostgreSQL refuses a key others may read.
	if fi, err := os.Stat(f.ServerKey); err != nil {
		t.Fatal(err)
	} else if fi.Mode().Perm() != 0o600 {
		t.Errorf("server key mode %v, want 0600", fi.Mode().Perm())
	}
	serverCert, err := tls.LoadX509KeyPair(f.ServerCert, f.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(f.CA)
	if err != nil {
		t.Fatal(err)
	}
	clients := x509.NewCertPool()
	clients.AppendCertsFromPEM(caPEM)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{serverCert},
		ClientCAs: clients, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			// Write, so the client's read sees the server's verdict on its
			// certificate.
			c.Write([]byte("ok"))
			c.Close()
		}
	}()
	dial := func(cfg *tls.Config) error {
		c, err := tls.Dial("tcp", ln.Addr().String(), cfg)
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Read(make([]byte, 2))
		return err
	}
	for _, host := range []string{"127.0.0.1", "localhost"} {
		cfg := f.ClientTLS()
		cfg.ServerName = host
		if err := dial(cfg); err != nil {
			t.Errorf("handshake as %s: %v", host, err)
		}
	}
	other := f.ClientTLS()
	other.RootCAs = catest.New(t, "another CA").Pool()
	var verr *tls.CertificateVerificationError
	if err := dial(other); err == nil || !errors.As(err, &verr) {
		t.Errorf("trusting another CA: %v, want a verification error", err)
	}
}

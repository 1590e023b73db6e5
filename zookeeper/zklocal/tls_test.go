package zklocal_test

import (
	"context"
	"crypto/tls"
	"io"
	"log"
	"net"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/third_party/zk"

	"github.com/zklockviz/zklockviz/zookeeper/zklocal"
	"github.com/zklockviz/zklockviz/zookeeper/zklocal/zktest"
)

// A TLS client port: the handshake verifies against the throwaway CA,
// four-letter words work over it, and go-zookeeper gets a session through a
// TLS dialer.
func TestTLS(t *testing.T) {
	s := zktest.ForTestWith(t, zklocal.Options{TLS: true})
	if s.SecureAddr() == "" || len(s.CAPEM()) == 0 {
		t.Fatalf("no secure address or CA: %q", s.SecureAddr())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d := tls.Dialer{Config: s.ClientTLS()}
	c, err := d.DialContext(ctx, "tcp", s.SecureAddr())
	if err != nil {
		t.Fatalf("TLS handshake with %s: %v\n%s", s.SecureAddr(), err, s.Output())
	}
	if _, err := io.WriteString(c, "ruok"); err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(c)
	c.Close()
	if string(b) != "imok" {
		t.Errorf("ruok over TLS = %q, want imok", b)
	}

	dialer := func(network, addr string, timeout time.Duration) (net.Conn, error) {
		return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, network, addr, s.ClientTLS())
	}
	conn, events, err := zk.Connect([]string{s.SecureAddr()}, 5*time.Second, zk.WithLogger(log.New(io.Discard, "", 0)), zk.WithDialer(dialer))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				if _, _, err := conn.Children("/"); err != nil {
					t.Fatalf("children over TLS: %v", err)
				}
				return
			}
		case <-timeout:
			t.Fatalf("no session over TLS (state %v)\n%s", conn.State(), s.Output())
		}
	}
}

// ssl.clientAuth=need: the client certificate from ClientCertFiles gets an
// answer over TLS; no certificate, or one from another CA, gets none.
func TestTLSClientAuth(t *testing.T) {
	s := zktest.ForTestWith(t, zklocal.Options{TLSClientAuth: true})
	untrustedCert, untrustedKey, err := zktest.UntrustedClientCert(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	untrusted, err := tls.LoadX509KeyPair(untrustedCert, untrustedKey)
	if err != nil {
		t.Fatal(err)
	}
	ruok := func(cfg *tls.Config) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		d := tls.Dialer{Config: cfg}
		c, err := d.DialContext(ctx, "tcp", s.SecureAddr())
		if err != nil {
			return "", err
		}
		defer c.Close()
		if _, err := io.WriteString(c, "ruok"); err != nil {
			return "", err
		}
		b, err := io.ReadAll(c)
		return string(b), err
	}
	if got, err := ruok(s.ClientTLS()); got != "imok" {
		t.Errorf("ruok with the client certificate = %q, %v; want imok\n%s", got, err, s.Output())
	}
	for name, certs := range map[string][]tls.Certificate{"no certificate": nil, "untrusted certificate": {untrusted}} {
		cfg := s.ClientTLS()
		cfg.Certificates = certs
		got, err := ruok(cfg)
		if got != "" || err == nil {
			t.Errorf("ruok with %s = %q, %v; want no answer and an error", name, got, err)
		}
	}
}

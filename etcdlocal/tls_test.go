package etcdlocal_test

import (
	"context"
	"crypto/tls"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/etcdlocal"
	"github.com/zklockviz/zklockviz/testca"
)

// Options.TLSClientAuth: clients speak https with a certificate from the
// server's CA, across a restart too; without a certificate, trusting
// another CA, or over plain http, /health does not answer.
func TestTLSClientAuth(t *testing.T) {
	s := etcdlocal.ForTestWith(t, etcdlocal.Options{TLSClientAuth: true})
	if want := "https://" + s.Addr(); s.Endpoint() != want {
		t.Errorf("Endpoint = %q, want %q", s.Endpoint(), want)
	}
	put(t, s, "k", "over TLS")
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatalf("restart with TLS: %v\n%s", err, s.Output())
	}
	if v, ok := get(t, s, "k"); !ok || v != "over TLS" {
		t.Errorf("after restart get = %q, %v; want %q", v, ok, "over TLS")
	}

	noCert := s.ClientTLS()
	noCert.Certificates = nil
	otherCA := s.ClientTLS()
	otherCA.RootCAs = testca.ForTest(t, "another CA").Pool()
	for name, tc := range map[string]struct {
		endpoint string
		cfg      *tls.Config
	}{
		"no client certificate": {s.Endpoint(), noCert},
		"another CA":            {s.Endpoint(), otherCA},
		"plain http":            {"http://" + s.Addr(), nil},
	} {
		t.Run(name, func(t *testing.T) {
			c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tc.cfg}}
			resp, err := c.Get(tc.endpoint + "/health")
			if err == nil {
				resp.Body.Close()
				t.Fatalf("GET /health answered %s", resp.Status)
			}
			t.Logf("GET /health: %v", err)
		})
	}
}

// Options.TLS alone: any client that trusts the CA is served.
func TestTLSWithoutClientAuth(t *testing.T) {
	s := etcdlocal.ForTestWith(t, etcdlocal.Options{TLS: true})
	cfg := s.ClientTLS()
	cfg.Certificates = nil
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
	resp, err := c.Get(s.Endpoint() + "/health")
	if err != nil {
		t.Fatalf("GET /health without a client certificate: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /health = %s", resp.Status)
	}
	if cert, key := s.ClientCertFiles(); !strings.HasSuffix(cert, ".pem") || !strings.HasSuffix(key, ".pem") {
		t.Errorf("ClientCertFiles = %q, %q", cert, key)
	}
}

package etcdlocal_test

import (
	"context"
	"crypto/tls"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/etcd/etcdlocal"
	"github.com/zklockviz/zklockviz/etcd/etcdlocal/etcdtest"
	"github.com/zklockviz/zklockviz/testca/catest"
)

// Options.TLSClientAuth: clients speak https with a certificate from the
// server's CA, across a restart too; without a certificate, trusting
// another CA, or over plain http, /health does not answer.
func TestTLSClientAuth(t *testing.T) {
	s := etcdtest.ForTestWith(t, etcdlocal.Options{TLSClientAuth: true})
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
	otherCA.RootCAs = catest.New(t, "another CA").Pool()
	for name, tc := range map[string]struct {
		endpoint string
		cfg      *tls.Config
	}{
		"no client certificate": {s.Endpoint(), noCert},
		"another CA":            {s.Endpoint(), otherCA},
		"plain http":            {"http://" + s.Addr(), nil},
	} {
		t.Run(name, func(t *testing.T) {
			if err := health(tc.endpoint, tc.cfg); err == nil {
				t.Fatal("/health answered")
			}
		})
	}
}

// health asks /health at endpoint with cfg as the client's TLS
// configuration.
func health(endpoint string, cfg *tls.Config) error {
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return etcdlocal.HealthWith(ctx, c, endpoint)
}

// Options.TLS alone: any client that trusts the CA is served.
func TestTLSWithoutClientAuth(t *testing.T) {
	s := etcdtest.ForTestWith(t, etcdlocal.Options{TLS: true})
	cfg := s.ClientTLS()
	cfg.Certificates = nil
	if err := health(s.Endpoint(), cfg); err != nil {
		t.Errorf("/health without a client certificate: %v", err)
	}
	if cert, key := s.ClientCertFiles(); !strings.HasSuffix(cert, ".pem") || !strings.HasSuffix(key, ".pem") {
		t.Errorf("ClientCertFiles = %q, %q", cert, key)
	}
}

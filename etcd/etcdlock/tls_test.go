package etcdlock_test

import (
	"crypto/tls"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/etcd/etcdlocal"
	"github.com/zklockviz/zklockviz/etcd/etcdlocal/etcdtest"
	"github.com/zklockviz/zklockviz/etcd/etcdlock"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/testca"
)

// An etcd that serves clients over TLS only and requires a client
// certificate (--client-cert-auth): with its CA trusted and a certificate
// from it the reader reads the queue; trusting another CA, without a
// client certificate, with one from another CA, or writing the URL as
// http://, the error names etcd, the address and what to check.
func TestReaderTLS(t *testing.T) {
	srv := etcdtest.ForTestWith(t, etcdlocal.Options{TLSClientAuth: true})
	cli := newClientTLS(t, srv.Endpoint(), srv.ClientTLS())
	const prefix = "/locks/tls"
	a := goMutexOn(t, cli, prefix, 10)
	<-a.locked
	b := goMutexOn(t, cli, prefix, 10)
	label := map[string]string{a.key: "a", b.key: "b"}

	_, f := startReader(t, etcdlock.Config{Endpoints: []string{srv.Endpoint()}, Prefixes: []string{prefix}, TLS: srv.ClientTLS()})
	s := f.waitFor(t, prefix, "a holding and b queued, read over TLS", func(s lockqueue.Snapshot) bool {
		return queue(s, label) == "a:H b>a" && s.Live()
	})
	checkHealthy(t, s)

	other, err := testca.WriteFiles(t.TempDir(), "another CA")
	if err != nil {
		t.Fatal(err)
	}
	otherCA := srv.ClientTLS()
	otherCA.RootCAs = other.ClientTLS().RootCAs
	otherCert := srv.ClientTLS()
	otherCert.Certificates = other.ClientTLS().Certificates
	noCert := srv.ClientTLS()
	noCert.Certificates = nil
	for _, tc := range []struct {
		name     string
		endpoint string
		tls      *tls.Config
		want     []string
	}{
		{"another CA", srv.Endpoint(), otherCA, []string{"TLS handshake failed", "not trusted", "--etcd-tls-ca"}},
		{"no client certificate", srv.Endpoint(), noCert,
			[]string{"TLS handshake failed", "requires a client certificate", "--etcd-tls-cert and --etcd-tls-key"}},
		{"client certificate from another CA", srv.Endpoint(), otherCert,
			[]string{"TLS handshake failed", "refused the client certificate", "--etcd-tls-cert"}},
		{"http:// to the TLS port", "http://" + srv.Addr(), nil, []string{"the server speaks TLS", "https://", "--etcd-tls-ca"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, f := startReader(t, etcdlock.Config{Endpoints: []string{tc.endpoint}, Prefixes: []string{prefix}, TLS: tc.tls, Timeout: time.Second})
			s := f.waitFor(t, prefix, "an error", func(s lockqueue.Snapshot) bool { return s.Error != "" })
			for _, w := range append(tc.want, "etcd "+srv.Addr()) {
				if !strings.Contains(s.Error, w) {
					t.Errorf("error %q lacks %q", s.Error, w)
				}
			}
			if s.Live() {
				t.Errorf("read without a good TLS connection: %s", show(s))
			}
		})
	}
}

package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/etcd/etcdlocal"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/testca"
)

// serve against an etcd that serves clients over TLS only and requires a
// client certificate (--client-cert-auth): with --etcd-tls-ca,
// --etcd-tls-cert and --etcd-tls-key from its CA it reads a lock live
// (--etcd given as HOST:PORT, which the TLS flags make https://);
// trusting another CA, without a client certificate, or with one from
// another CA, the lock's error and the log say etcd, the address and what
// to check.
func TestServeEtcdTLS(t *testing.T) {
	srv, cli := etcdForTestWith(t, etcdlocal.Options{TLSClientAuth: true})
	const prefix = "/locks/tls"
	holder, _ := queueMutex(t, cli, prefix)
	cert, key := srv.ClientCertFiles()
	other, err := testca.WriteFiles(t.TempDir(), "another CA")
	if err != nil {
		t.Fatal(err)
	}

	t.Run("client certificate", func(t *testing.T) {
		s := startServe(t, "--etcd", srv.Addr(), "--etcd-tls-ca", srv.CAFile(), "--etcd-tls-cert", cert, "--etcd-tls-key", key,
			"--addr", "127.0.0.1:0", "--watch", "etcd:"+prefix, "--poll", "200ms")
		waitFor(t, "the holder, read over TLS", func() bool {
			snap, ok := etcdLock(t, s.url, prefix)
			return ok && snap.Live() && len(snap.Nodes) == 1 && snap.Nodes[0].Name == holder && snap.Nodes[0].Holding
		})
	})

	for _, tc := range []struct {
		name string
		args []string
		want []string // in the lock's error and in the log
	}{
		{"another CA", []string{"--etcd-tls-ca", other.CA, "--etcd-tls-cert", cert, "--etcd-tls-key", key},
			[]string{"TLS handshake failed", "the server's certificate is not trusted", "--etcd-tls-ca"}},
		{"no client certificate", []string{"--etcd-tls-ca", srv.CAFile()},
			[]string{"TLS handshake failed", "the server requires a client certificate", "--etcd-tls-cert and --etcd-tls-key"}},
		{"client certificate from another CA", []string{"--etcd-tls-ca", srv.CAFile(), "--etcd-tls-cert", other.ClientCert, "--etcd-tls-key", other.ClientKey},
			[]string{"TLS handshake failed", "the server refused the client certificate", "--etcd-tls-cert"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServe(t, append([]string{"--etcd", srv.Addr(), "--addr", "127.0.0.1:0", "--watch", "etcd:" + prefix}, tc.args...)...)
			var snap lockqueue.Snapshot
			waitFor(t, "the etcd lock's error", func() bool {
				var ok bool
				snap, ok = etcdLock(t, s.url, prefix)
				return ok && snap.Error != ""
			})
			wants := append(tc.want, "etcd "+srv.Addr())
			for _, want := range wants {
				if !strings.Contains(snap.Error, want) {
					t.Errorf("error %q lacks %q", snap.Error, want)
				}
			}
			// The log line and the lock's error come from the same failure,
			// but the line reaches the test through serve's stderr pipe and
			// may come a moment after the API answers.
			waitFor(t, fmt.Sprintf("the log to say %q", wants), func() bool {
				out := s.output()
				for _, want := range wants {
					if !strings.Contains(out, want) {
						return false
					}
				}
				return true
			})
			if snap.Live() || snap.Connection == lockqueue.Connected {
				t.Errorf("etcd read without a good TLS connection: %+v", snap)
			}
		})
	}
}

package zklocal

import (
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"github.com/zklockviz/zklockviz/testca"
)

// tlsFiles are a server's throwaway CA, its server certificate and a client
// certificate from the same CA, as files.
type tlsFiles struct {
	testca.Files
	keyStore   string // server key and certificate chain
	clientAuth string // ssl.clientAuth
}

func writeTLSFiles(dir string, needClientCert bool) (tlsFiles, error) {
	files, err := testca.WriteFiles(dir, "zklocal test CA")
	if err != nil {
		return tlsFiles{}, fmt.Errorf("zklocal: TLS files: %w", err)
	}
	f := tlsFiles{Files: files, keyStore: filepath.Join(dir, "keystore.pem"), clientAuth: "want"}
	if needClientCert {
		f.clientAuth = "need"
	}
	// ZooKeeper reads PEM files directly (ssl.keyStore.type=PEM, since
	// 3.6), so no keytool is needed; its key store is one file: the key,
	// then the certificate chain.
	var ks []byte
	for _, part := range []string{f.ServerKey, f.ServerCert, f.CA} {
		b, err := os.ReadFile(part)
		if err != nil {
			return tlsFiles{}, fmt.Errorf("zklocal: TLS key store: %w", err)
		}
		ks = append(ks, b...)
	}
	if err := os.WriteFile(f.keyStore, ks, 0o600); err != nil {
		return tlsFiles{}, fmt.Errorf("zklocal: write TLS key store: %w", err)
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
		{"ssl.trustStore.location", f.CA},
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
func (s *Server) CAPEM() []byte { return s.tls.CAPEM() }

// CAFile is the path of CAPEM as a file (for --zk-tls-ca); "" without
// Options.TLS.
func (s *Server) CAFile() string { return s.tls.CA }

// ClientCertFiles are a client certificate and its key, PEM files signed by
// the server's CA (for --zk-tls-cert and --zk-tls-key); "" without
// Options.TLS.
func (s *Server) ClientCertFiles() (certFile, keyFile string) {
	return s.tls.ClientCert, s.tls.ClientKey
}

// ClientTLS is a client TLS configuration that trusts the server's CA and
// presents the client certificate of ClientCertFiles, so it works with
// Options.TLSClientAuth too.
func (s *Server) ClientTLS() *tls.Config { return s.tls.ClientTLS() }

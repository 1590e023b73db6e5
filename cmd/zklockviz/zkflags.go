package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/zklockviz/zklockviz/zkwatch"
)

// parseZKAuth reads --zk-auth SCHEME:CREDENTIAL, e.g. digest:user:password
// (the credential keeps every colon after the scheme's).
func parseZKAuth(s string) ([]zkwatch.Auth, error) {
	if s == "" {
		return nil, nil
	}
	scheme, cred, ok := strings.Cut(s, ":")
	if !ok || scheme == "" || cred == "" {
		return nil, errors.New("want SCHEME:CREDENTIAL, e.g. digest:user:password")
	}
	if scheme == "digest" && !strings.Contains(cred, ":") {
		return nil, errors.New("a digest credential is user:password: want digest:user:password")
	}
	return []zkwatch.Auth{{Scheme: scheme, Credential: cred}}, nil
}

// zkTLSFlags are the --zk-tls* flags.
type zkTLSFlags struct {
	on, skipVerify bool
	ca, cert, key  string
}

func (f *zkTLSFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.on, "zk-tls", false, "")
	fs.StringVar(&f.ca, "zk-tls-ca", "", "")
	fs.StringVar(&f.cert, "zk-tls-cert", "", "")
	fs.StringVar(&f.key, "zk-tls-key", "", "")
	fs.BoolVar(&f.skipVerify, "zk-tls-insecure-skip-verify", false, "")
}

// config builds the TLS configuration for the watcher's connections to
// ZooKeeper, or nil when TLS is off. Any --zk-tls-* flag turns it on.
func (f zkTLSFlags) config() (*tls.Config, error) {
	if !f.on && !f.skipVerify && f.ca == "" && f.cert == "" && f.key == "" {
		return nil, nil
	}
	if f.on && f.ca == "" && f.cert == "" && f.key == "" && !f.skipVerify {
		return &tls.Config{MinVersion: tls.VersionTLS12}, nil
	}
	return tlsFromFiles("--zk-tls", f.ca, f.cert, f.key, f.skipVerify)
}

// tlsFromFiles builds a client TLS configuration from the PEM files of a
// service's --SERVICE-tls-ca, -cert and -key flags (flagPrefix names them
// in errors); nil when none is given and skipVerify is off.
func tlsFromFiles(flagPrefix, ca, cert, key string, skipVerify bool) (*tls.Config, error) {
	if ca == "" && cert == "" && key == "" && !skipVerify {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: skipVerify}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("%s-ca: %w", flagPrefix, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s-ca %s: no PEM certificate in it", flagPrefix, ca)
		}
		cfg.RootCAs = pool
	}
	if (cert == "") != (key == "") {
		return nil, fmt.Errorf("%s-cert and %s-key go together", flagPrefix, flagPrefix)
	}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("%s-cert/%s-key: %w", flagPrefix, flagPrefix, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

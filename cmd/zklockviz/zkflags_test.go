package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestZKAuthAndTLSFlags(t *testing.T) {
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	// A self-signed certificate is enough for the parser.
	if err := os.WriteFile(ca, selfSigned(t), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args    []string
		env     map[string]string
		auth    string // scheme:credential, "" none
		tls     bool
		skip    bool
		roots   bool
		wantErr string
	}{
		{args: nil},
		{args: []string{"--zk-auth", "digest:viz:s3:cret"}, auth: "digest:viz:s3:cret"},
		{env: map[string]string{"ZKLOCKVIZ_ZK_AUTH": "digest:u:p"}, auth: "digest:u:p"},
		{args: []string{"--zk-auth", "digest:nocolon"}, wantErr: "user:password"},
		{args: []string{"--zk-auth", "digest"}, wantErr: "SCHEME:CREDENTIAL"},
		{args: []string{"--zk-tls"}, tls: true},
		{args: []string{"--zk-tls-ca", ca}, tls: true, roots: true},
		{args: []string{"--zk-tls-insecure-skip-verify"}, tls: true, skip: true},
		{args: []string{"--zk-tls-ca", filepath.Join(dir, "nothere.pem")}, wantErr: "--zk-tls-ca"},
		{args: []string{"--zk-tls-cert", ca}, wantErr: "go together"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			m := &Main{Stdout: io.Discard, Stderr: io.Discard, Getenv: func(k string) string { return tc.env[k] }}
			err := m.ParseFlags(append([]string{"--zk", "zk1:2281"}, tc.args...))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c := m.Config
			got := ""
			if len(c.ZKAuth) == 1 {
				got = c.ZKAuth[0].Scheme + ":" + c.ZKAuth[0].Credential
			}
			if got != tc.auth {
				t.Errorf("auth %q, want %q", got, tc.auth)
			}
			if (c.ZKTLS != nil) != tc.tls {
				t.Fatalf("TLS %v, want on=%t", c.ZKTLS, tc.tls)
			}
			if c.ZKTLS != nil && (c.ZKTLS.InsecureSkipVerify != tc.skip || (c.ZKTLS.RootCAs != nil) != tc.roots) {
				t.Errorf("TLS skip=%t roots=%t, want %t %t", c.ZKTLS.InsecureSkipVerify, c.ZKTLS.RootCAs != nil, tc.skip, tc.roots)
			}
		})
	}
}

// selfSigned is a PEM certificate, enough for the parser.
func selfSigned(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// Package catest holds testca's test helpers, which fail the test instead of
// returning an error. It is imported only from tests, so the binary does not
// link package testing.
package catest

import (
	"testing"

	"github.com/zklockviz/zklockviz/testca"
)

// New is testca.New that fails t on error.
func New(t testing.TB, name string) *testca.CA {
	t.Helper()
	ca, err := testca.New(name)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// Cert is ca.WriteCert that fails t on error.
func Cert(t testing.TB, ca *testca.CA, dir, name string) (certFile, keyFile string) {
	t.Helper()
	certFile, keyFile, err := ca.WriteCert(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestNoTesting fails when the binary links package testing: test helpers
// belong in test-only packages (localproc/proctest, zookeeper/zklocal/zktest,
// ...), not in the production packages the binary imports.
func TestNoTesting(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}} {{join .Imports " "}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	var importers []string
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) > 0 && slices.Contains(fields[1:], "testing") {
			importers = append(importers, fields[0])
		}
	}
	if len(importers) > 0 {
		t.Errorf("the binary links package testing, imported by %v: move test helpers to a package only tests import", importers)
	}
}

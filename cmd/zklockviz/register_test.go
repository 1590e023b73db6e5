package main

import (
	"strings"
	"testing"
)

// Every service of classServices is one `sim --service` away: its help
// names it and its built-ins, an unknown scenario lists its own built-ins
// (exit 2, before any server starts), and an unknown service lists them all.
func TestSimEveryServiceFromOneTable(t *testing.T) {
	_, help, _ := runBinary(t, nil, "sim", "--help")
	for _, svc := range classServices {
		t.Run(svc.name, func(t *testing.T) {
			names := svc.catalog.Names()
			if len(names) == 0 {
				t.Fatalf("%s has no built-in scenarios", svc.name)
			}
			for _, n := range append([]string{svc.name}, names...) {
				if !strings.Contains(help, n) {
					t.Errorf("sim --help does not name %s", n)
				}
			}
			code, _, stderr := runBinary(t, nil, "sim", "--service", svc.name, "--zk", "127.0.0.1:1", "--scenario", "no-such-scenario")
			if want := strings.Join(names, ", "); code != 2 || !strings.Contains(stderr, want) {
				t.Errorf("unknown scenario: exit %d, stderr %q; want 2 listing %s", code, stderr, want)
			}
		})
	}
	code, _, stderr := runBinary(t, nil, "sim", "--service", "mongodb", "--scenario", "x")
	if want := `--service "mongodb": want zookeeper, redis, etcd or postgres`; code != 2 || !strings.Contains(stderr, want) {
		t.Errorf("unknown service: exit %d, stderr %q; want 2 saying %q", code, stderr, want)
	}
}

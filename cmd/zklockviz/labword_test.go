package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/lab"
	"github.com/zklockviz/zklockviz/lab/word"
)

// zklockviz's word on the real thing: the lab on each service, its
// throwaway server, pauses and kills, with serve's reader and history
// recording the lock as a user's serve would. Its history agrees with the
// clients' log (lab/word's rules): no mismatch, exit status 0, and grants
// were checked, not all let off as too short for a read. Each client told
// its request before each grant, and the grant's holder.
func TestLabWord(t *testing.T) {
	for _, service := range []string{"zookeeper", "redis", "etcd", "postgres"} {
		t.Run(service, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runBinary(t, nil, "lab", "--json", "--service", service, "--clients", "3", "--duration", "8s",
				"--nemesis", "pause,kill", "--every", "1s", "--session", "1s", "--hold", "100ms")
			if code != 0 && strings.Contains(stderr, "is not installed") && os.Getenv("CI") != "true" {
				t.Skip(stderr)
			}
			var out struct {
				Report lab.Report   `json:"report"`
				Events []lab.Event  `json:"events"`
				Word   *word.Result `json:"word"`
			}
			if err := json.Unmarshal([]byte(stdout), &out); err != nil || out.Word == nil {
				t.Fatalf("exit %d, no word in the report (%v)\n%s\n%s", code, err, stdout, stderr)
			}
			if w := out.Word; code != 0 || len(w.Mismatches) != 0 || w.Checked == 0 {
				t.Errorf("exit %d; %s", code, w)
			}
			if out.Report.Faults[string(lab.Paused)] == 0 || out.Report.Faults[string(lab.Killed)] == 0 {
				t.Errorf("faults %v: want pauses and kills", out.Report.Faults)
			}
			asked := map[string]bool{}
			for _, e := range sortedEvents(out.Events) {
				switch e.Kind {
				case lab.Requested:
					asked[e.Client] = true
				case lab.Acquired:
					if !asked[e.Client] || e.Holder == "" {
						t.Fatalf("%s acquired at %s by %q, asked before: %v", e.Client, e.At.Format("15:04:05.000"), e.Holder, asked[e.Client])
					}
					asked[e.Client] = false
				}
			}
		})
	}
}

// A run with the check off has no word; a bad --word is refused.
func TestLabWordFlag(t *testing.T) {
	if code, _, stderr := runBinary(t, nil, "lab", "--word", "maybe"); code != 2 || !strings.Contains(stderr, `--word "maybe": want on or off`) {
		t.Errorf("--word maybe: exit %d, %s", code, stderr)
	}
	zks := sharedZK(t)
	code, stdout, stderr := runBinary(t, nil, "lab", "--zk", zks.Addr(), "--path", "/lab-word-off/lock", "--clients", "2",
		"--duration", "1s", "--nemesis", "none", "--word", "off")
	if code != 0 || strings.Contains(stdout, "zklockviz's word") || strings.Contains(stderr, "zklockviz's word") {
		t.Errorf("--word off: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = runBinary(t, nil, "lab", "--zk", zks.Addr(), "--path", "/lab-word-on/lock", "--clients", "2",
		"--duration", "2s", "--nemesis", "none", "--hold", "600ms")
	if code != 0 || !strings.Contains(stdout, "zklockviz's word: ") || !strings.Contains(stdout, " grants checked, 0 mismatches") {
		t.Errorf("the word in the report: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

package zksim

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/simulator"
)

// narratedCount reads back the notification count a step's narration
// states: "(3 notifications)", or none when it says nobody was notified.
var narratedCountRE = regexp.MustCompile(`\((\d+) notifications?\)`)

var wastedSaidRE = regexp.MustCompile(`(\d+) woke for nothing`)

func narratedCount(narration string) (int, bool) {
	ms := narratedCountRE.FindAllStringSubmatch(narration, -1)
	if len(ms) == 0 {
		return 0, false
	}
	total := 0
	for _, m := range ms {
		n, _ := strconv.Atoi(m[1])
		total += n
	}
	return total, true
}

// TestNarrationMatchesMeters replays every built-in scenario under both
// strategies through the CLI and checks, step by step, that the narration,
// the event log, the text timeline's rows and the notifications meter tell
// the same story: the count the narration states is the meter's change,
// which is the number of notify events, and every notified client is named.
func TestNarrationMatchesMeters(t *testing.T) {
	files, err := filepath.Glob("scenarios/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("built-in scenarios: %v (%d files)", err, len(files))
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		for _, st := range []simulator.Strategy{simulator.Herd, simulator.Predecessor} {
			t.Run(name+"/"+string(st), func(t *testing.T) {
				args := []string{"--scenario", name, "--strategy", string(st)}
				if name == "herd" {
					args = append(args, "--clients", "5")
				}
				rep := simJSON(t, 0, args...)
				if len(rep.Steps) == 0 {
					t.Fatal("no steps")
				}
				total := 0
				for _, step := range rep.Steps {
					var evs []simulator.Event
					rows := 0 // notifications the text timeline's rows tell
					for _, e := range rep.Events {
						switch {
						case e.Step != step.Step:
						case e.Event == simulator.EvNotify:
							evs = append(evs, e)
						default:
							rows += len(e.Notified) + strings.Count(e.Text, "its own children watch fired")
						}
					}
					meter := step.Stats.Notifications
					total += meter
					if len(evs) != meter {
						t.Errorf("step %d: %d notify events in the log, the meter moved by %d", step.Step, len(evs), meter)
					}
					if rows != meter {
						t.Errorf("step %d: the text timeline's rows tell %d notifications, the meter moved by %d", step.Step, rows, meter)
					}
					said, stated := narratedCount(step.Narration)
					if said != meter {
						t.Errorf("step %d: narration says %d notifications (stated: %v), the meter moved by %d: %q", step.Step, said, stated, meter, step.Narration)
					}
					// "N woke for nothing" is the wasted wake-ups meter's
					// change (it once left out the releasing client's own).
					if m := wastedSaidRE.FindStringSubmatch(step.Narration); m != nil {
						if n, _ := strconv.Atoi(m[1]); n != step.Stats.WastedWakeups {
							t.Errorf("step %d: narration says %d woke for nothing, the wasted meter moved by %d: %q", step.Step, n, step.Stats.WastedWakeups, step.Narration)
						}
					}
					if meter > 0 && strings.Contains(step.Narration, "nobody was notified") {
						t.Errorf("step %d: narration says nobody was notified, the meter moved by %d: %q", step.Step, meter, step.Narration)
					}
					for _, e := range evs {
						if !strings.Contains(step.Narration, e.Client) {
							t.Errorf("step %d: %s was notified (%s) but the narration does not name it: %q", step.Step, e.Client, e.Text, step.Narration)
						}
					}
				}
				if total != rep.Stats.Notifications {
					t.Errorf("steps add up to %d notifications, the run's meter says %d", total, rep.Stats.Notifications)
				}
			})
		}
	}
}

// TestHerdScenarioCount runs the herd scenario for several N and checks the
// exact counts its description states: N²−N+1 notifications with herd
// watching, N−1 with predecessor watching.
func TestHerdScenarioCount(t *testing.T) {
	m := newManager(t, simulator.ManagerConfig{})
	var desc string
	for _, sc := range m.Scenarios() {
		if sc.Name == "herd" {
			desc = sc.Description
		}
	}
	for _, want := range []string{"N²−N+1", "N−1", "381 for N = 20"} {
		if !strings.Contains(desc, want) {
			t.Errorf("herd description %q does not state %q", desc, want)
		}
	}
	for _, n := range []int{2, 3, 5, 8} {
		for _, tt := range []struct {
			st   simulator.Strategy
			want int
		}{{simulator.Herd, n*n - n + 1}, {simulator.Predecessor, n - 1}} {
			t.Run(fmt.Sprintf("%s/N=%d", tt.st, n), func(t *testing.T) {
				rep := simJSON(t, 0, "--scenario", "herd", "--strategy", string(tt.st), "--clients", strconv.Itoa(n))
				if got := rep.Stats.Notifications; got != tt.want {
					t.Errorf("N=%d %s: %d notifications, the description says %d", n, tt.st, got, tt.want)
				}
			})
		}
	}
}

package zksim

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/simulator"
)

func TestBuiltinsPlan(t *testing.T) {
	want := map[string]int{"lock1-5": 10, "herd": 40, "ha-standby": 6, "session-expiry": 8, "gc-pause": 10, "zk-side-by-side": 13, "zk-deadlock": 7}
	names := Catalog.Names()
	if len(names) != len(want) {
		t.Errorf("built-ins %v, want %d of them", names, len(want))
	}
	for _, n := range names {
		sc, ok := Catalog.Builtin(n)
		if !ok {
			t.Fatalf("Builtin(%q) missing", n)
		}
		plan, err := plan(sc, 0)
		if err != nil {
			t.Errorf("%s: %v", n, err)
			continue
		}
		if len(plan) != want[n] {
			t.Errorf("%s: %d steps, want %d", n, len(plan), want[n])
		}
	}
	sc, _ := Catalog.Builtin("herd")
	plan, err := plan(sc, 3)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range plan {
		got = append(got, a.Action+" "+a.Client)
	}
	if w := "add C01,add C02,add C03,release C01,release C02,release C03"; strings.Join(got, ",") != w {
		t.Errorf("herd for 3 clients = %s, want %s", strings.Join(got, ","), w)
	}
}

// TestPlanErrors: the dry run of the holding logic catches steps that do
// not fit the ones before them, and says so in the plan's terms: never who
// holds instead, whom a client waits for or whose session expired, which a
// lab asks students to predict (simulator.NoLock).
func TestPlanErrors(t *testing.T) {
	tests := []struct {
		name  string
		lock  simulator.LockKind
		steps string
		want  string
	}{
		{"release by a waiter", simulator.RW, "A add-reader, B add-writer, B release", "step 3: release B: the plan gives B no lock to release at that step"},
		{"write by a waiter", simulator.ExclusiveLock, "A add, B add, B write", "step 3: write B: the plan gives B no lock to write under at that step"},
		{"release by a standby", simulator.LeaseLock, "A add, B add, B release", "step 3: release B: the plan gives B no lock to release at that step"},
		{"unknown client", simulator.RW, "A add-reader, Z release", "step 2: release Z: unknown client Z"},
		{"added twice", simulator.RW, "A add-reader, A add-writer", "step 2: add-writer A: A is already in this run"},
		{"released twice", simulator.ExclusiveLock, "A add, A release, A release", "A has already released (step 2)"},
		{"crashed then released", simulator.ExclusiveLock, "A add, A crash, A release", "A crashed at step 2"},
		{"paused waiter acts", simulator.ExclusiveLock, "A add, B add, B pause, B release", "step 4: release B: B was paused at step 3 with no lock, so the plan gives it nothing more to do"},
		{"paused holder pauses again", simulator.ExclusiveLock, "A add, A pause, A pause", "step 3: pause A: A was paused already at step 2 and has not come back"},
		// A split plan (expire steps): the cut client waits for its expiry,
		// a wake follows an expiry, a resume a pause's expiry.
		{"cut holder writes before its expiry", simulator.ExclusiveLock, "A add, B add, A pause, A write, A expire", "step 4: write A: A is cut off (step 3): its expire step must come first"},
		{"expire without a cut", simulator.ExclusiveLock, "A add, A expire", "A has no cut-off session to expire"},
		{"wake without an expiry", simulator.ExclusiveLock, "A add, B add, B wake, A crash, A expire", "step 3: wake B: no expiry has notified anyone yet"},
		{"lapsed holder writes before its resume", simulator.ExclusiveLock, "A add, B add, A pause, A expire, B wake, A write", "only resume can follow"},
		{"crashed client resumes", simulator.ExclusiveLock, "A add, A crash, A expire, A resume", "A crashed at step 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := &simulator.Scenario{Name: "t", Lock: tt.lock, Steps: parseSteps(tt.steps)}
			if tt.lock == simulator.LeaseLock {
				sc.Leases = 1
			}
			b, err := json.Marshal(sc)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := simulator.ParseScenario(b); err != nil {
				t.Fatalf("check: %v", err)
			}
			_, err = plan(sc, 0)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Plan error %v, want one containing %q", err, tt.want)
			}
			for _, answer := range []string{"waits for", "stands by", "does not hold", "holds nothing", "holds the lock", "session expired", "has already expired"} {
				if err != nil && strings.Contains(err.Error(), answer) {
					t.Errorf("Plan error %q gives an answer away (%q)", err, answer)
				}
			}
		})
	}

	// A paused holder comes back believing it holds: it may still write
	// and release (the resource and the checker judge the write).
	sc := &simulator.Scenario{Name: "t", Lock: simulator.ExclusiveLock, Steps: parseSteps("A add, B add, A pause, A write, B write, A release, B release")}
	if _, err := plan(sc, 0); err != nil {
		t.Errorf("stale holder's plan: %v", err)
	}
	// Split, the same story: the stale holder writes after its resume.
	sc = &simulator.Scenario{Name: "t", Lock: simulator.ExclusiveLock, Steps: parseSteps("A add, B add, A pause, A expire, B wake, A resume, A write, B write, A release, B release")}
	if _, err := plan(sc, 0); err != nil {
		t.Errorf("split stale holder's plan: %v", err)
	}
	sc = &simulator.Scenario{Name: "t", Lock: simulator.ExclusiveLock, Steps: parseSteps("C add, * add")}
	if _, err := plan(sc, 0); err == nil || !strings.Contains(err.Error(), "need a client count") {
		t.Errorf("wildcard without a count: %v", err)
	}
}

func TestRecipeLines(t *testing.T) {
	for _, lock := range []simulator.LockKind{simulator.RW, simulator.ExclusiveLock, simulator.LeaseLock} {
		for _, st := range []simulator.Strategy{simulator.Herd, simulator.Predecessor} {
			r := recipeFor(lock, st)
			for _, l := range []int{r.create, r.children, r.hold, r.watch, r.wait, r.write, r.release} {
				if l < 1 || l > len(r.Lines) {
					t.Errorf("%s/%s: line %d outside 1..%d", lock, st, l, len(r.Lines))
				}
			}
			if lock == simulator.LeaseLock && r.Strategy != simulator.Children {
				t.Errorf("lease standbys follow %q, want %q", r.Strategy, simulator.Children)
			}
		}
	}
}

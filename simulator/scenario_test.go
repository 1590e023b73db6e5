package simulator

import (
	"errors"
	"strings"
	"testing"
)

func TestBuiltinsPlan(t *testing.T) {
	want := map[string]int{"lock1-5": 10, "herd": 40, "ha-standby": 6, "session-expiry": 6, "gc-pause": 7, "zk-side-by-side": 13}
	names := ZooKeeperCatalog.Names()
	if len(names) != len(want) {
		t.Errorf("built-ins %v, want %d of them", names, len(want))
	}
	for _, n := range names {
		sc, ok := ZooKeeperCatalog.Builtin(n)
		if !ok {
			t.Fatalf("Builtin(%q) missing", n)
		}
		plan, err := sc.Plan(0)
		if err != nil {
			t.Errorf("%s: %v", n, err)
			continue
		}
		if len(plan) != want[n] {
			t.Errorf("%s: %d steps, want %d", n, len(plan), want[n])
		}
	}
	sc, _ := ZooKeeperCatalog.Builtin("herd")
	plan, err := sc.Plan(3)
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

func TestScenarioErrors(t *testing.T) {
	const head = `{"name":"x","lock":"rw","steps":[`
	tests := []struct {
		name, json, want string
	}{
		{"syntax", "{\n\"lock\": \"rw\",\n\"steps\": [}", "line 3"},
		{"unknown field", `{"lock":"rw","steps":[{"client":"A","acton":"add-reader"}]}`, `unknown field "acton"`},
		{"trailing data", `{"lock":"rw","steps":[{"client":"A","action":"add-reader"}]} {}`, "after the scenario"},
		{"missing lock", `{"steps":[{"client":"A","action":"add"}]}`, "missing lock"},
		{"bad lock", `{"lock":"semaphore","steps":[{"client":"A","action":"add"}]}`, `bad lock "semaphore"`},
		{"lease without leases", `{"lock":"lease","steps":[{"client":"A","action":"add"}]}`, "leases >= 1"},
		{"leases on rw", `{"lock":"rw","leases":2,"steps":[{"client":"A","action":"add-reader"}]}`, "leases is only"},
		{"bad strategy", `{"lock":"rw","strategy":"fast","steps":[{"client":"A","action":"add-reader"}]}`, `bad strategy "fast"`},
		{"no steps", `{"lock":"rw","steps":[]}`, "no steps"},
		{"missing action", head + `{"client":"A"}]}`, "step 1: missing action"},
		{"unknown action", head + `{"client":"A","action":"acquire"}]}`, `step 1: unknown action "acquire"`},
		{"missing client", head + `{"action":"add-reader"}]}`, "step 1: add-reader: missing client"},
		{"bad client name", head + `{"client":"a b","action":"add-reader"}]}`, `bad client name "a b"`},
		{"bad mode", `{"lock":"exclusive","steps":[{"client":"A","action":"add-reader"}]}`, "an exclusive lock has no readers"},
		{"add on rw", head + `{"client":"A","action":"add"}]}`, "needs add-reader or add-writer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseScenario([]byte(tt.json))
			if err == nil {
				t.Fatalf("no error, want one containing %q", tt.want)
			}
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q (invalid: %v), want one containing %q", err, errors.Is(err, ErrInvalid), tt.want)
			}
		})
	}
}

// TestPlanErrors: the dry run of the holding logic catches steps that do
// not fit the ones before them.
func TestPlanErrors(t *testing.T) {
	tests := []struct {
		name  string
		lock  LockKind
		steps string
		want  string
	}{
		{"release by a waiter", RW, "A add-reader, B add-writer, B release", "step 3: release B: B holds nothing: it waits for A"},
		{"write by a waiter", ExclusiveLock, "A add, B add, B write", "step 3: write B: B does not hold the lock: it waits for A"},
		{"release by a standby", LeaseLock, "A add, B add, B release", "B holds nothing: it stands by"},
		{"unknown client", RW, "A add-reader, Z release", "step 2: release Z: unknown client Z"},
		{"added twice", RW, "A add-reader, A add-writer", "step 2: add-writer A: A is already in this run"},
		{"released twice", ExclusiveLock, "A add, A release, A release", "A has already released (step 2)"},
		{"crashed then released", ExclusiveLock, "A add, A crash, A release", "A crashed at step 2"},
		{"paused waiter acts", ExclusiveLock, "A add, B add, B pause, B release", "B's session expired at step 3"},
		{"paused holder pauses again", ExclusiveLock, "A add, A pause, A pause", "A's session has already expired (step 2)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := &Scenario{Name: "t", Lock: tt.lock, Steps: parseSteps(tt.steps)}
			if tt.lock == LeaseLock {
				sc.Leases = 1
			}
			if err := sc.check(); err != nil {
				t.Fatalf("check: %v", err)
			}
			_, err := sc.Plan(0)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Plan error %v, want one containing %q", err, tt.want)
			}
		})
	}

	// A paused holder comes back believing it holds: it may still write
	// and release (the resource and the checker judge the write).
	sc := &Scenario{Name: "t", Lock: ExclusiveLock, Steps: parseSteps("A add, B add, A pause, A write, B write, A release, B release")}
	if _, err := sc.Plan(0); err != nil {
		t.Errorf("stale holder's plan: %v", err)
	}
	sc = &Scenario{Name: "t", Lock: ExclusiveLock, Steps: parseSteps("C add, * add")}
	if _, err := sc.Plan(0); err == nil || !strings.Contains(err.Error(), "need a client count") {
		t.Errorf("wildcard without a count: %v", err)
	}
}

// parseSteps reads "A add-reader, B release".
func parseSteps(s string) []Action {
	var out []Action
	for _, part := range strings.Split(s, ",") {
		f := strings.Fields(part)
		out = append(out, Action{Client: f[0], Action: f[1]})
	}
	return out
}

func TestRecipeLines(t *testing.T) {
	for _, lock := range []LockKind{RW, ExclusiveLock, LeaseLock} {
		for _, st := range []Strategy{Herd, Predecessor} {
			r := RecipeFor(lock, st)
			for _, l := range []int{r.create, r.children, r.hold, r.watch, r.wait, r.write, r.release} {
				if l < 1 || l > len(r.Lines) {
					t.Errorf("%s/%s: line %d outside 1..%d", lock, st, l, len(r.Lines))
				}
			}
			if lock == LeaseLock && r.Strategy != Children {
				t.Errorf("lease standbys follow %q, want %q", r.Strategy, Children)
			}
		}
	}
}

func TestFreeName(t *testing.T) {
	tests := []struct {
		prefix, plan, want string
	}{
		{"LOCK", "LOCK1 add-reader, LOCK2 add-writer, LOCK5 add-reader", "LOCK6"},
		{"C", "C01 add, C02 add, C20 add, C01 release", "C21"},
		{"C", "X add", "C1"},
	}
	for _, tt := range tests {
		r := &Run{sc: &Scenario{ClientPrefix: tt.prefix}}
		if got := r.freeName(parseSteps(tt.plan)); got != tt.want {
			t.Errorf("freeName(%q) = %q, want %q", tt.plan, got, tt.want)
		}
	}
}

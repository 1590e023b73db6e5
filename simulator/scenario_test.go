package simulator

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/lockqueue"
)

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

// parseSteps reads "A add-reader, B release".
func parseSteps(s string) []Action {
	var out []Action
	for _, part := range strings.Split(s, ",") {
		f := strings.Fields(part)
		out = append(out, Action{Client: f[0], Action: f[1]})
	}
	return out
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

func TestLockKindModes(t *testing.T) {
	for _, tc := range []struct {
		kind LockKind
		want []lockqueue.Mode
	}{
		{RW, []lockqueue.Mode{lockqueue.Read, lockqueue.Write}},
		{ExclusiveLock, []lockqueue.Mode{lockqueue.Exclusive}},
		{LeaseLock, []lockqueue.Mode{lockqueue.Lease}},
	} {
		if got := tc.kind.Modes(); !slices.Equal(got, tc.want) {
			t.Errorf("%s: modes %v, want %v", tc.kind, got, tc.want)
		}
	}
}

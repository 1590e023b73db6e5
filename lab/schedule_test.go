package lab

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// A schedule written is read back the same, and the planner's schedule
// is a valid one.
func TestScheduleRoundTrip(t *testing.T) {
	plan := Plan(Config{Seed: 7, Nemesis: []string{Pause, Kill}, Every: 2 * time.Second, Duration: 20 * time.Second, PauseFor: 2500 * time.Millisecond})
	for _, s := range [][]Fault{plan, {}} {
		got, err := ParseSchedule(MarshalSchedule(s))
		if err != nil || !slices.Equal(got, s) {
			t.Errorf("read back %v, %v; want %v", got, err, s)
		}
	}
	if n := strings.Count(string(MarshalSchedule(plan)), "\n"); n != len(plan)+2 {
		t.Errorf("%d lines for %d faults: want one a fault", n, len(plan))
	}
}

func TestParseSchedule(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []Fault
		err  string
	}{
		{`[{"at": "2s", "kind": "pause", "pick": 3, "for": "2.5s"}, {"at": 4000000000, "kind": "kill"}]`,
			[]Fault{{At: 2 * time.Second, Kind: Pause, Pick: 3, For: 2500 * time.Millisecond}, {At: 4 * time.Second, Kind: Kill}}, ""},
		{`[]`, []Fault{}, ""},
		{``, nil, "the file is empty"},
		{`{"at": 1}`, nil, "want a JSON list"},
		{`[{"at": 1, "kind": "pause", "for": 1, "whom": "c1"}]`, nil, `unknown field "whom"`},
		{`[{"at": "soon", "kind": "kill"}]`, nil, `fault 1: at: "soon": want a duration`},
		{`[{"at": 1, "kind": "meteor"}]`, nil, `fault 1: unknown kind "meteor": want one of ` + strings.Join(Nemeses, ", ")},
		{`[{"at": "-1s", "kind": "kill"}]`, nil, "at -1s: want 0 or more"},
		{`[{"at": "2s", "kind": "kill"}, {"at": "1s", "kind": "kill"}]`, nil, "fault 2 at 1s comes before fault 1 at 2s"},
		{`[{"at": "2s", "kind": "pause"}]`, nil, "a pause for 0s: want a positive duration"},
		{`[{"at": "2s", "kind": "kill", "pick": -1}]`, nil, "pick -1"},
	} {
		got, err := ParseSchedule([]byte(tc.in))
		switch {
		case tc.err == "" && (err != nil || !slices.Equal(got, tc.want)):
			t.Errorf("%s: %v, %v; want %v", tc.in, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v; want one saying %q", tc.in, err, tc.err)
		}
	}
}

func TestFormatSchedule(t *testing.T) {
	got := FormatSchedule([]Fault{{At: 2 * time.Second, Kind: Pause, Pick: 3, For: 2500 * time.Millisecond}, {At: 4 * time.Second, Kind: Kill}})
	want := "  at 2s: pause (pick 3) for 2.5s\n  at 4s: kill (pick 0)\n"
	if got != want || FormatSchedule(nil) != "  no faults\n" {
		t.Errorf("got %q, want %q", got, want)
	}
	if end := ScheduleEnd([]Fault{{At: 5 * time.Second, Kind: Pause, For: 3 * time.Second}, {At: 6 * time.Second, Kind: Kill}}); end != 8*time.Second {
		t.Errorf("end %v, want 8s", end)
	}
}

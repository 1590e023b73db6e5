package simulator

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/simulator/timespacetest"
)

// TestWriteSVGEdges: a report with nothing recorded yet (a run exported
// before its first step), and one whose names need escaping, still draw a
// well-formed diagram with its lanes. The drawing of real runs is tested
// where they run (cmd's TestSimSVG, web's TestClassroomTimeSpace).
func TestWriteSVGEdges(t *testing.T) {
	tests := []struct {
		name    string
		rep     Report
		clients []string
		texts   []string
		// violations is how many intervals are shaded.
		violations int
	}{
		{
			name: "nothing recorded",
			rep:  Report{Scenario: "lock1-5", Title: "LOCK1–LOCK5", Events: []Event{}, Steps: []StepInfo{}, Violations: []Violation{}},
		},
		{
			name: "names to escape",
			rep: Report{
				Scenario: "x", Title: `a <b> & "c"`,
				Events: []Event{{Step: 1, Client: "<C1>", Event: EvLock, Text: `granted & "held"`}, {Step: 2, Client: "<C1>", Event: "odd-kind", Text: "?"}},
				Steps: []StepInfo{
					{Step: 1, ClockMs: 1200, Clients: []ClientInfo{{Name: "<C1>", State: StateHolding, Token: 7}}},
					{Step: 2, ClockMs: 2400, Clients: []ClientInfo{{Name: "<C1>", State: StateHolding, Token: 7}}},
				},
				Violations: []Violation{{Kind: "overlap", Steps: []int{1, 9}, Clients: []string{"<C1>"}}},
			},
			clients:    []string{"<C1>"},
			texts:      []string{"granted, token 7", "odd-kind"},
			violations: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteSVG(&b, tt.rep); err != nil {
				t.Fatal(err)
			}
			d, err := timespacetest.Parse(b.Bytes())
			if err != nil {
				t.Fatalf("%v\n%s", err, b.String())
			}
			if got := d.LanesOf("client"); !slices.Equal(got, tt.clients) {
				t.Errorf("client lanes %v, want %v", got, tt.clients)
			}
			if !strings.HasPrefix(d.Title, tt.rep.Title) || len(d.LanesOf("server")) != 1 {
				t.Errorf("title %q, lanes %v", d.Title, d.Lanes)
			}
			for _, want := range tt.texts {
				if !slices.Contains(d.Texts, want) {
					t.Errorf("no label %q in %v", want, d.Texts)
				}
			}
			// A violation whose steps were not all recorded is shaded up
			// to the last recorded one.
			if d.Marks["violation"] != tt.violations {
				t.Errorf("%d violation intervals, want %d", d.Marks["violation"], tt.violations)
			}
		})
	}
}

// TestWriteSVGTooLarge: a run of more clients than a diagram can show is
// refused with a conflict that says why, and writes nothing.
func TestWriteSVGTooLarge(t *testing.T) {
	var clients []ClientInfo
	for i := range MaxDrawClients + 1 {
		clients = append(clients, ClientInfo{Name: fmt.Sprintf("C%d", i), State: StateWaiting})
	}
	rep := Report{Scenario: "herd", Steps: []StepInfo{{Step: 1, ClockMs: 1200, Clients: clients}}}
	var b bytes.Buffer
	err := WriteSVG(&b, rep)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "51 clients") || b.Len() != 0 {
		t.Errorf("error %v, %d bytes written; want a conflict naming 51 clients, nothing written", err, b.Len())
	}
}

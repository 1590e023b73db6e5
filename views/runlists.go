package views

import (
	"strings"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// RunState is what a classroom run's lists show of its state (read from
// simulator.State's JSON: the web server hands states on as they are): the
// clients, the events up to the step shown and the recipe's pseudocode.
// The server renders the lists (RunClients, RunEvents, RunPseudocode) and
// the panel only swaps them in.
type RunState struct {
	Step       int `json:"step"`
	Line       int `json:"line"`
	Pseudocode struct {
		Lines []string `json:"lines"`
	} `json:"pseudocode"`
	Events  []RunEvent  `json:"events"`
	Clients []RunClient `json:"clients"`
}

// RunEvent is one line of a run's event log.
type RunEvent struct {
	Step   int    `json:"step"`
	Kind   string `json:"kind"`
	Client string `json:"client"`
	Text   string `json:"text"`
}

// RunClient is one client of a run, as its button shows it.
type RunClient struct {
	Name     string         `json:"name"`
	Mode     lockqueue.Mode `json:"mode"`
	State    string         `json:"state"`
	WaitsFor string         `json:"waitsFor"`
	Polling  bool           `json:"polling"`
	Retries  int            `json:"retries"`
}

// shown are the events of the steps up to the one shown; a run's events
// are in step order.
func (s RunState) shown() []RunEvent {
	for i, e := range s.Events {
		if e.Step > s.Step {
			return s.Events[:i]
		}
	}
	return s.Events
}

// said is an event's own words, as the text timeline prints them, after
// its kind; empty when it has none.
func (e RunEvent) said() string {
	switch {
	case e.Text == "":
		return ""
	case e.Client == "":
		return " " + e.Text
	}
	return " " + e.Client + ": " + e.Text
}

// stateText is a client's mode and state, those it has.
func (c RunClient) stateText() string {
	var out []string
	if c.Mode != "" {
		out = append(out, ModeLabel(c.Mode))
	}
	if c.State != "" {
		out = append(out, c.State)
	}
	return strings.Join(out, " · ")
}

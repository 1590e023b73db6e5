package views

import (
	"strings"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// RunState is what a classroom run's panel shows of its state as the
// server renders it (read from simulator.State's JSON: the web server
// hands states on as they are): the narration, the clients, the events up
// to the step shown, the recipe's pseudocode, the meters and what its
// servers hold. The panel only swaps them in (RunParts).
type RunState struct {
	// Service is the run's service as the classroom API names it (empty:
	// the default).
	Service    string `json:"service"`
	Step       int    `json:"step"`
	Line       int    `json:"line"`
	Narration  string `json:"narration"`
	Violations []struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
		Said    string `json:"said"`
	} `json:"violations"`
	Error      string `json:"error"`
	Pseudocode struct {
		Lines []string `json:"lines"`
	} `json:"pseudocode"`
	Events  []RunEvent  `json:"events"`
	Clients []RunClient `json:"clients"`
	// Stats count what the run's clients sent, LastRelease the same for
	// the latest release alone (nil before one); Fencing says whether its
	// resource checks the clients' tokens; Servers are what its
	// servers hold beyond the lane at ClockMs, the run's time shown.
	Fencing     bool        `json:"fencing"`
	Stats       RunStats    `json:"stats"`
	LastRelease RunStats    `json:"lastRelease"`
	Servers     *RunServers `json:"servers"`
	ClockMs     int64       `json:"clockMs"`
	// Verdict and Meters are what a side-by-side pane shows of the run
	// (simulator.Verdict, simulator.Meters).
	Verdict struct {
		Exclusion  string `json:"exclusion"`
		StaleWrite string `json:"staleWrite"`
		Summary    string `json:"summary"`
	} `json:"verdict"`
	Meters struct {
		Requests      int     `json:"requests"`
		RequestsFrom  string  `json:"requestsFrom"`
		PerSec        float64 `json:"perSec"`
		Notifications int     `json:"notifications"`
		HandoffMs     int64   `json:"handoffMs"`
	} `json:"meters"`
	// Cycle is the wait cycle across a scene's locks, by its nodes.
	Cycle *struct {
		Nodes   []string `json:"nodes"`
		Message string   `json:"message"`
	} `json:"cycle"`
}

// cycleNames are the members of the run's wait cycle named by their
// clients (a node without one by its own name).
func (s RunState) cycleNames() []string {
	if s.Cycle == nil {
		return nil
	}
	names := make([]string, len(s.Cycle.Nodes))
	for i, n := range s.Cycle.Nodes {
		names[i] = n
		for _, c := range s.Clients {
			if c.Node == n && n != "" {
				names[i] = c.Name
			}
		}
	}
	return names
}

// RunEvent is one line of a run's event log; Notified are the clients it
// woke.
type RunEvent struct {
	Step     int      `json:"step"`
	Kind     string   `json:"kind"`
	Client   string   `json:"client"`
	Text     string   `json:"text"`
	Notified []string `json:"notified"`
}

// RunClient is one client of a run, as its button shows it, and its lock
// node.
type RunClient struct {
	Name     string         `json:"name"`
	Node     string         `json:"node"`
	Mode     lockqueue.Mode `json:"mode"`
	State    string         `json:"state"`
	WaitsFor string         `json:"waitsFor"`
	Polling  bool           `json:"polling"`
	Retries  int            `json:"retries"`
	Session  string         `json:"session"`
	Token    int64          `json:"token"`
	JoinedMs int64          `json:"joinedMs"`
}

// narrative is what the step shown did, or before the first that the run
// is ready.
func (s RunState) narrative() string {
	if s.Narration == "" && s.Step == 0 {
		return "Ready. Press Space to play or → to take one step."
	}
	return s.Narration
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

package simulator

import (
	"cmp"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// Report is a whole run's timeline, as `zklockviz sim` prints it.
type Report struct {
	// Service is empty for ZooKeeper (see State.Service).
	Service          string      `json:"service,omitempty"`
	Scenario         string      `json:"scenario"`
	Title            string      `json:"title"`
	Strategy         Strategy    `json:"strategy"`
	Lock             LockKind    `json:"lock"`
	Leases           int         `json:"leases,omitempty"`
	Fencing          bool        `json:"fencing"`
	Path             string      `json:"path"`
	SessionTimeoutMs int64       `json:"sessionTimeoutMs"`
	Events           []Event     `json:"events"`
	Steps            []StepInfo  `json:"steps"`
	Stats            Stats       `json:"stats"`
	Violations       []Violation `json:"violations"`
	Verdict          Verdict     `json:"verdict"`
	Meters           Meters      `json:"meters"`
	Pseudocode       []string    `json:"pseudocode"`
	Error            string      `json:"error,omitempty"`
	// words are its backend's (WriteText); a decoded report has the
	// neutral ones.
	words RunWords
	// server and token are how the time–space diagram names the lock
	// server ("ZooKeeper") and words a token (ZooKeeper's in hex); a
	// decoded report has neither and is drawn with neutral words.
	server string
	token  func(int64) string
}

// StepInfo is one step of a Report.
type StepInfo struct {
	Step      int    `json:"step"`
	Client    string `json:"client"`
	Action    string `json:"action"`
	Narration string `json:"narration"`
	Line      int    `json:"line"`
	// Stats is what this step cost.
	Stats Stats `json:"stats"`
	// ClockMs is the run's clock at the end of the step (State.ClockMs),
	// and Clients every client as the step left it: what the time–space
	// diagram draws the step from. Clients stays out of the JSON: a herd of
	// a thousand clients would repeat them in each of its 2000 steps.
	ClockMs int64        `json:"clockMs"`
	Clients []ClientInfo `json:"-"`
}

// Report is the run's recorded history, all of it, whatever step is shown.
func (r *Run) Report() Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	rc := r.m.backend.Recipe(r.sc, r.strategy)
	last := r.records[len(r.records)-1]
	rep := Report{
		Scenario: r.sc.Name, Title: cmp.Or(r.sc.Title, r.sc.Name), Strategy: rc.Strategy, Lock: r.sc.Lock, Leases: r.sc.Leases,
		Fencing: r.fencing, Path: last.Path, SessionTimeoutMs: r.m.backend.Timeout(r.sc).Milliseconds(),
		Events: []Event{}, Steps: []StepInfo{}, Stats: last.Stats, Pseudocode: rc.Lines,
		Violations: r.check(r.records), Service: lockqueue.WireService(r.sc.Service), words: runWords(r.m.backend),
		server: r.m.backend.Catalog().title(), token: tokenWords(r.m.backend),
	}
	if rep.Violations == nil {
		rep.Violations = []Violation{}
	}
	rep.Verdict = VerdictOf(rep.Violations, rep.Stats)
	if r.failed != nil {
		rep.Error = r.failed.Error()
	}
	for k, rec := range r.records[1:] {
		rep.Events = append(rep.Events, rec.Events...)
		rep.Steps = append(rep.Steps, StepInfo{
			Step: rec.Step, Client: rec.Action.Client, Action: rec.Action.Action, Narration: rec.Narration,
			Line: rec.Line, Stats: rec.Stats.Sub(r.records[k].Stats),
			ClockMs: rec.Clock.Milliseconds(), Clients: rec.Clients,
		})
	}
	rep.Meters = MetersOf(rep.words.Requests, rep.Events, rep.Stats)
	return rep
}

// WriteText prints a report as a table like seed 000's: one row per event,
// a notification folded into the row of the change that caused it.
func WriteText(w io.Writer, rep Report) error {
	var b strings.Builder
	words := rep.words.withNeutral()
	fmt.Fprintf(&b, "%s\n\n", words.Heading(rep))
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	// "#" numbers the rows; "step" is the scenario
	// step the event belongs to, the number violations and the classroom
	// use (a crash step has several rows: crash, expire, the next lock).
	fmt.Fprintln(tw, "#\tstep\tclient\tevent\tdetail")
	row := 0
	for _, e := range rep.Events {
		if e.Event == EvNotify {
			continue
		}
		row++
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\n", row, e.Step, e.Client, e.Event, e.Text)
	}
	tw.Flush()
	fmt.Fprintf(&b, "\n%s\n", words.Counts(rep.Stats))
	writeTextSafety(&b, rep)
	fmt.Fprintf(&b, "verdict: %s\n", rep.Verdict.Summary)
	if rep.Error != "" {
		fmt.Fprintf(&b, "error: %s\n", rep.Error)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// FencingOnOff is the run's fencing as the text report says it.
func (r Report) FencingOnOff() string {
	if r.Fencing {
		return "on"
	}
	return "off"
}

// TimeoutSeconds is the run's session timeout (or expiry, or lease) in
// seconds.
func (r Report) TimeoutSeconds() float64 { return float64(r.SessionTimeoutMs) / 1000 }

// writeTextSafety lists the violations, each as the page says it
// (Violation.Said), or says there were none.
func writeTextSafety(b *strings.Builder, rep Report) {
	if len(rep.Violations) == 0 {
		b.WriteString("safety: no violations\n")
		return
	}
	fmt.Fprintf(b, "safety: %d violation(s)\n", len(rep.Violations))
	for _, v := range rep.Violations {
		fmt.Fprintf(b, "  %s: %s\n", v.Kind, cmp.Or(v.Said, v.Message))
	}
}

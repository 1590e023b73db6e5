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
		Violations: r.check(r.records), Service: r.sc.Service,
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
		})
	}
	rep.Meters = MetersOf(rep.Service, rep.Events, rep.Stats)
	return rep
}

// WriteText prints a report as a table like seed 000's: one row per event,
// a notification folded into the row of the change that caused it.
func WriteText(w io.Writer, rep Report) error {
	var b strings.Builder
	writeTextTitle(&b, rep)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	// "#" numbers the rows as seed 000's table does; "step" is the scenario
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
	writeTextStats(&b, rep)
	writeTextSafety(&b, rep)
	fmt.Fprintf(&b, "verdict: %s\n", rep.Verdict.Summary)
	if rep.Error != "" {
		fmt.Fprintf(&b, "error: %s\n", rep.Error)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeTextTitle says what ran, in its service's words.
func writeTextTitle(b *strings.Builder, rep Report) {
	fencing := "on"
	if !rep.Fencing {
		fencing = "off"
	}
	timeout := float64(rep.SessionTimeoutMs) / 1000
	switch rep.Service {
	case "":
		fmt.Fprintf(b, "scenario %s (%s lock, %s watching, fencing %s) on %s, session timeout %.1fs\n\n",
			rep.Scenario, rep.Lock, rep.Strategy, fencing, rep.Path, timeout)
	case lockqueue.Etcd:
		fmt.Fprintf(b, "scenario %s (%s, %s waiters, fencing %s) on the prefix %s, lease %.1fs\n\n",
			rep.Scenario, rep.Service, rep.Strategy, fencing, rep.Path, timeout)
	default:
		fmt.Fprintf(b, "scenario %s (%s, %s waiters, fencing %s) on the key %s, expiry %.1fs\n\n",
			rep.Scenario, rep.Service, rep.Strategy, fencing, rep.Path, timeout)
	}
}

// writeTextStats counts the run's requests in its service's terms.
func writeTextStats(b *strings.Builder, rep Report) {
	s := rep.Stats
	switch {
	case rep.Service == lockqueue.Etcd:
		fmt.Fprintf(b, "\nrequests %d (watch events %d, lease keep-alives %d), keys put %d, deletes %d, writes %d, fenced %d\n",
			s.Commands, s.Notifications, s.Renewals, s.Create, s.Delete, s.Writes, s.Fenced)
	case rep.Service != "":
		fmt.Fprintf(b, "\ncommands %d (acquire attempts that found the lock taken %d, watchdog renewals %d), acquisitions %d, deletes %d, writes %d, fenced %d\n",
			s.Commands, s.Retries, s.Renewals, s.Create, s.Delete, s.Writes, s.Fenced)
	default:
		fmt.Fprintf(b, "\nnotifications %d, getChildren %d, exists %d, getData %d, wasted wake-ups %d (creates %d, deletes %d, writes %d, fenced %d; token reads %d, not the recipe's)\n",
			s.Notifications, s.GetChildren, s.Exists, s.GetData, s.WastedWakeups, s.Create, s.Delete, s.Writes, s.Fenced, s.TokenReads)
	}
}

// writeTextSafety lists the violations, or says there were none.
func writeTextSafety(b *strings.Builder, rep Report) {
	if len(rep.Violations) == 0 {
		b.WriteString("safety: no violations\n")
		return
	}
	fmt.Fprintf(b, "safety: %d violation(s)\n", len(rep.Violations))
	for _, v := range rep.Violations {
		fmt.Fprintf(b, "  %s: %s", v.Kind, v.Message)
		if rep.Service != "" && v.ForMs > 0 {
			fmt.Fprintf(b, "; it lasted %.1fs on the run's clock", float64(v.ForMs)/1000)
		}
		b.WriteString("\n")
	}
}

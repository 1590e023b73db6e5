// Package labsvg draws a lock-lab run as the classroom draws its runs: the
// simulator's time–space diagram (simulator.WriteSVG), one line per client,
// the lock server and the resource. There is one drawing; this package only
// says a lab run in the words the drawing reads (a simulator.Report). It
// is apart from package lab so that what shows a run (web) does not link
// the classroom's engine: cmd draws, and the Outcome carries the picture.
package labsvg

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zklockviz/zklockviz/lab"
	"github.com/zklockviz/zklockviz/simulator"
)

// Drawn says which run a diagram is of, for its title.
type Drawn struct {
	// Service is the lock service as lockqueue and the classroom name it
	// ("zookeeper", "redis", "etcd", "postgres").
	Service string
	Title   string // e.g. "lab on ZooKeeper, seed 7"
	Fencing bool
}

// A step of the drawing is a stretch of the run's clock: the drawing gives
// every step some width, so a step per event would draw a busy second
// (the lab's clients take the lock tens of times a second) wider than
// many screens. Events in one stretch are spread over it in the order
// they happened; the stretches are as short as tsPerStep events a step on
// average allow, and no shorter than tsMinBucket, and there are at most
// tsMaxSteps of them.
const (
	tsPerStep   = 6
	tsMaxSteps  = 250
	tsMinBucket = 10 * time.Millisecond
)

// Outcome draws a run's outcome: the SVG, or why it could not be drawn.
func Outcome(o lab.Outcome) (string, error) {
	var b strings.Builder
	d := Drawn{Service: o.Service, Title: fmt.Sprintf("lab on %s, seed %d", o.Title, o.Seed), Fencing: o.Fencing}
	if err := WriteTimeSpace(&b, o.Events, o.Report, d); err != nil {
		return "", err
	}
	return b.String(), nil
}

// WriteTimeSpace draws a run's events and its checker's report as an SVG
// time–space diagram (see simulator.WriteSVG, and its limits).
func WriteTimeSpace(w io.Writer, events []lab.Event, rep lab.Report, d Drawn) error {
	return simulator.WriteSVG(w, TimeSpace(events, rep, d))
}

// TimeSpace is a run as the time–space drawing reads it. Its steps are
// stretches of the run's clock (see tsBucket) that had events; each
// client's state at a step's end is what its events had told by then.
//
// The lab sees what clients believe, not what the server decided; one
// thing the server did follows from it: when a client is granted the lock
// while another still believes it holds, the server had taken the lock
// from the other by then. That is drawn as an expiry on the server's line
// at the grant (at the latest: it may have happened earlier), and the
// other's line goes on dashed while it still believes.
func TimeSpace(events []lab.Event, rep lab.Report, d Drawn) simulator.Report {
	events = slices.Clone(events)
	slices.SortStableFunc(events, func(a, b lab.Event) int { return a.At.Compare(b.At) })
	out := simulator.Report{
		Service: serviceWords(d.Service), Scenario: "lab", Title: d.Title, Fencing: d.Fencing,
		Events: []simulator.Event{}, Steps: []simulator.StepInfo{}, Violations: []simulator.Violation{},
		Verdict: simulator.Verdict{Summary: rep.Summary()},
	}
	if len(events) == 0 {
		return out
	}
	dr := newDrawing(&out, events)
	for _, e := range events {
		dr.add(e)
	}
	dr.flush()
	// Shaded by stretch of belief, not by pair: a holder paused past its
	// session overlaps with every grant the others get meanwhile, and a
	// shade and a label each would bury the picture.
	for _, st := range rep.Stretches {
		out.Violations = append(out.Violations, simulator.Violation{
			Kind: "overlap", Steps: []int{stepOf(dr.ends, st.From), stepOf(dr.ends, st.To)}, Clients: []string{st.Client, strings.Join(st.Others, ", ")},
			Message: fmt.Sprintf("%s (token %d) believed it held for %v while %s held too (%d times)",
				st.Client, st.Token, st.To.Sub(st.From).Round(time.Millisecond), strings.Join(st.Others, " and "), st.Overlaps),
			ForMs: st.To.Sub(st.From).Milliseconds(),
		})
	}
	return out
}

// drawing is a run's events as they are said step by step.
type drawing struct {
	out     *simulator.Report
	clients []string
	states  map[string]*drawnClient
	start   time.Time
	bucket  time.Duration
	step    int
	stepEnd time.Time
	// ends are each step's end, for the step an instant falls in.
	ends []time.Time
	// granted are the clients granted the lock in this step: the drawing
	// labels a grant with the client's token as the step leaves it, so a
	// second grant to one client starts a step of its own.
	granted map[string]bool
}

func newDrawing(out *simulator.Report, events []lab.Event) *drawing {
	start := events[0].At
	steps := time.Duration(min(tsMaxSteps, max(1, len(events)/tsPerStep)))
	dr := &drawing{out: out, clients: clientsOf(events), states: map[string]*drawnClient{}, start: start,
		bucket: max(tsMinBucket, events[len(events)-1].At.Sub(start)/steps+1), granted: map[string]bool{}}
	for _, c := range dr.clients {
		dr.states[c] = &drawnClient{}
	}
	return dr
}

// flush ends the step: each client as its events left it.
func (dr *drawing) flush() {
	if dr.step == 0 {
		return
	}
	info := simulator.StepInfo{Step: dr.step, ClockMs: dr.stepEnd.Sub(dr.start).Milliseconds()}
	for _, c := range dr.clients {
		info.Clients = append(info.Clients, dr.states[c].info(c))
	}
	dr.out.Steps = append(dr.out.Steps, info)
	dr.ends = append(dr.ends, dr.stepEnd)
}

func (dr *drawing) mark(ev simulator.Event) {
	ev.Step, ev.Kind = dr.step, ev.Event
	dr.out.Events = append(dr.out.Events, ev)
}

// add says e in its step, starting a new step when e's stretch is past
// or it is a second grant to one client.
func (dr *drawing) add(e lab.Event) {
	if dr.step == 0 || !e.At.Before(dr.stepEnd) || e.Kind == lab.Acquired && dr.granted[e.Client] {
		dr.flush()
		dr.step++
		if !e.At.Before(dr.stepEnd) {
			dr.stepEnd = dr.start.Add(dr.bucket * time.Duration(e.At.Sub(dr.start)/dr.bucket+1))
		}
		clear(dr.granted)
	}
	if e.Kind == lab.Acquired {
		dr.granted[e.Client] = true
		for _, other := range dr.clients {
			if s := dr.states[other]; other != e.Client && s.believes && !s.stale {
				s.stale = true
				dr.mark(simulator.Event{Client: other, Event: simulator.EvExpire,
					Text: fmt.Sprintf("the server granted %s the lock while %s believed it held: %s's had ended on the server by then", e.Client, other, other)})
			}
		}
	}
	if ev, ok := drawnEvent(e); ok {
		dr.mark(ev)
	}
	if s := dr.states[e.Client]; s != nil {
		s.after(e)
	}
}

// serviceWords is the service as the drawing's words are keyed: ZooKeeper
// is the empty one.
func serviceWords(s string) string {
	if s == "zookeeper" {
		return ""
	}
	return s
}

// clientsOf are the clients that told something, in their number's order
// (c2 before c10).
func clientsOf(events []lab.Event) []string {
	var out []string
	for _, e := range events {
		if e.Client != lab.Server && !slices.Contains(out, e.Client) {
			out = append(out, e.Client)
		}
	}
	slices.SortFunc(out, lab.CompareClients)
	return out
}

// stepOf is the number of the step whose stretch holds t.
func stepOf(ends []time.Time, t time.Time) int {
	i, _ := slices.BinarySearchFunc(ends, t, func(end, t time.Time) int {
		if end.After(t) {
			return 1
		}
		return -1
	})
	return min(i+1, len(ends))
}

// drawnKinds are the lab's events the drawing has a mark for.
var drawnKinds = map[lab.Kind]string{
	lab.Requested: simulator.EvWait, lab.Acquired: simulator.EvLock, lab.Released: simulator.EvUnlock,
	lab.Killed: simulator.EvCrash, lab.Paused: simulator.EvPause, lab.Resumed: simulator.EvResume,
	lab.Wrote: simulator.EvWrite, lab.Refused: simulator.EvFenced,
	// Noted on the server's line: "server down", "server up".
	lab.ServerDown: "down", lab.ServerUp: "up",
}

// drawnEvent is e as the drawing marks it; the runner's word that a client
// started is not drawn, and the others (lost, failed, cut, healed) are
// named on the client's line.
func drawnEvent(e lab.Event) (simulator.Event, bool) {
	ev := simulator.Event{Client: e.Client, Token: e.Token, Text: eventText(e), Event: cmp.Or(drawnKinds[e.Kind], string(e.Kind))}
	return ev, e.Kind != lab.Started
}

// eventText is the event's tooltip.
func eventText(e lab.Event) string {
	s := e.At.Format("15:04:05.000") + " " + e.Client + " " + string(e.Kind)
	switch {
	case e.Kind == lab.Wrote || e.Kind == lab.Refused:
		s += fmt.Sprintf(" %d → %d, token %d", e.From, e.To, e.Token)
	case e.Token != 0:
		s += " token " + strconv.FormatInt(e.Token, 10)
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// drawnClient is what a client's events have told so far. Its token is its
// last grant's, kept after it let go: the drawing labels a grant with the
// token the step leaves its client with.
type drawnClient struct {
	waiting, believes, stale, paused, dead bool
	token                                  int64
}

func (s *drawnClient) after(e lab.Event) {
	switch e.Kind {
	case lab.Requested:
		s.waiting = true
	case lab.Acquired:
		*s = drawnClient{believes: true, token: e.Token, paused: s.paused}
	case lab.Released, lab.Lost:
		*s = drawnClient{paused: s.paused, token: s.token}
	case lab.Killed:
		*s = drawnClient{dead: true, token: s.token}
	case lab.Started:
		*s = drawnClient{token: s.token}
	case lab.Paused:
		s.paused = true
	case lab.Resumed:
		s.paused = false
	}
}

// info is the client as a step leaves it, in the drawing's states.
func (s *drawnClient) info(name string) simulator.ClientInfo {
	c := simulator.ClientInfo{Name: name, Token: s.token, State: simulator.StateReleased}
	switch {
	case s.paused:
		// The drawing keeps what the events said, and draws the pause.
		c.State = simulator.StatePaused
	case s.dead:
		c.State = simulator.StateCrashed
	case s.believes && s.stale:
		c.State = simulator.StateStale
	case s.believes:
		c.State = simulator.StateHolding
	case s.waiting:
		c.State = simulator.StateWaiting
	}
	return c
}

package web

import (
	"fmt"
	"slices"
	"time"

	"github.com/zklockviz/zklockviz/lab"
	"github.com/zklockviz/zklockviz/views"
)

// The live view's lanes: the run's time maps onto labWidth units, its
// whole duration from the start (or longer, once it runs over).
const (
	labWidth   = 1000.0
	labLaneGap = 28
)

// view is the run as its live view shows it at now: each service's belief
// lanes and counts so far, and once the run has ended (now is then when it
// ended) its report.
func (lr *labRun) view(now time.Time) views.LabLiveView {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	if !lr.ended.IsZero() {
		now = lr.ended
	}
	v := views.LabLiveView{ID: lr.id, Done: !lr.ended.IsZero(), Elapsed: now.Sub(lr.started).Round(100 * time.Millisecond).String()}
	span := max(lr.duration, now.Sub(lr.started))
	x := func(t time.Time) float64 {
		return min(labWidth, max(0, labWidth*float64(t.Sub(lr.started))/float64(span)))
	}
	for _, svc := range lr.services {
		v.Services = append(v.Services, liveService(lr.info[svc], lr.watch[svc], lr.events[svc], now, x))
	}
	for _, o := range lr.final {
		v.Runs = append(v.Runs, labRunView(o))
	}
	return v
}

// liveService is one service's lanes and counts so far: what its clients
// believed, when each was paused or killed, every moment two believed at
// once, and the writes lost and refused (lab.Check on the events so far).
func liveService(o lab.Outcome, watch string, events []lab.Event, now time.Time, x func(time.Time) float64) views.LabLiveService {
	events = slices.SortedStableFunc(slices.Values(events), func(a, b lab.Event) int { return a.At.Compare(b.At) })
	// The counter so far is the last write it took.
	var counter int64
	for _, e := range events {
		if e.Kind == lab.Wrote {
			counter = e.To
		}
	}
	rep := lab.Check(events, counter, now)
	sv := views.LabLiveService{Service: o.Service, Title: o.Title, Server: o.Server, Path: o.Path, Watch: watch,
		TwoBelievers: len(rep.Overlaps), LostUpdates: rep.LostUpdates, Refused: rep.Refused, Acquisitions: rep.Acquisitions}
	lanes := map[string]*views.LabLane{}
	var order []string
	type open struct{ belief, pause time.Time }
	opened := map[string]*open{}
	span := func(from, to time.Time, title string) views.LabSpan {
		x1, x2 := x(from), x(to)
		return views.LabSpan{X: fmt.Sprintf("%.1f", x1), W: fmt.Sprintf("%.1f", max(x2-x1, 1)), Title: title}
	}
	for _, e := range events {
		if e.Client == lab.Server {
			continue
		}
		l, ok := lanes[e.Client]
		if !ok {
			l = &views.LabLane{Name: e.Client}
			lanes[e.Client], opened[e.Client] = l, &open{}
			order = append(order, e.Client)
		}
		op := opened[e.Client]
		endBelief := func() {
			if !op.belief.IsZero() {
				l.Beliefs = append(l.Beliefs, span(op.belief, e.At, e.Client+" believed it held"))
				op.belief = time.Time{}
			}
		}
		switch e.Kind {
		case lab.Acquired:
			endBelief()
			op.belief = e.At
		case lab.Released, lab.Lost:
			endBelief()
		case lab.Killed:
			endBelief()
			l.Kills = append(l.Kills, fmt.Sprintf("%.1f", x(e.At)))
		case lab.Paused:
			op.pause = e.At
		case lab.Resumed:
			if !op.pause.IsZero() {
				l.Pauses = append(l.Pauses, span(op.pause, e.At, e.Client+" paused"))
				op.pause = time.Time{}
			}
		}
	}
	slices.SortFunc(order, lab.CompareClients)
	for i, c := range order {
		l, op := lanes[c], opened[c]
		if !op.belief.IsZero() {
			l.Beliefs = append(l.Beliefs, span(op.belief, now, c+" believes it holds"))
		}
		if !op.pause.IsZero() {
			l.Pauses = append(l.Pauses, span(op.pause, now, c+" is paused"))
		}
		l.Y = 10 + i*labLaneGap
		sv.Lanes = append(sv.Lanes, *l)
	}
	sv.Height = 20 + len(order)*labLaneGap
	for _, ov := range rep.Overlaps {
		sv.Overlaps = append(sv.Overlaps, span(ov.From, ov.To, fmt.Sprintf("%s and %s both believed they held for %v", ov.A, ov.B, ov.To.Sub(ov.From).Round(time.Millisecond))))
	}
	return sv
}

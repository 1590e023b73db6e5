package web

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/lab"
	"github.com/zklockviz/zklockviz/lab/word"
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
		sv := liveService(lr.info[svc], lr.watch[svc], lr.events[svc], now, x)
		if r, ok := lr.words[svc]; ok {
			recordLanes(&sv, r, lr.events[svc], now, x)
			finalWord(&sv, lr.final)
		}
		v.Services = append(v.Services, sv)
	}
	for _, o := range lr.final {
		v.Runs = append(v.Runs, labRunView(o))
	}
	return v
}

// liveStretches are what a lane draws as stretches of time: from the kind
// of event that opens one to the first that closes it (or to now), with
// its class and its words, done and going on.
var liveStretches = []struct {
	open      lab.Kind
	close     []lab.Kind
	class     string
	past, now string
}{
	{lab.Acquired, []lab.Kind{lab.Acquired, lab.Released, lab.Lost, lab.Killed}, "lab-belief", "believed it held", "believes it holds"},
	{lab.Paused, []lab.Kind{lab.Resumed, lab.Killed}, "lab-pause", "was paused", "is paused"},
	{lab.Cut, []lab.Kind{lab.Healed, lab.Killed}, "lab-cut", "was cut off the server", "is cut off the server"},
	{lab.ServerDown, []lab.Kind{lab.ServerUp}, "lab-down", "was down", "is down"},
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
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
	opened := map[string]map[lab.Kind]time.Time{} // each lane's open stretches, by the kind that opened them
	span := func(from, to time.Time, class, title string) views.LabSpan { return labSpan(x, from, to, class, title) }
	for _, e := range events {
		l, ok := lanes[e.Client]
		if !ok {
			l = &views.LabLane{Name: e.Client}
			lanes[e.Client], opened[e.Client] = l, map[lab.Kind]time.Time{}
			order = append(order, e.Client)
		}
		op := opened[e.Client]
		for _, st := range liveStretches {
			if from, ok := op[st.open]; ok && slices.Contains(st.close, e.Kind) {
				l.Spans = append(l.Spans, span(from, e.At, st.class, e.Client+" "+st.past))
				delete(op, st.open)
			}
			if e.Kind == st.open {
				op[st.open] = e.At
			}
		}
		if e.Kind == lab.Killed {
			l.Kills = append(l.Kills, fmt.Sprintf("%.1f", x(e.At)))
		}
	}
	// The clients in their number's order, the server's lane (its
	// outages, when the nemesis stops it) under them.
	slices.SortFunc(order, func(a, b string) int {
		return cmp.Or(cmp.Compare(boolInt(a == lab.Server), boolInt(b == lab.Server)), lab.CompareClients(a, b))
	})
	for i, c := range order {
		l, op := lanes[c], opened[c]
		for _, st := range liveStretches {
			if from, ok := op[st.open]; ok {
				l.Spans = append(l.Spans, span(from, now, st.class, c+" "+st.now))
			}
		}
		// Beliefs are drawn last, over the bands behind them.
		slices.SortStableFunc(l.Spans, func(a, b views.LabSpan) int {
			return cmp.Compare(boolInt(a.Class == "lab-belief"), boolInt(b.Class == "lab-belief"))
		})
		l.Y = 10 + i*labLaneGap
		sv.Lanes = append(sv.Lanes, *l)
	}
	sv.Height = 20 + len(order)*labLaneGap
	sv.BeliefHeight = sv.Height
	for _, ov := range rep.Overlaps {
		sv.Overlaps = append(sv.Overlaps, span(ov.From, ov.To, "lab-overlap", fmt.Sprintf("%s and %s both believed they held for %v", ov.A, ov.B, ov.To.Sub(ov.From).Round(time.Millisecond))))
	}
	return sv
}

// labSpan is the stretch from from to to on the lanes' axis.
func labSpan(x func(time.Time) float64, from, to time.Time, class, title string) views.LabSpan {
	x1, x2 := x(from), x(to)
	return views.LabSpan{X: fmt.Sprintf("%.1f", x1), W: fmt.Sprintf("%.1f", max(x2-x1, 1)), Class: class, Title: title}
}

// recordSpan is a recorded hold's stretch: a unit short of its end, so
// that holds one after the other (a polling reader's, each read a new
// holder) are told apart.
func recordSpan(x func(time.Time) float64, from, to time.Time, class, title string) views.LabSpan {
	x1, x2 := x(from), x(to)
	return views.LabSpan{X: fmt.Sprintf("%.1f", x1), W: fmt.Sprintf("%.1f", max(x2-x1-1, 1)), Class: class, Title: title}
}

// recordName names zklockviz's own lanes, under the clients'.
const recordName = "zklockviz's record"

// recordEnds are the words and the class of a recorded hold's end.
var recordEnds = map[history.How]struct{ class, words string }{
	history.Released: {"lab-record-released", "released"},
	history.Expired:  {"lab-record-expired", "expired"},
	history.Unseen:   {"lab-record-unknown", "gone, how unknown (a gap)"},
	"":               {"lab-record-unheld", "let go while still queued"},
}

// recordLanes puts under sv's lanes zklockviz's record of the run so far
// (r, from its reader's history): one stretch per recorded hold, named by
// its holder and the client that told that name, and how it ended; its
// gaps as gaps in the lane. Holds that overlap go on a lane of their own,
// and the word's mismatches settled so far in the counts.
func recordLanes(sv *views.LabLiveService, r word.LiveResult, events []lab.Event, now time.Time, x func(time.Time) float64) {
	clientOf := map[string]string{}
	for _, e := range events {
		if e.Kind == lab.Acquired && e.Holder != "" {
			clientOf[e.Holder] = e.Client
		}
	}
	var lanes []*views.LabLane
	var ends []time.Time // each lane's last hold's end
	holds := slices.SortedStableFunc(slices.Values(r.Holds), func(a, b word.RecordedHold) int { return a.Start.Compare(b.Start) })
	for _, h := range holds {
		end, words := h.End, recordEnds[h.How]
		if end.IsZero() {
			end, words.class, words.words = now, "lab-record-held", "still held"
		}
		i := slices.IndexFunc(ends, func(t time.Time) bool { return !t.After(h.Start) })
		if i < 0 {
			i = len(lanes)
			lanes, ends = append(lanes, &views.LabLane{Name: recordName, Record: true}), append(ends, time.Time{})
		}
		ends[i] = end
		who := h.Node
		if c := clientOf[h.Node]; c != "" {
			who = c + " (" + h.Node + ")"
		}
		since := "from " + h.Start.Format("15:04:05.000")
		if h.AfterGap {
			since = "first seen after a gap at " + h.Start.Format("15:04:05.000")
		}
		sp := recordSpan(x, h.Start, end, words.class, fmt.Sprintf("zklockviz recorded %s holding %s to %s: %s", who, since, end.Format("15:04:05.000"), words.words))
		sp.Client, sp.Holder = clientOf[h.Node], h.Node
		lanes[i].Spans = append(lanes[i].Spans, sp)
	}
	if len(lanes) == 0 {
		lanes = append(lanes, &views.LabLane{Name: recordName, Record: true})
	}
	for i, l := range lanes {
		// The gaps first: the holds are drawn over them.
		var gaps []views.LabSpan
		for _, g := range r.Gaps {
			gaps = append(gaps, labSpan(x, g.From, g.To, "lab-record-gap", "zklockviz's reader had no sight of the lock from "+
				g.From.Format("15:04:05.000")+" to "+g.To.Format("15:04:05.000")+": "+g.Why))
		}
		l.Spans = append(gaps, l.Spans...)
		if i > 0 {
			l.Name = fmt.Sprintf("%s, %d", recordName, i+1)
		}
		l.Y = sv.Height - 10 + i*labLaneGap
		sv.Lanes = append(sv.Lanes, *l)
	}
	sv.Height += len(lanes) * labLaneGap
	w := &views.LabWordView{Mismatches: len(r.Mismatches), Holds: len(r.Holds), Settled: r.Settled.Format("15:04:05")}
	if len(r.Mismatches) > 0 {
		w.First = r.Mismatches[0].String()
	}
	sv.Word = w
}

// finalWord puts in sv, once the run has ended, the verdict of the check
// of zklockviz's word after the run, in place of the count so far.
func finalWord(sv *views.LabLiveService, final []lab.Outcome) {
	i := slices.IndexFunc(final, func(o lab.Outcome) bool { return o.Service == sv.Service && o.Word != nil })
	if i < 0 || sv.Word == nil {
		return
	}
	w := final[i].Word
	sv.Word.Final, sv.Word.Mismatches, sv.Word.First = true, len(w.Mismatches), ""
	if len(w.Mismatches) > 0 {
		sv.Word.First = w.Mismatches[0].String()
	}
}

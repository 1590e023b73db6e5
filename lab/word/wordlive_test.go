package word

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/lab"
)

// The check as it goes: what a prefix of a run settles, and no more. Each
// case gives the clients' events and the history received by now, and the
// mismatches the live check must tell then; naive is what Check over the
// same prefix says, where it differs: a mismatch the run could still undo.
func TestLive(t *testing.T) {
	watching := Watching(3 * time.Second)
	planted := append(slices.Clone([]history.Event{conn(-100, "connected"), queued(5, "n1", 5), acquired(12, "n1", 5)}), left(1500, "n1", history.Released))
	outage := []lab.Event{
		asked(0, "c1"), got(10, "c1", "n1"), did(800, lab.Server, lab.ServerDown), did(3000, lab.Server, lab.ServerUp),
		did(3100, "c1", lab.Lost), failedRel(3101, "c1"), asked(3102, "c1"),
	}
	nobody := edit(-1, queued(1000, "n7", 1000), acquired(1000, "n7", 1000))
	again := []lab.Event{asked(0, "c1"), got(10, "c1", "n1"), did(1600, "c1", lab.Released), asked(1601, "c1"), got(1700, "c1", "n3"),
		did(2000, "c1", lab.Released), asked(2001, "c1")}
	neverLeft := []history.Event{conn(-100, "connected"), queued(5, "n1", 5), acquired(12, "n1", 5), queued(1650, "n3", 1601), acquired(1705, "n3", 1601),
		left(2005, "n3", history.Released)}
	for _, tc := range []struct {
		name    string
		clients []lab.Event
		hist    []history.Event
		b       Bounds
		now     int
		want    []Rule
		naive   []Rule // Check over the prefix, when it differs
	}{
		{"the hand-off as it happened", handoff.clients, handoff.hist, watching, 9000, nil, nil},
		{"a release not recorded yet, still within its Delay", handoff.clients[:5], handoff.hist[:4], watching, 2000, nil, nil},
		{"a paused client's release, stamped before it was sent", []lab.Event{asked(0, "c1"), got(10, "c1", "n1"), did(600, "c1", lab.Released),
			did(601, "c1", lab.Paused)}, []history.Event{conn(-100, "connected"), queued(5, "n1", 5), acquired(12, "n1", 5)}, watching, 2500, nil, []Rule{End}},
		{"a backend's release told late, its next hold recorded", []lab.Event{asked(0, "c1"), got(10, "c1", "pid-1")},
			[]history.Event{conn(-100, "connected"), queued(5, "pid-1", 5), acquired(12, "pid-1", 5), unheld(650, "pid-1"), acquired(720, "pid-1", 5)},
			Polling(time.Second, 0), 4000, nil, []Rule{Once}},
		{"a release recorded during an outage, the server not back", outage[:2], planted, Watching(time.Second), 2500, nil, nil},
		{"a release recorded during an outage, the server back a moment ago", outage, planted, Watching(time.Second), 4000, nil, []Rule{Outage, Outage}},
		{"a release recorded during an outage, settled", outage, planted, Watching(time.Second), 7000, []Rule{Outage, Outage}, []Rule{Outage, Outage}},
		{"a hold nobody asked for, while a grant before it may still end", handoff.clients, nobody, watching, 3000, nil, []Rule{NoGrant}},
		{"a hold nobody asked for, settled", handoff.clients, nobody, watching, 6000, []Rule{NoGrant}, []Rule{NoGrant}},
		{"a release never recorded, while the client's next grant may still end", again, neverLeft, watching, 4000, nil, []Rule{End}},
		{"a release never recorded, settled", again, neverLeft, watching, 5000, []Rule{End}, []Rule{End}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := at(tc.now)
			r := Live(tc.clients, tc.hist, tc.b, now)
			if got := rulesOf(r.Mismatches); !slices.Equal(got, tc.want) {
				t.Errorf("live: %v, settled at %s; want %v\n%v", got, stamp(r.Settled), tc.want, r.Mismatches)
			}
			if got := rulesOf(Check(tc.clients, tc.hist, tc.b, now).Mismatches); !slices.Equal(got, tc.naive) {
				t.Errorf("the check over the prefix: %v; want %v", got, tc.naive)
			}
		})
	}
}

func rulesOf(ms []Mismatch) []Rule {
	var rules []Rule
	for _, m := range ms {
		rules = append(rules, m.Rule)
	}
	return rules
}

// recordedRun is a real lab run (zklockviz lab --json with
// --word-data-dir, its history walked as the lab's check walks it): the
// clients' events, the history with its restatements, the bounds the lab
// checked it with and the end of its history.
type recordedRun struct {
	Bounds  Bounds      `json:"bounds"`
	End     time.Time   `json:"end"`
	Clients []lab.Event `json:"clients"`
	History []struct {
		Event     history.Event `json:"event"`
		Synthetic bool          `json:"synthetic"`
	} `json:"history"`
}

func recordedRuns(t *testing.T) map[string]recordedRun {
	files, err := filepath.Glob("testdata/run-*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded runs (%v)", err)
	}
	runs := map[string]recordedRun{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var r recordedRun
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		runs[filepath.Base(f)] = r
	}
	return runs
}

func (r recordedRun) hist() []history.Event {
	out := make([]history.Event, len(r.History))
	for i, e := range r.History {
		out[i] = e.Event
		out[i].Synthetic = e.Synthetic
	}
	return out
}

// arrivals are when the lab may get each event at the latest: a release
// is stamped before it is sent, and told once it returns (at worst with
// the client's next event); a kill is told once the process is dead, a
// server back once its start returns, within a second, and the nemesis
// tells its faults in order, each before it does the next. The rest
// comes as it is stamped.
func arrivals(events []lab.Event) []time.Time {
	out := make([]time.Time, len(events))
	next := map[string]time.Time{}
	nextFault := farFuture
	for i := len(events) - 1; i >= 0; i-- {
		e := events[i]
		out[i] = e.At
		switch e.Kind {
		case lab.Released:
			out[i] = next[e.Client]
			if out[i].IsZero() {
				out[i] = farFuture
			}
		case lab.Killed, lab.ServerUp:
			out[i] = e.At.Add(time.Second)
			if nextFault.Before(out[i]) {
				out[i] = nextFault
			}
		}
		switch e.Kind {
		case lab.Paused, lab.Resumed, lab.Killed, lab.Cut, lab.Healed, lab.ServerDown, lab.ServerUp, lab.ClockJumped:
			nextFault = e.At
		default:
			next[e.Client] = e.At
		}
	}
	return out
}

// liveTicks runs the live check every 250 ms of a run, over what the lab
// has received by then (arrivals; the history a read's Early after its
// stamp), and returns every mismatch it told, with the moment it told it.
func liveTicks(clients []lab.Event, hist []history.Event, b Bounds, end time.Time) (told []Mismatch, when []time.Time) {
	clients = slices.SortedStableFunc(slices.Values(clients), func(a, b lab.Event) int { return a.At.Compare(b.At) })
	arrive := arrivals(clients)
	var tr Tracker
	for now := clients[0].At; !now.After(end); now = now.Add(250 * time.Millisecond) {
		var cs []lab.Event
		for i, e := range clients {
			if !arrive[i].After(now) {
				cs = append(cs, e)
			}
		}
		hs := slices.DeleteFunc(slices.Clone(hist), func(e history.Event) bool { return e.Time.Add(b.Early).After(now) })
		for _, m := range tr.Add(Live(cs, hs, b, now).Mismatches) {
			told, when = append(told, m), append(when, now)
		}
	}
	return told, when
}

// The live check at every tick of real runs, and of their histories
// edited in many ways (a change moved later or earlier, deleted, a release
// told as an expiry): every mismatch it tells as it goes is one the check
// after the run finds. The edits make the final check find mismatches, so
// that the live one has some to get wrong.
func TestLiveWithinFinal(t *testing.T) {
	edits, found := 0, 0
	for name, run := range recordedRuns(t) {
		t.Run(name, func(t *testing.T) {
			hist := run.hist()
			if r := Check(run.Clients, hist, run.Bounds, run.End); len(r.Mismatches) != 0 {
				t.Fatalf("the real run has mismatches: %s", r)
			}
			told, _ := liveTicks(run.Clients, hist, run.Bounds, run.End)
			if len(told) != 0 {
				t.Errorf("the live check told mismatches of a run that has none: %v", told)
			}
			// About 20 of the history's changes a run, spread over it.
			var changes []int
			for i, e := range hist {
				if !e.Synthetic && (e.Kind == history.Left || e.Kind == history.Acquired) {
					changes = append(changes, i)
				}
			}
			n, k := 0, 0
			for j := 0; j < len(changes); j += max(1, len(changes)/20) {
				i := changes[j]
				for _, edited := range editsOf(hist, i) {
					final := Check(run.Clients, edited, run.Bounds, run.End)
					told, _ := liveTicks(run.Clients, edited, run.Bounds, run.End)
					n++
					k += len(told)
					for _, m := range told {
						if !slices.ContainsFunc(final.Mismatches, func(f Mismatch) bool { return Same(m, f) }) {
							t.Errorf("%s at %s edited: the live check told %s; the final check found only %v", hist[i].Kind, stamp(hist[i].Time), m, final.Mismatches)
						}
					}
				}
			}
			t.Logf("%d edits, %d mismatches told live", n, k)
			edits, found = edits+n, found+k
		})
	}
	if found == 0 {
		t.Errorf("%d edits, and the live check found no mismatch in any", edits)
	}
}

// editsOf are hist with its i'th event moved 1.5 s later, 700 ms earlier,
// deleted, or, a release, told as an expiry.
func editsOf(hist []history.Event, i int) [][]history.Event {
	with := func(f func(*history.Event)) []history.Event {
		h := slices.Clone(hist)
		f(&h[i])
		slices.SortStableFunc(h, func(a, b history.Event) int { return a.Time.Compare(b.Time) })
		return h
	}
	out := [][]history.Event{
		with(func(e *history.Event) { e.Time = e.Time.Add(1500 * time.Millisecond) }),
		with(func(e *history.Event) { e.Time = e.Time.Add(-700 * time.Millisecond) }),
		slices.Delete(slices.Clone(hist), i, i+1),
	}
	if hist[i].How == history.Released {
		out = append(out, with(func(e *history.Event) { e.How = history.Expired }))
	}
	return out
}

// The planted mismatch of issue 37, in real runs: a history edited to
// record a release during one of the server's outages, of the node that
// held as the server went down. The live check finds it while the run
// goes, not only at its end; but in the runs whose server was killed
// every 1.5 s to their end (a Redis one and a ZooKeeper one), a holder
// whose release failed in the first outage may keep its hold through each
// next one (rule 3), so nothing after its grant settles before the run
// ends, and the check after the run finds it alone.
func TestLiveFindsPlanted(t *testing.T) {
	unsettled := map[string]bool{"run-redis-1.json": true, "run-zookeeper-1.json": true}
	found := 0
	planted := 0
	for name, run := range recordedRuns(t) {
		hist := run.hist()
		down, up := outageOf(run.Clients)
		if down.IsZero() {
			continue
		}
		node := heldAt(hist, down)
		if node == "" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			planted++
			mid := down.Add(up.Sub(down) / 2)
			edited := append(slices.Clone(hist), history.Event{Time: mid, Kind: history.Left, Node: node, How: history.Released})
			slices.SortStableFunc(edited, func(a, b history.Event) int { return a.Time.Compare(b.Time) })
			final := Check(run.Clients, edited, run.Bounds, run.End)
			told, when := liveTicks(run.Clients, edited, run.Bounds, run.End)
			i := slices.IndexFunc(told, func(m Mismatch) bool { return m.Rule == Outage && m.At.Equal(mid) })
			if !slices.ContainsFunc(final.Mismatches, func(m Mismatch) bool { return m.Rule == Outage && m.At.Equal(mid) }) {
				t.Errorf("the final check did not find it: %v", final.Mismatches)
			}
			if unsettled[name] {
				if i >= 0 {
					t.Errorf("told at %s, before the holder's grant settled", stamp(when[i]))
				}
				return
			}
			if i < 0 {
				t.Fatalf("a release of %s recorded at %s, during the outage %s to %s: the live check told %v; the final check %v",
					node, stamp(mid), stamp(down), stamp(up), told, final.Mismatches)
			}
			if !when[i].Before(run.End.Add(-time.Second)) {
				t.Errorf("told at %s, the run's end: not as it goes", stamp(when[i]))
			}
			found++
			t.Logf("planted at %s, told at %s (the server back at %s)", stamp(mid), stamp(when[i]), stamp(up))
		})
	}
	if planted == 0 || found == 0 {
		t.Fatalf("%d recorded runs with an outage and a holder to plant a release in, %d found live", planted, found)
	}
}

// outageOf is a run's first outage that ends before its last 4 s.
func outageOf(events []lab.Event) (down, up time.Time) {
	events = slices.SortedStableFunc(slices.Values(events), func(a, b lab.Event) int { return a.At.Compare(b.At) })
	last := events[len(events)-1].At
	for _, e := range events {
		switch e.Kind {
		case lab.ServerDown:
			down = e.At
		case lab.ServerUp:
			if !down.IsZero() && e.At.Before(last.Add(-4*time.Second)) {
				return down, e.At
			}
			down = time.Time{}
		}
	}
	return time.Time{}, time.Time{}
}

// heldAt is the node the history has holding at t.
func heldAt(hist []history.Event, t time.Time) string {
	for _, h := range holdsOf(hist) {
		if h.start.Before(t) && (h.end.IsZero() || h.end.After(t)) {
			return h.node
		}
	}
	return ""
}

// # The check as it goes
//
// While a run goes, the lab checks what is settled so far: Live runs
// Check over the clients' events and the history received by now, and
// keeps only the mismatches before the settled moment, the last moment
// nothing the run can still do could undo. The check after the run stays
// the verdict; each mismatch Live reports is one the final check reports
// too (Same: its rule, client and holder; its moment may be told more
// exactly at the end).
//
// The settled moment is the earliest of:
//
//   - now less Lag (2 s) and Early: the lab's own events reach the check within
//     Lag of their stamp (a kill is stamped as it is sent and told once
//     the process is dead, within a second; a server's outage as the
//     signal is sent), the history's within Early of its reads;
//   - for each grant not settled, its Requested less Early. A grant is
//     settled once its client let go (Released, Lost, Killed, a failed
//     release), the event after a release is told (when the release
//     surely reached the server, or failed), and the latest its recorded
//     hold may end (rule 3: Delay after the release, Session after a
//     kill, ServerUp + Session after an outage it held through, never
//     while an outage it held through goes on), and the Resolution within
//     which the same holder's next grant would merge with it (rule 1),
//     are Early behind now less Lag. A release merely still within its
//     Delay is not settled, nor a grant still believed;
//   - for each request no grant answered yet, its Requested less Early:
//     a hold recorded since may be that grant, not told yet;
//   - for each outage still going, or over less than Early before now
//     less Lag, its ServerDown less Early: a gap is only known to cover
//     it once the server is back.
//
// Every grant, request and outage before the settled moment is then
// known as the final check will know it: each recorded hold that starts
// before it pairs with the grant it pairs with at the end, and each
// mismatch told before it stands. A client's events are stamped while it
// has a grant or a request open (a release is stamped before it is sent,
// and told once it returns), so one that reaches the lab late concerns a
// grant or request that holds the settled moment back already. The
// settled moment trails now by a few seconds in an ordinary run (a
// release's Delay, Lag), by a pause or a session while a paused holder or
// a killed one's session keeps the others waiting. Where the server goes
// down again before a hold kept through its last outage could end (a
// server killed every 1.5 s), nothing after that hold settles until the
// run ends, and the check after the run finds alone what came after.
package word

import (
	"slices"
	"time"

	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/lab"
)

// Lag is how late the lab's own events may reach the check after their
// stamp: a kill is told once the process is dead, within a second of
// the signal; a server killed or stopped, once it is.
const Lag = 2 * time.Second

// LiveResult is what Live found settled in a run so far.
type LiveResult struct {
	// Settled is the settled moment: nothing before it can change.
	Settled time.Time
	// Mismatches are the settled ones, in time order.
	Mismatches []Mismatch
	// Holds and Gaps are what the history has recorded so far: zklockviz's
	// own record of the run, drawn beside the clients' beliefs.
	Holds []RecordedHold
	Gaps  []history.Span
}

// RecordedHold is one hold the history recorded: a node's stretch from
// its Acquired to its Left or Unheld.
type RecordedHold struct {
	Node       string
	Start, End time.Time // End zero: still held when the history was read
	// How it ended: released, expired, unknown; empty when Unheld (no
	// longer holding while still queued) or still held.
	How history.How
	// AfterGap: first seen after a gap, held since the history does not
	// know when.
	AfterGap bool
}

// Live checks the clients' events and the history's received by now
// (any order; the history as Walk reads it, restatements included) and
// reports the mismatches settled by now, and the history's holds and
// gaps so far.
func Live(clients []lab.Event, hist []history.Event, b Bounds, now time.Time) LiveResult {
	r := LiveResult{Settled: Settled(clients, b, now), Mismatches: []Mismatch{}}
	for _, m := range Check(clients, hist, b, now).Mismatches {
		if m.At.Before(r.Settled) {
			r.Mismatches = append(r.Mismatches, m)
		}
	}
	r.Holds, r.Gaps = Recorded(hist, now)
	return r
}

// Settled is the settled moment of a run so far (see Live), from the
// clients' events received by now.
func Settled(clients []lab.Event, b Bounds, now time.Time) time.Time {
	t := now.Add(-Lag)
	settled := t.Add(-b.Early)
	earliest := func(at time.Time) {
		if at = at.Add(-b.Early); at.Before(settled) {
			settled = at
		}
	}
	grants, open, outages, down := grantsOf(clients)
	for _, g := range grants {
		if !g.settledBy(b, t) {
			earliest(g.requested)
		}
	}
	for _, o := range outages {
		if !o.to.Add(b.Early).Before(t) {
			earliest(o.from)
		}
	}
	for _, q := range open {
		if q.to.Equal(farFuture) { // still open
			earliest(q.from)
		}
	}
	if !down.IsZero() {
		earliest(down)
	}
	return settled
}

// settledBy says whether all the final check will know of g is known at
// t: its client let go, the event after its release is told, and the
// latest its recorded hold may end, or the same holder's next grant
// merge with it, is Early before t.
func (g *grant) settledBy(b Bounds, t time.Time) bool {
	switch {
	case g.how == "":
		return false
	case g.how == string(lab.Released) && g.releasedBy.IsZero():
		return false
	case g.how == failedRelease && g.failedBy.IsZero():
		return false
	}
	return later(g.latest(b), g.ended.Add(b.Resolution)).Add(b.Early).Before(t)
}

// Recorded are the holds and the gaps the history recorded up to end.
func Recorded(hist []history.Event, end time.Time) ([]RecordedHold, []history.Span) {
	var holds []RecordedHold
	for _, h := range holdsOf(hist) {
		holds = append(holds, RecordedHold{Node: h.node, Start: h.start, End: h.end, How: h.how, AfterGap: h.afterGap})
	}
	live := slices.DeleteFunc(slices.Clone(hist), func(e history.Event) bool { return e.Synthetic })
	return holds, history.Gaps(history.State{}, live, end)
}

// Same says whether a and b are one mismatch: the same rule broken, of
// the same client and holder; one of no client's (a hold no grant has, an
// outage) at the same moment too. The live check may tell a mismatch's
// moment less exactly than the final one: a release still not recorded
// is told at the release, and at the end at the recorded end, if any.
func Same(a, b Mismatch) bool {
	if a.Rule != b.Rule || a.Client != b.Client || a.Holder != b.Holder {
		return false
	}
	return a.Client != "" || a.At.Equal(b.At)
}

// Tracker keeps the mismatches a run's live checks have told, so that
// each is told once.
type Tracker struct {
	told []Mismatch
}

// Add takes a live check's mismatches and returns the ones not told
// before, which it now counts as told.
func (t *Tracker) Add(ms []Mismatch) []Mismatch {
	var fresh []Mismatch
	for _, m := range ms {
		if !slices.ContainsFunc(t.told, func(o Mismatch) bool { return Same(o, m) }) {
			t.told = append(t.told, m)
			fresh = append(fresh, m)
		}
	}
	return fresh
}

// Told are the mismatches told so far, the first first.
func (t *Tracker) Told() []Mismatch { return slices.Clone(t.told) }

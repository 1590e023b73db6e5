// Package word checks zklockviz's own word, the history its reader
// recorded of a lock during a lab run, against what the lab's clients
// themselves saw. A mismatch is a defect of zklockviz; the lock's own
// violations (two believers, lost updates) are the lab checker's and no
// concern of this one. The package is pure: it takes the events, never a
// service's client.
//
// # The rules
//
// A grant is one stretch a client believed it held, from its Acquired to
// its Released, Lost, Killed or the run's end, asked for at its Requested
// just before. A recorded hold is one stretch the history says a node
// held, from its Acquired to its Left or Unheld. They are paired by the
// holder's name (the Holder a client tells on Acquired is its node's name
// in the history) and by time. Each bound is widened by the service's
// tolerance (Bounds): Early, how much earlier than a client's stamp the
// reader's stamp of the same change may be (a read is stamped before its
// answer comes), 250 ms; Delay, how late the reader may record a change:
// Slack (500 ms, how late a reader may stamp what it saw on a loaded
// machine) for a reader that watches (ZooKeeper, etcd), one poll (1 s,
// serve's default) and Slack for one that polls (Redis without keyspace
// events, PostgreSQL). Resolution, the shortest hold a reader surely
// sees, is Delay. Session, how long the server keeps a killed client's
// hold: ZooKeeper twice the session timeout and 1 s (expiry by ticks),
// etcd the lease and 1 s, Redis the key's TTL, PostgreSQL none.
//
//  1. Every grant a client saw is recorded once, under that holder's name:
//     one recorded hold, not two, and no hold under a name no client held
//     by. A grant the server surely held for no longer than Resolution may
//     fall between two reads and go unrecorded: it is counted as unseen,
//     not required. Where the holder's name outlives a grant (a PostgreSQL
//     backend, an etcd session's key), a holder that let go and got the
//     lock again between two reads is not seen to let go: one recorded hold
//     then stands for that run of its grants, each pause between them
//     shorter than Resolution (a grant counted from its request when its
//     client was paused while it asked: the server may have granted it
//     then, and its Acquired is late by the pause), and is checked from the
//     first one's start to the last one's end; when the last one's client
//     asked again within Resolution and never told a grant (paused or cut
//     off while it waited, or killed), the hold may end by that request's
//     end (+ LostLag) or its session's, + Delay. A hold under a name no
//     grant has is a mismatch unless a client asked and never told a grant
//     (killed, stopped, or its acquire failed after a pause): the server
//     may have granted it all the same, a killed client's queued node until
//     its session ends, and a node queued when the server went down until
//     its session ends after the server is back (rule 3's ServerUp +
//     Session).
//  2. A recorded hold starts between the client's Requested and its
//     Acquired: in [Requested - Early, Acquired + Delay], and after a clean
//     release no later than done (rule 3) + Slack: a read sees a hold only
//     while the server has it, and stamps it at most Slack late. A hold
//     first read later is the same holder's next grant, which a client
//     paused while it waited may hold on the server long before it can
//     tell it (a PostgreSQL backend's name outlives its grants). A hold
//     first seen after a gap (the history says it does not know when it
//     began) only has to start after the Requested and before the grant's
//     hold could have ended on the server.
//  3. A recorded hold ends within one poll of a clean Released: in
//     [Released - Early, done + Delay], done being when the release surely
//     reached the server (the client's next event: it tells Released before
//     it sends the release, and a pause may come between), as released, or
//     as no longer holding while still queued (rule 1's names that outlive
//     a grant). (or as rule 1's untold next request). It is not recorded as
//     expired, unless the client stopped before its release surely reached
//     the server or its lease or TTL could have run out before the reader
//     saw the key gone (Requested + Session - LeaseSlack): a reader that
//     polls cannot tell a key deleted from one expired between two reads,
//     and takes a key gone within LeaseSlack of its TTL's end, as last
//     read, for expired (Redis's PTTL, read with every poll: 100 ms, a
//     read's round trip). A client silenced while it held (paused, cut off,
//     the server down) may have lost its lease or session meanwhile and
//     still tell a clean release on its return (etcd's Unlock deletes a key
//     already gone without an error): its hold may end, and as expired,
//     from the silence on, less Early. When the client never let go (Lost,
//     a failed release, Killed) the server ends the hold at its session's,
//     lease's or TTL's end, while the client may still believe: the
//     recorded end comes no later than Lost + LostLag + Delay (LostLag, how
//     long the server may keep a hold after its client learnt it lost it:
//     none where the client learns it from the server, as ZooKeeper's do; a
//     third of the TTL and 500 ms on etcd, whose client judges its lease
//     gone by its own clock, from the last keepalive answer it got, while
//     the server counts from the last keepalive it took and revokes at its
//     next expiry check), or, killed, Killed + Session + Delay. The server
//     keeps a hold through its restart (ZooKeeper restores the session and
//     its node, etcd renews the lease; Redis comes back empty, so a key's
//     hold ends by the ServerDown at the latest, and its tokens, the
//     holders' names, go back and recur): when the server went down before
//     the client learnt it lost, or before its failed release was known to
//     fail (its next event), the recorded end comes no later than the later
//     of that bound and ServerUp + Session + Delay (a next outage that
//     begins within Session of ServerUp keeps it through that one too), and
//     at any time when the server never came back in the run. A release
//     that failed may never have reached the server (the client cut off,
//     paused or the server down while it held, while it asked or while its
//     release was on its way, or a connection lost under load): its hold
//     ends by the failure + Session + Delay. A hold or queued node whose
//     client is gone for good (killed, or its release never reached the
//     server) is kept, like a lost one, through a server outage that began
//     before its Session ran out: until ServerUp + Session + Delay, and
//     through the next outages that begin within it. A node gone unseen
//     (how unknown) is only told after a gap, and went at some moment of
//     it: its end is the whole gap; so is the end of a hold still recorded
//     when the history ends in a gap (the server down at the run's end).
//  4. Nothing is recorded as acquired, released, expired or given up while
//     the server was down (between the runner's ServerDown and the moment
//     it started the server again, ServerUp's Since, less Early at each
//     end: the server first answered somewhere between Since and ServerUp,
//     which is when the lab saw an answer, its readiness check or a
//     client's grant, and a reader may be served first); the history has a
//     gap instead: every outage longer than Delay + Early is covered by a
//     recorded gap from ServerDown + Delay + Early at the latest
//     (ServerDown is stamped as the signal is sent; the server dies, and
//     its connections close, a moment after) to Since - Early at the
//     earliest. An outage no longer than Delay + Early may fall between two
//     reads (a poll) and go unseen: it is not required to be a gap.
//  5. Recorded waits and holds match the clients' within the same
//     tolerance: a measured wait (queued to acquired) is at most the
//     client's (Requested to Acquired, or from the request of the first
//     of the same holder's unseen grants since the node queued, rule 1)
//     plus Delay + Early; a hold follows from rules 2 and 3: no shorter
//     than the client's less Delay + Early, no longer than its wait and
//     hold plus Delay + Early.
package word

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/lab"
)

// Bounds are a service's reader's tolerances.
type Bounds struct {
	// Resolution is the shortest hold the reader surely sees: its poll
	// when it polls, Slack when it watches.
	Resolution time.Duration
	// Delay is how late the reader may record a change: Resolution plus
	// Slack.
	Delay time.Duration
	// Early is how long before a client's stamp of a change the reader's
	// stamp of it may be.
	Early time.Duration
	// Session is how long the server may keep a killed client's hold: its
	// session timeout, lease or key TTL; 0 when the hold ends with the
	// process (PostgreSQL).
	Session time.Duration
	// LostLag is how long after a client learnt it lost its hold the
	// server may still keep it: 0 where the client learns it from the
	// server (ZooKeeper's session expiry); etcd's client judges its lease
	// gone by its own clock, from the last keepalive answer it got, while
	// the server counts from the last keepalive it took (up to a keepalive
	// interval, a third of the TTL, later) and revokes at its next expiry
	// check (every 500 ms).
	LostLag time.Duration
	// Reused: a client's holder's name outlives a grant, the same for its
	// next request (an etcd session's key, a PostgreSQL backend), so a
	// hold of that name may go on as a request it never told granted.
	Reused bool
	// LeaseSlack is how close to a key's TTL's end, as last read, the
	// reader takes the key gone for expired (history's pttlSlack for
	// Redis); 0 where the check has not needed one.
	LeaseSlack time.Duration
	// Empty: the server comes back from an outage empty, keeping no hold
	// through it (Redis without persistence); its tokens, and so its
	// holders' names, go back and are met again.
	Empty bool
}

// Slack is what a reader that watches may lag on a loaded machine, and
// what is added to a poll.
const Slack = 500 * time.Millisecond

// Early is how long a read's stamp may precede its answer.
const Early = 250 * time.Millisecond

// Watching are the bounds of a reader told of every change (ZooKeeper's
// watches, etcd's).
func Watching(session time.Duration) Bounds {
	return Bounds{Resolution: Slack, Delay: Slack, Early: Early, Session: session}
}

// Polling are the bounds of a reader that reads every poll (Redis without
// keyspace events, PostgreSQL).
func Polling(poll, session time.Duration) Bounds {
	return Bounds{Resolution: poll + Slack, Delay: poll + Slack, Early: Early, Session: session}
}

// Rule, Mismatch and Result live in package lab, so that a run's Outcome
// carries the result (this package imports lab).
type (
	Rule     = lab.Rule
	Mismatch = lab.Mismatch
	Result   = lab.WordResult
)

// The rules, as a mismatch names them.
const (
	Once    Rule = "recorded once"
	Start   Rule = "start"
	End     Rule = "end"
	Outage  Rule = "outage"
	Waited  Rule = "wait"
	NoGrant Rule = "no such grant"
)

// grant is one stretch a client believed it held.
type grant struct {
	client, holder string
	requested      time.Time
	acquired       time.Time
	// ended is when the belief ended (zero: still at the run's end) and
	// how: Released (clean), Lost, Killed, or "failed" (a release that
	// failed).
	ended time.Time
	how   string
	// sure is until when the server surely held: the client was running
	// and believing up to it.
	sure time.Time
	// releasedBy is, for a clean release, when the release surely
	// reached the server: the client's next event (it tells Released
	// before it sends the release, and a pause may come between), or
	// its kill (then its session's end); zero when the run ended first.
	releasedBy   time.Time
	killedUnsent bool
	// failedBy is, for a failed release, when the failure was surely
	// known: the client's next event (it tells Released before it sends
	// the release, failed or not); zero when the run ended first.
	failedBy time.Time
	// silencedOff: the client was cut off, paused or its server went
	// down while it asked (and it told the grant before it was let back),
	// or after it stamped a failed release and before the failure was
	// known: that release may have failed for it, never reaching the
	// server.
	silencedOff bool
	// pausedAsking: the client was paused or cut off while it asked, so the server
	// may have granted it at any moment from its request, and its
	// Acquired is late by the pause.
	pausedAsking bool
	// outages are the run's server outages: a hold the client never let
	// go of may outlive one (see latest).
	outages []span
	hold    *hold
	// merged are the same holder's next grants g's hold stands for too
	// (see merge); mergedInto the grant whose hold stands for this one.
	merged     []*grant
	mergedInto *grant
	// prev is the same holder's grant before.
	prev *grant
}

const failedRelease = "failed"

// stillHeld is until when a hold recorded for g is g's: while the client
// still held, when it let go cleanly (a hold recorded after is the same
// holder's next, maybe never told: the client stopped first), else until
// the latest the server's hold may end.
func (g *grant) stillHeld(b Bounds) time.Time {
	switch g.how {
	case string(lab.Released):
		return g.ended.Add(-b.Early)
	case string(lab.Lost), failedRelease:
		// A hold recorded after may be the same holder's next request's,
		// a node the server kept through an outage (rule 1).
		return g.ended.Add(b.LostLag + b.Delay)
	}
	return g.latest(b)
}

// latest is the latest a recorded hold of g may end, and so start.
func (g *grant) latest(b Bounds) time.Time {
	switch g.how {
	case string(lab.Released):
		switch {
		case g.releasedBy.IsZero():
			return farFuture
		case g.killedUnsent:
			return keptAfter(g.outages, g.releasedBy, b).Add(b.Delay)
		}
		return g.releasedBy.Add(b.Delay)
	case string(lab.Lost), failedRelease:
		// The server keeps a hold through its restart (ZooKeeper
		// restores the session, etcd renews the lease) until the
		// session runs out after it: an outage that began before the
		// client gave up, or before its failed release failed, may
		// keep the hold past the client's belief.
		known := g.ended
		if g.how == failedRelease {
			known = cmp.Or(g.failedBy, farFuture)
		}
		until := g.ended
		if g.how == string(lab.Lost) {
			until = g.ended.Add(b.LostLag)
		}
		if g.how == failedRelease {
			// A failed release may never have reached the server (the
			// client cut off, paused, the server down, or a connection
			// lost under load), which keeps the hold until its
			// session, lease or TTL runs out.
			until = keptAfter(g.outages, g.ended, b)
		}
		for _, o := range g.outages {
			if o.from.Before(known) {
				until = later(until, keptThrough(g.outages, o.from, b))
			}
		}
		return until.Add(b.Delay)
	case string(lab.Killed):
		return keptAfter(g.outages, g.ended, b).Add(b.Delay)
	}
	return farFuture
}

// keptAfter is the latest the server keeps the hold or queued node of a
// client gone for good at at (killed, or its release never sent): its
// session, lease or TTL from then, and when the server went down before
// that ran out, its session after the server came back (keptThrough).
func keptAfter(outages []span, at time.Time, b Bounds) time.Time {
	until := at.Add(b.Session)
	for _, o := range outages {
		if o.from.Before(until) && (o.to.IsZero() || o.to.After(at)) {
			until = later(until, keptThrough(outages, o.from, b))
		}
	}
	return until
}

var farFuture = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// keptThrough is the latest a server that went down at down keeps a
// session's hold or queued node: its session after the server is back
// (outages, in time order; an open one's to is zero), and back again after
// each next outage that began before that; down itself when it comes back
// empty.
func keptThrough(outages []span, down time.Time, b Bounds) time.Time {
	if b.Empty {
		return down // the hold went with the server
	}
	var until time.Time
	for _, o := range outages {
		switch {
		case until.IsZero() && o.from.Before(down.Add(Early)) && (o.to.IsZero() || o.to.After(down)),
			!until.IsZero() && o.from.Before(until):
			if o.to.IsZero() {
				return farFuture
			}
			until = o.to.Add(b.Session)
		}
	}
	if until.IsZero() {
		return farFuture
	}
	return until
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// hold is one recorded hold.
type hold struct {
	node         string
	since, start time.Time
	afterGap     bool
	end          time.Time   // zero: still held when the history ends
	how          history.How // how it left; empty when Unheld
	matched      bool
}

// span is a stretch of time. An outage's back is when the server was
// started again: it answered again somewhere between back and to (zero:
// at to).
type span struct{ from, to, back time.Time }

// answering is the earliest the server may have answered again after the
// outage s.
func (s span) answering() time.Time {
	if s.back.IsZero() || s.back.After(s.to) {
		return s.to
	}
	return s.back
}

// request is a request no grant answered, from when it was asked to when
// the client gave up on it; killed: the client was killed, and its queued
// node may still be granted until its session ends.
type request struct {
	span
	client string
	killed bool
	// paused: its client was paused or cut off while it asked, so a grant may have
	// gone untold.
	paused bool
	// downAt is when the server went down while the request was open:
	// the server keeps its queued node through the restart (zero: it
	// did not); outages are the run's.
	downAt  time.Time
	outages []span
}

func (s span) has(t time.Time) bool { return t.After(s.from) && t.Before(s.to) }

// Check compares the clients' events (any order) with the history's
// events of the lock over the run, as Walk reads them (restatements
// included), up to histEnd, when the history was read.
func Check(clients []lab.Event, hist []history.Event, b Bounds, histEnd time.Time) Result {
	grants, open, outages, _ := grantsOf(clients)
	holds := holdsOf(hist)
	gaps := history.Gaps(history.State{}, slices.DeleteFunc(slices.Clone(hist), func(e history.Event) bool { return e.Synthetic }), histEnd)
	r := Result{Grants: len(grants), Holds: len(holds), Outages: len(outages), Mismatches: []Mismatch{}}
	c := checker{b: b, res: &r, gaps: gaps, open: open}
	byHolder := map[string][]*grant{}
	for _, g := range grants {
		byHolder[g.holder] = append(byHolder[g.holder], g)
	}
	heldBy := map[string][]*hold{}
	for _, h := range holds {
		heldBy[h.node] = append(heldBy[h.node], h)
	}
	for _, gs := range byHolder {
		slices.SortFunc(gs, func(a, b *grant) int { return a.requested.Compare(b.requested) })
		for i := 1; i < len(gs); i++ {
			gs[i].prev = gs[i-1]
		}
	}
	for name, hs := range heldBy {
		c.match(byHolder[name], hs)
		c.merge(byHolder[name])
	}
	for _, g := range grants {
		c.checkGrant(g, histEnd)
	}
	c.unmatched(holds, open)
	c.outages(outages, hist)
	slices.SortStableFunc(r.Mismatches, func(a, b Mismatch) int { return a.At.Compare(b.At) })
	return r
}

// grantsOf reads the clients' grants, the requests still open when their
// client was killed or stopped (their grant may be recorded though the
// client never told it; one still open at the events' end goes to
// farFuture), and the server's outages, over, and when the one still
// going began (zero: none).
func grantsOf(events []lab.Event) (grants []*grant, open []request, outages []span, down time.Time) {
	events = slices.SortedStableFunc(slices.Values(events), func(a, b lab.Event) int { return a.At.Compare(b.At) })
	r := grantReader{held: map[string]*grant{}, asked: map[string]time.Time{}, askedDown: map[string]time.Time{},
		releasing: map[string]*grant{}, failing: map[string]*grant{}, silencedAsking: map[string]bool{}, pausedAsking: map[string]bool{}}
	for _, e := range events {
		r.settle(e)
		r.read(e)
	}
	return r.finish()
}

// grantReader is grantsOf's reading of the clients' events, in time order.
type grantReader struct {
	held      map[string]*grant
	asked     map[string]time.Time
	askedDown map[string]time.Time // an open request's server went down at
	// silencedAsking are the clients cut off or paused, or whose server
	// went down, while they asked, until they are let back (silenced);
	// pausedAsking those paused or cut off while they asked, until they
	// tell.
	silencedAsking, pausedAsking map[string]bool
	down                         time.Time
	// releasing and failing are the grants whose release (clean, or
	// failed) was stamped before it was sent: their client's next event
	// bounds when it was.
	releasing, failing map[string]*grant
	grants             []*grant
	open               []request
	outages            []span
}

// settle bounds, by e, the release its client stamped before sending.
func (r *grantReader) settle(e lab.Event) {
	switch e.Kind {
	case lab.Paused, lab.Resumed, lab.Cut, lab.Healed:
		// The nemesis's, not the client's: they tell nothing of its
		// release (silenced notes the pause or the cut).
	default:
		if g := r.failing[e.Client]; g != nil {
			g.failedBy = e.At
			delete(r.failing, e.Client)
		}
	}
	if g := r.releasing[e.Client]; g != nil {
		switch e.Kind {
		case lab.Requested, lab.Acquired, lab.Failed, lab.Wrote, lab.Refused, lab.Lost, lab.Released:
			g.releasedBy = e.At
			delete(r.releasing, e.Client)
		case lab.Killed:
			g.releasedBy, g.killedUnsent = e.At, true
			delete(r.releasing, e.Client)
		}
	}
}

func (r *grantReader) read(e lab.Event) {
	switch e.Kind {
	case lab.Failed:
		if strings.HasPrefix(e.Message, "acquire:") {
			r.unanswered(e.Client, e.At, false)
		}
	case lab.Requested:
		r.unanswered(e.Client, e.At, false)
		r.asked[e.Client] = e.At
	case lab.Acquired:
		r.end(e.Client, e.At, string(lab.Lost))
		g := &grant{client: e.Client, holder: e.Holder, requested: cmp.Or(r.asked[e.Client], e.At), acquired: e.At,
			silencedOff: r.silencedAsking[e.Client], pausedAsking: r.pausedAsking[e.Client]}
		delete(r.asked, e.Client)
		delete(r.silencedAsking, e.Client)
		delete(r.pausedAsking, e.Client)
		r.held[e.Client] = g
		r.grants = append(r.grants, g)
	case lab.Released:
		r.released(e)
	case lab.Lost:
		r.end(e.Client, e.At, string(lab.Lost))
	case lab.Killed:
		r.unanswered(e.Client, e.At, true)
		r.end(e.Client, e.At, string(lab.Killed))
	case lab.Paused, lab.Cut:
		r.silenced(e.At, e.Client)
		if _, ok := r.asked[e.Client]; ok {
			r.pausedAsking[e.Client] = true
		}
	case lab.Resumed, lab.Healed:
		delete(r.silencedAsking, e.Client)
	case lab.ServerDown:
		r.down = e.At
		r.silenced(e.At, "")
		for c := range r.asked {
			r.askedDown[c] = e.At
		}
	case lab.ServerUp:
		clear(r.silencedAsking)
		if !r.down.IsZero() {
			r.outages = append(r.outages, span{from: r.down, to: e.At, back: e.Since})
			r.down = time.Time{}
		}
	}
}

func (r *grantReader) released(e lab.Event) {
	how := string(lab.Released)
	g := r.held[e.Client]
	if e.Message != "" {
		how = failedRelease
	} else if g != nil {
		r.releasing[e.Client] = g
	}
	r.end(e.Client, e.At, how)
	if g != nil && how == failedRelease {
		r.failing[e.Client] = g
	}
}

// end ends client c's grant at at.
func (r *grantReader) end(c string, at time.Time, how string) {
	g := r.held[c]
	if g == nil {
		return
	}
	g.ended, g.how = at, how
	if g.sure.IsZero() {
		g.sure = at
	}
	delete(r.held, c)
}

// silenced marks the moment a client's hold (every client's when c is
// "") may have ended on the server without it: a pause, a cut, the
// server down.
func (r *grantReader) silenced(at time.Time, c string) {
	for client, g := range r.held {
		if (c == "" || client == c) && g.sure.IsZero() {
			g.sure = at
		}
	}
	for client, g := range r.failing {
		if c == "" || client == c {
			g.silencedOff = true
		}
	}
	for client := range r.asked {
		if c == "" || client == c {
			r.silencedAsking[client] = true
		}
	}
}

// unanswered closes the client's request with no grant told: the server
// may have granted it all the same (see rule 1).
func (r *grantReader) unanswered(c string, at time.Time, killed bool) {
	if q, ok := r.asked[c]; ok {
		r.open = append(r.open, request{span: span{from: q, to: at}, client: c, killed: killed, paused: r.pausedAsking[c], downAt: r.askedDown[c]})
		delete(r.asked, c)
	}
	delete(r.askedDown, c)
	delete(r.pausedAsking, c)
}

// finish closes the requests still open at the run's end and gives every
// grant and request the run's outages (one not over by the end too).
func (r *grantReader) finish() ([]*grant, []request, []span, time.Time) {
	for c, q := range r.asked {
		r.open = append(r.open, request{span: span{from: q, to: farFuture}, client: c, paused: r.pausedAsking[c], downAt: r.askedDown[c]})
	}
	all := r.outages
	if !r.down.IsZero() {
		all = append(slices.Clip(r.outages), span{from: r.down}) // not back in the run
	}
	for _, g := range r.grants {
		g.outages = all
	}
	for i := range r.open {
		r.open[i].outages = all
	}
	return r.grants, r.open, r.outages, r.down
}

// holdsOf reads the recorded holds from the history's events. A
// restatement (a keyframe's, a first sight's) tells only of a node not
// known yet: one there before the reader saw it, held since some moment
// the history does not know.
func holdsOf(evs []history.Event) []*hold {
	type node struct {
		since    time.Time
		restated bool
		holding  *hold
	}
	var out []*hold
	nodes := map[string]*node{}
	for _, e := range evs {
		n := nodes[e.Node]
		if e.Synthetic {
			switch {
			case e.Kind == history.Queued && n == nil:
				nodes[e.Node] = &node{since: e.Since, restated: true}
			case e.Kind == history.Acquired && n != nil && n.restated && n.holding == nil:
				n.holding = &hold{node: e.Node, start: e.Time, afterGap: true}
				out = append(out, n.holding)
			}
			continue
		}
		switch e.Kind {
		case history.Queued:
			if n == nil {
				nodes[e.Node] = &node{since: e.Since}
			}
		case history.Acquired:
			if n == nil || n.holding != nil {
				continue
			}
			n.holding = &hold{node: e.Node, since: cmp.Or(e.Since, n.since), start: e.Time, afterGap: !e.SeenAcquired()}
			out = append(out, n.holding)
		case history.Unheld, history.Left:
			if n == nil {
				continue
			}
			if h := n.holding; h != nil {
				h.end, h.how = e.Time, e.How
				n.holding = nil
			}
			if e.Kind == history.Left {
				delete(nodes, e.Node)
			}
		}
	}
	return out
}

type checker struct {
	b    Bounds
	open []request // the requests no grant answered
	res  *Result
	gaps []history.Span
}

func (c *checker) fail(rule Rule, g *grant, holder string, at time.Time, format string, args ...any) {
	m := Mismatch{Rule: rule, Holder: holder, At: at, Message: fmt.Sprintf(format, args...)}
	if g != nil {
		m.Client, m.Holder = g.client, g.holder
	}
	c.res.Mismatches = append(c.res.Mismatches, m)
}

// startsBy is the latest a recorded hold of g may start: by its Acquired
// and the reader's delay, or, for a hold first seen after a gap, by the
// grant's end; never after seenBy.
func (c *checker) startsBy(g *grant, h *hold) time.Time {
	if h.afterGap {
		return g.latest(c.b)
	}
	by := g.acquired.Add(c.b.Delay)
	if seen := g.seenBy(c.b); seen.Before(by) {
		return seen
	}
	return by
}

// seenBy is the latest a read may first see g's hold. A read sees a node
// hold only while the server has it, and stamps what it saw at most Slack
// late: a hold first read more than Slack after g's clean release surely
// reached the server is not g's but the same holder's next grant's, which
// a client paused while it waited holds on the server long before it can
// tell it (a PostgreSQL backend's name outlives its grants).
func (g *grant) seenBy(b Bounds) time.Time {
	if g.how == string(lab.Released) && !g.releasedBy.IsZero() && !g.killedUnsent {
		return g.releasedBy.Add(Slack)
	}
	return g.latest(b)
}

// match pairs one holder's grants with its recorded holds, both in time
// order: each hold goes to the first grant still free whose window holds
// its start, skipping a grant whose own start window it misses when the
// next grant's takes it (a short grant the reader never saw). A hold that
// falls in a grant already matched is that grant recorded twice.
func (c *checker) match(gs []*grant, hs []*hold) {
	slices.SortFunc(hs, func(a, b *hold) int { return a.start.Compare(b.start) })
	j := 0
	for _, h := range hs {
		for j < len(gs) {
			g := gs[j]
			next := j+1 < len(gs) && !h.start.Before(gs[j+1].requested.Add(-c.b.Early))
			if g.seenBy(c.b).Before(h.start) || (next && (h.start.After(c.startsBy(g, h)) || c.nextIsCloser(g, gs[j+1], h))) {
				j++
				continue
			}
			break
		}
		// Paired when the hold overlaps the grant's time, so that a
		// start recorded before the request is told as such (rule 2).
		if j < len(gs) && (h.end.IsZero() || !h.end.Before(gs[j].requested.Add(-c.b.Early))) {
			gs[j].hold, h.matched = h, true
			j++
			continue
		}
		if j > 0 && gs[j-1].hold != nil && h.start.Before(gs[j-1].stillHeld(c.b)) {
			g := gs[j-1]
			h.matched = true
			c.fail(Once, g, "", h.start, "recorded twice: held from %s and again from %s, for one grant (asked %s, acquired %s)",
				stamp(g.hold.start), stamp(h.start), stamp(g.requested), stamp(g.acquired))
		}
	}
}

// nextIsCloser reports whether a hold first seen after g surely let go
// (its clean release reached the server before the hold's start) is the
// next grant's rather than g's: the next one's start window holds it too,
// and it took the lock nearer the hold's start. The same holder's grants
// may follow each other closer than a reader's delay (an etcd session's
// key, many times a second), so start windows overlap, and the first free
// grant is not always the hold's (after a gap above all).
func (c *checker) nextIsCloser(g, next *grant, h *hold) bool {
	if g.how != string(lab.Released) || g.killedUnsent || g.releasedBy.IsZero() || !g.releasedBy.Before(h.start) ||
		h.start.After(c.startsBy(next, h)) {
		return false
	}
	return (h.start.Sub(next.acquired)).Abs() < (h.start.Sub(g.acquired)).Abs()
}

// merge gives a recorded hold that outlasts its grant the same holder's
// next grants, while the holder's pause between two of them was short
// enough to fall between two reads (Resolution): a reader that samples
// does not see a holder let go and get the lock again between reads when
// the holder's name outlives its grant (a PostgreSQL backend, an etcd
// session's key). The hold is then that run of grants, checked from the
// first one's start to the last one's end.
func (c *checker) merge(gs []*grant) {
	for i := 0; i < len(gs); i++ {
		g := gs[i]
		h := g.hold
		if h == nil {
			continue
		}
		for i+1 < len(gs) && gs[i+1].hold == nil && (h.end.IsZero() || h.end.After(g.last().latest(c.b))) {
			next, last := gs[i+1], g.last()
			if last.how != string(lab.Released) || next.grantedFrom().Sub(last.ended) > c.b.Resolution || !next.requested.Before(cmp.Or(h.end, farFuture)) {
				break
			}
			g.merged = append(g.merged, next)
			next.mergedInto = g
			i++
		}
	}
}

// grantedFrom is the earliest the server may have granted g: its
// Acquired, or its request when its client was paused while it asked.
func (g *grant) grantedFrom() time.Time {
	if g.pausedAsking {
		return g.requested
	}
	return g.acquired
}

// last is the last grant of g's run of merged grants: g when none.
func (g *grant) last() *grant {
	if len(g.merged) == 0 {
		return g
	}
	return g.merged[len(g.merged)-1]
}

// checkGrant checks g against its recorded hold (rules 1, 2, 3, 5).
func (c *checker) checkGrant(g *grant, histEnd time.Time) {
	h := g.hold
	if g.mergedInto != nil {
		c.res.Checked++
		c.res.Merged++
		return
	}
	if h == nil {
		sure := cmp.Or(g.sure, histEnd)
		if sure.Sub(g.acquired) <= c.b.Resolution+c.b.Early || g.acquired.After(histEnd.Add(-c.b.Delay)) {
			c.res.Unseen++
			return
		}
		c.res.Checked++
		c.fail(Once, g, "", g.acquired, "not recorded: it held from %s to %s at least, longer than a read (%v)",
			stamp(g.acquired), stamp(sure), c.b.Resolution)
		return
	}
	c.res.Checked++
	if h.start.Before(g.requested.Add(-c.b.Early)) || h.start.After(c.startsBy(g, h)) {
		c.fail(Start, g, "", h.start, "recorded holding from %s; the client asked at %s and held at %s (tolerance %v before, %v after)",
			stamp(h.start), stamp(g.requested), stamp(g.acquired), c.b.Early, c.b.Delay)
	}
	c.checkEnd(g.last(), h, histEnd)
	if !h.afterGap && !h.since.IsZero() {
		// The node queued may be before this grant's request: the same
		// holder's grants before it, each too short for a read, fell
		// between two reads that saw it waiting (rule 5).
		asked := g.requested
		for p := g.prev; p != nil && p.hold == nil && p.mergedInto == nil && !p.requested.Before(h.since.Add(-c.b.Early-c.b.Delay)); p = p.prev {
			asked = p.requested
		}
		if w, cw := h.start.Sub(h.since), g.acquired.Sub(asked); w > cw+c.b.Delay+c.b.Early {
			c.fail(Waited, g, "", h.start, "recorded a wait of %v; the client waited %v (tolerance %v)",
				w.Round(time.Millisecond), cw.Round(time.Millisecond), c.b.Delay+c.b.Early)
		}
	}
}

// endsFrom is the earliest the server may have ended g's hold, released
// cleanly: its release, or, when the client was silenced while it held
// (paused, cut off, the server down), the silence: its lease or session
// may have run out meanwhile, and a client back from it may still tell a
// clean release (etcd's Unlock deletes a key already gone without error).
func (g *grant) endsFrom() time.Time {
	if g.sure.Before(g.ended) {
		return g.sure
	}
	return g.ended
}

// checkEnd is rule 3.
func (c *checker) checkEnd(g *grant, h *hold, histEnd time.Time) {
	if h.end.IsZero() {
		// A history that ends in a gap (the server down at the run's
		// end) cannot know when a node went during it: as for a node
		// gone unseen, its end is the whole gap.
		if gap, ok := c.gapAt(histEnd); ok && g.how != "" && !gap.From.After(g.latest(c.b)) {
			return
		}
		if g.how == string(lab.Released) && g.ended.Add(c.b.Delay).Before(histEnd) {
			c.fail(End, g, "", g.ended, "released at %s; the history still has it holding at %s", stamp(g.ended), stamp(histEnd))
		}
		return
	}
	// A node gone unseen went at some moment of the gap before: its end
	// is the whole gap, from the last live read.
	from := h.end
	if h.how == history.Unseen {
		gap, ok := c.gapAt(h.end)
		if !ok {
			c.fail(End, g, "", h.end, "recorded gone unseen at %s, with no gap before", stamp(h.end))
		} else if gap.From.Before(from) {
			from = gap.From
		}
	}
	switch g.how {
	case string(lab.Released):
		if h.end.Before(g.endsFrom().Add(-c.b.Early)) || from.After(c.heldUntil(g)) {
			c.fail(End, g, "", h.end, "recorded the hold ending at %s; the client released at %s, surely done by %s (tolerance %v before, %v after)",
				stamp(h.end), stamp(g.ended), stamp(cmp.Or(g.releasedBy, g.ended)), c.b.Early, c.b.Delay)
		}
		switch {
		case h.how != history.Expired:
		case g.releasedBy.IsZero() || g.killedUnsent, g.sure.Before(g.ended):
			// The client stopped before anything told its release had
			// reached the server, or was silenced while it held: its
			// session may well have expired.
		case c.b.Session > 0 && !h.end.Before(g.requested.Add(c.b.Session-c.b.LeaseSlack)):
			// Its lease could have run out before the reader saw it
			// gone: the reader cannot tell (rule 3).
			c.res.Guessed++
		default:
			c.fail(End, g, "", h.end, "recorded as expired at %s, before its lease of %v could have run out; the client released at %s",
				stamp(h.end), c.b.Session, stamp(g.ended))
		}
	case "":
		// Still believed at the run's end: any end the server chose.
	default:
		if from.After(g.latest(c.b)) {
			c.fail(End, g, "", h.end, "recorded the hold ending at %s; the client %s at %s, the server's hold ends by %s",
				stamp(h.end), g.how, stamp(g.ended), stamp(g.latest(c.b)))
		}
	}
}

// heldUntil is the latest a hold recorded for g, released cleanly, may
// end: g's own bound (latest), or, where the holder's name outlives a grant
// (Reused: an etcd session's key, a PostgreSQL backend), the bound of the
// same client's next request, made within Resolution of the release and
// never told granted (its client paused or cut off while it waited, or
// killed): the server may have granted it all the same, and kept it
// until the request ended (+ LostLag) or its session ran out.
func (c *checker) heldUntil(g *grant) time.Time {
	until := g.latest(c.b)
	if !c.b.Reused {
		return until
	}
	for _, q := range c.open {
		if q.client != g.client || !(q.paused || q.killed) || q.from.Before(g.ended.Add(-c.b.Early)) || q.from.After(g.ended.Add(c.b.Resolution)) {
			continue
		}
		until = later(until, later(q.to.Add(c.b.LostLag), keptAfter(q.outages, q.from, c.b)).Add(c.b.Delay))
	}
	return until
}

// gapAt is the recorded gap t is in or at the end of.
func (c *checker) gapAt(t time.Time) (history.Span, bool) {
	i := slices.IndexFunc(c.gaps, func(s history.Span) bool {
		return !t.Before(s.From) && !t.After(s.To.Add(c.b.Early))
	})
	if i < 0 {
		return history.Span{}, false
	}
	return c.gaps[i], true
}

// unmatched reports the recorded holds no grant has (rule 1), but those
// a killed or stopped client may have had without telling.
func (c *checker) unmatched(holds []*hold, open []request) {
	for _, h := range holds {
		if h.matched {
			continue
		}
		if i := slices.IndexFunc(open, func(q request) bool {
			by := q.to.Add(c.b.Delay)
			if q.killed {
				by = keptAfter(q.outages, q.to, c.b).Add(c.b.Delay)
			}
			if !q.downAt.IsZero() {
				by = later(by, keptThrough(q.outages, q.downAt, c.b).Add(c.b.Delay))
			}
			return !h.start.Before(q.from.Add(-c.b.Early)) && !h.start.After(by)
		}); i >= 0 {
			open = slices.Delete(open, i, i+1)
			continue
		}
		c.fail(NoGrant, nil, h.node, h.start, "recorded holding from %s; no client held by that name then", stamp(h.start))
	}
}

// outages is rule 4.
func (c *checker) outages(outages []span, hist []history.Event) {
	for _, o := range outages {
		in := span{from: o.from.Add(c.b.Early), to: o.answering().Add(-c.b.Early)}
		for _, e := range hist {
			if e.Synthetic || !in.has(e.Time) {
				continue
			}
			switch {
			case e.SeenAcquired():
				c.fail(Outage, nil, e.Node, e.Time, "recorded acquired at %s while the server was down (%s to %s)", stamp(e.Time), stamp(o.from), stamp(o.to))
			case e.Kind == history.Left && e.How != history.Unseen:
				c.fail(Outage, nil, e.Node, e.Time, "recorded %s at %s while the server was down (%s to %s)", e.How, stamp(e.Time), stamp(o.from), stamp(o.to))
			}
		}
		if o.answering().Sub(o.from) <= c.b.Delay+c.b.Early {
			continue
		}
		if !slices.ContainsFunc(c.gaps, func(s history.Span) bool {
			return !s.From.After(o.from.Add(c.b.Delay+c.b.Early)) && !s.To.Before(o.answering().Add(-c.b.Early))
		}) {
			c.fail(Outage, nil, "", o.from, "the server was down from %s to %s; the history has no gap over it", stamp(o.from), stamp(o.to))
		}
	}
}

func stamp(t time.Time) string { return t.Format("15:04:05.000") }

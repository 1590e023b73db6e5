package zksim

import (
	"strings"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/simulator"
)

// ledger is a dry run of a plan: who is in the queue and who holds, asked of
// lockqueue.Build over made-up sequence numbers (only their order matters).
// It catches a plan that would release or write from a client holding
// nothing before any session is opened, and it checks a teacher's action
// against the steps before it.
type ledger struct {
	lock    simulator.LockKind
	leases  int
	seq     int64
	clients map[string]*ledgerClient
	order   []string
	// split: the plan tells the key moment step by step (an expire step):
	// a pause or crash only cuts, expire, wake and resume follow.
	split bool
	// toWake: an expiry has notified watchers a wake step has not yet let
	// handle it.
	toWake bool
}

type ledgerClient struct {
	mode  lockqueue.Mode
	node  string // while queued
	state string // queued, stale, released, crashed, expired; lapsed: paused past its expiry, not yet resumed
	since int    // step of the last state change
	// second: it queued on a scene's other lock (lock-second), whose
	// queue the ledger does not keep: who gets it is the server's to say.
	second bool
	// cut: a split plan's pause or crash has cut it off; its node stays
	// queued until its expire step. held: it held when cut.
	cut, paused, held bool
}

func newLedger(lock simulator.LockKind, leases int) *ledger {
	return &ledger{lock: lock, leases: leases, clients: map[string]*ledgerClient{}}
}

func dryRun(lock simulator.LockKind, leases int, plan []simulator.Action) error {
	l := newLedger(lock, leases)
	l.split = simulator.Split(plan)
	for i, a := range plan {
		if err := l.apply(i+1, a); err != nil {
			return err
		}
	}
	return nil
}

// queue is the lock as Build sees it now.
func (l *ledger) queue() lockqueue.Snapshot {
	var ch []lockqueue.Child
	for _, n := range l.order {
		if c := l.clients[n]; c.state == "queued" {
			ch = append(ch, lockqueue.Child{Name: c.node, EphemeralOwner: 1})
		}
	}
	return lockqueue.Build("/dry-run", ch, buildOptions(l.lock, l.leases, simulator.Predecessor))
}

// apply checks one step and records its effect.
func (l *ledger) apply(step int, a simulator.Action) error {
	fail := simulator.PlanStep{Action: a, N: step}.Fail
	if err := simulator.CheckAction(l.lock, a, false); err != nil && a.Action != ActLockSecond {
		return invalidf("step %d: %v", step, err)
	}
	c := l.clients[a.Client]
	if simulator.IsAdd(a.Action) {
		if c != nil {
			return fail("%s is already in this run", a.Client)
		}
		mode, _ := simulator.ModeOf(l.lock, a.Action)
		l.seq++
		l.clients[a.Client] = &ledgerClient{mode: mode, node: lockqueue.SeqName(nodePrefix(mode, a.Client), l.seq), state: "queued", since: step}
		l.order = append(l.order, a.Client)
		return nil
	}
	if c == nil {
		return fail("unknown client %s: add it first (%s)", a.Client, strings.Join(addActions(l.lock), " or "))
	}
	switch c.state {
	case "released":
		return fail("%s has already released (step %d)", a.Client, c.since)
	case "crashed":
		return fail("%s crashed at step %d", a.Client, c.since)
	case "expired":
		// Not "its session expired": whether a pause outlasts a session is
		// for the run to show.
		return fail("%s was paused at step %d with no lock, so the plan gives it nothing more to do", a.Client, c.since)
	}
	if err := l.applySplit(a, c, step, fail); err != nil || simulator.IsSplitAction(a.Action) {
		return err
	}
	// Who holds instead, or whom it waits for, is not said: it is what a
	// student predicts (simulator.NoLock).
	holds := l.holds(a.Client)
	switch a.Action {
	case simulator.ActRelease:
		if !holds {
			return fail("%s", simulator.NoLock(a.Client, "release"))
		}
		l.leave(c, "released", step)
	case simulator.ActWrite:
		if !holds {
			return fail("%s", simulator.NoLock(a.Client, "write under"))
		}
	case ActLockSecond:
		if !holds {
			return fail("%s: it takes its second lock while it holds its first", simulator.NoLock(a.Client, "take a second one beside"))
		}
		if c.second {
			return fail("%s has taken its second lock already", a.Client)
		}
		c.second = true
	case simulator.ActCrash, simulator.ActPause:
		if a.Action == simulator.ActPause && c.second {
			return fail("%s holds two locks: a pause of a client of two locks is not modelled; crash it instead", a.Client)
		}
		if c.state == "stale" {
			return fail("%s was paused already at step %d and has not come back", a.Client, c.since)
		}
		switch {
		case l.split:
			// The node stays until the expire step.
			c.cut, c.paused, c.held, c.since = true, a.Action == simulator.ActPause, holds, step
		case a.Action == simulator.ActCrash:
			l.leave(c, "crashed", step)
		case holds:
			// A paused holder comes back believing it still holds.
			l.leave(c, "stale", step)
		default:
			l.leave(c, "expired", step)
		}
	}
	return nil
}

// applySplit checks and records a split plan's steps: a cut client does
// nothing but expire, a lapsed one nothing but resume, and a wake follows
// an expiry.
func (l *ledger) applySplit(a simulator.Action, c *ledgerClient, step int, fail func(string, ...any) error) error {
	switch {
	case c.state == "lapsed" && a.Action != simulator.ActResume:
		return fail("%s is paused past its session's expiry (step %d): only resume can follow", a.Client, c.since)
	case c.cut && c.state == "queued" && a.Action != simulator.ActExpire:
		return fail("%s is cut off (step %d): its expire step must come first", a.Client, c.since)
	}
	switch a.Action {
	case simulator.ActExpire:
		if !c.cut || c.state != "queued" {
			return fail("%s has no cut-off session to expire: pause or crash it first", a.Client)
		}
		state := "crashed"
		if c.paused {
			state = "lapsed"
		}
		l.leave(c, state, step)
		l.toWake = true
	case simulator.ActWake:
		if !l.toWake {
			return fail("no expiry has notified anyone yet")
		}
		l.toWake = false
	case simulator.ActResume:
		if c.state != "lapsed" {
			return fail("%s is not paused past its session's expiry", a.Client)
		}
		c.state, c.cut = "expired", false
		if c.held {
			c.state = "stale" // it comes back believing it holds
		}
	}
	return nil
}

func (l *ledger) leave(c *ledgerClient, state string, step int) {
	c.state, c.since = state, step
	l.seq++ // a delete bumps the parent's cversion too
}

// holds reports whether a client holds, or believes it holds.
func (l *ledger) holds(name string) bool {
	c := l.clients[name]
	if c.state == "stale" {
		return true
	}
	for _, n := range l.queue().Nodes {
		if n.Name == c.node {
			return n.Holding
		}
	}
	return false
}

func addActions(lock simulator.LockKind) []string {
	if lock == simulator.RW {
		return []string{simulator.ActAddReader, simulator.ActAddWriter}
	}
	return []string{simulator.ActAdd}
}

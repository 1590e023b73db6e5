package zksim

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/zklockviz/zklockviz/simulator"
)

// narrate tells a step in one or two sentences, from its events. Its times
// are the run's clock's (an expiry takes the session timeout), never what
// this machine measured, so a step reads the same on every replay.
func narrate(a simulator.Action, events []simulator.Event, lock simulator.LockKind, sessionTimeout time.Duration) string {
	var parts []string
	for i, e := range events {
		switch e.Event {
		case simulator.EvLock, simulator.EvWait:
			if e.Client != a.Client || !simulator.IsAdd(a.Action) || i != 0 {
				continue
			}
			what, locks := "a client", "locks at once"
			switch {
			case lock == simulator.LeaseLock:
				what, locks = "an instance", "takes a lease at once"
			case a.Action == simulator.ActAddReader:
				what = "a reader"
			case lock == simulator.RW:
				what = "a writer"
			}
			if e.Event == simulator.EvLock {
				parts = append(parts, fmt.Sprintf("%s joins as %s and %s", e.Client, what, locks))
			} else if e.On != "" {
				parts = append(parts, fmt.Sprintf("%s joins as %s and waits for %s, %s", e.Client, what, e.On, watchPhrase(e.Watch)))
			} else {
				parts = append(parts, fmt.Sprintf("%s joins as %s and stands by, %s", e.Client, what, watchPhrase(e.Watch)))
			}
			if ns := notifies(events); len(ns) > 0 {
				parts = append(parts, fmt.Sprintf("its create woke %s for nothing %s", simulator.ListAnd(clientsOf(ns)), countPhrase(len(ns))))
			}
		case simulator.EvUnlock:
			if len(e.Notified) == 0 && strings.Contains(e.Text, "already gone") {
				parts = append(parts, fmt.Sprintf("%s releases, but its node is long gone", e.Client))
				continue
			}
			parts = append(parts, fmt.Sprintf("%s released", e.Client)+notifiedPhrase(events, e, lock))
		case simulator.EvCrash:
			parts = append(parts, fmt.Sprintf("%s crashed; its node outlives it until the session expires", e.Client))
		case simulator.EvPause:
			parts = append(parts, fmt.Sprintf("%s stops in a long GC pause; its node stays until the session expires", e.Client))
		case simulator.EvExpire:
			if a.Action == simulator.ActExpire {
				parts = append(parts, expiredPhrase(e, sessionTimeout))
				continue
			}
			parts = append(parts, fmt.Sprintf("a session timeout (%.1fs) later its session expired and ZooKeeper deleted its node", sessionTimeout.Seconds())+notifiedPhrase(events, e, lock))
		case simulator.EvResume:
			if strings.Contains(e.Text, "still believes") {
				parts = append(parts, e.Client+" resumes: its session had expired during the pause and it has a new one, but it still believes it holds the lock")
			} else {
				parts = append(parts, e.Client+" resumes: its session expired while it waited, its watch went with it; it is out of the queue")
			}
		case simulator.EvWrite, simulator.EvFenced:
			parts = append(parts, simulator.Said(e.Client, e.Text))
		}
	}
	if a.Action == simulator.ActWake {
		parts = append(parts, wakePhrase(events, lock))
	}
	return simulator.Sentence(a, parts)
}

// expiredPhrase tells a split scenario's expire step: what the server did,
// whom it told, and what the stopped client still believes.
func expiredPhrase(e simulator.Event, sessionTimeout time.Duration) string {
	s := fmt.Sprintf("%s's session timeout (%.1fs) ran out with no word from it: ZooKeeper expired its session and deleted its node", e.Client, sessionTimeout.Seconds())
	if strings.Contains(e.Text, "nobody watched it") {
		s += "; nobody watched it"
	} else {
		s += "; it sent its watchers their notification, which they handle in the next step"
	}
	if strings.Contains(e.Text, "believes it holds") {
		s += fmt.Sprintf("; %s, still stopped, believes it holds the lock: it is a zombie holder whose node is gone", e.Client)
	}
	return s
}

// wakePhrase tells a split scenario's hand-over step: the clients that
// handled the expiry's notification, and who took the lock.
func wakePhrase(events []simulator.Event, lock simulator.LockKind) string {
	all := notifies(events)
	if len(all) == 0 {
		return "nobody had a notification to handle"
	}
	woken := clientsOf(all)
	verb := "handle"
	if len(woken) == 1 {
		verb = "handles"
	}
	s := fmt.Sprintf("%s %s the expiry's watch notification %s and re-reads the children", simulator.ListAnd(woken), verb, countPhrase(len(all)))
	s += lockedPhrase(events, "", lock)
	wasted := 0
	for _, e := range all {
		if e.Wasted {
			wasted++
		}
	}
	if wasted > 0 {
		s += fmt.Sprintf("; %d woke for nothing", wasted)
	}
	return s
}

func watchPhrase(w string) string {
	if w == "children" {
		return "watching the lock's whole children list"
	}
	return "watching only that node"
}

// notifies is the step's notify events: every watch event a client was
// delivered, the same events the meters count.
func notifies(events []simulator.Event) []simulator.Event {
	var out []simulator.Event
	for _, e := range events {
		if e.Event == simulator.EvNotify {
			out = append(out, e)
		}
	}
	return out
}

// clientsOf names the clients of events once each, in order.
func clientsOf(events []simulator.Event) []string {
	var out []string
	for _, e := range events {
		if !slices.Contains(out, e.Client) {
			out = append(out, e.Client)
		}
	}
	return out
}

// countPhrase is how a narration states a step's notification count, the
// figure the notifications meter moves by; tests read it back.
func countPhrase(n int) string {
	if n == 1 {
		return "(1 notification)"
	}
	return fmt.Sprintf("(%d notifications)", n)
}

// notifiedPhrase says who a release or expiry woke and what came of it. It
// tells every notify event of the step, the releasing client's own too: a
// herd holder's leftover children watch fires on its own delete, and the
// meters count that wake-up like any other.
func notifiedPhrase(events []simulator.Event, cause simulator.Event, lock simulator.LockKind) string {
	all := notifies(events)
	s, wasted := whoNotified(all, cause.Client)
	if len(all) > 0 {
		s += " " + countPhrase(len(all))
	}
	s += lockedPhrase(events, cause.Client, lock)
	if wasted > 0 {
		s += fmt.Sprintf("; %d woke for nothing", wasted)
	}
	return s
}

// whoNotified says which clients the notifications all woke, the cause
// apart, and counts those woken for nothing, the cause's own leftover
// watch among them, as the wasted wake-ups meter does.
func whoNotified(all []simulator.Event, cause string) (s string, wasted int) {
	var others []string
	self, children := false, false
	for _, e := range all {
		if e.Wasted {
			wasted++ // the cause's own wake-up too: the meter counts it
		}
		if e.Client == cause {
			self = true
			continue
		}
		if e.Watch == "children" {
			children = true
		}
		if !slices.Contains(others, e.Client) {
			others = append(others, e.Client)
		}
	}
	switch {
	case len(others) == 0 && !self:
		s = "; nobody was notified"
	case len(others) == 0:
		s = "; no other client was notified"
	case children:
		s = fmt.Sprintf("; every client watching the children was notified (%s) and re-read them", simulator.ListAnd(others))
	default:
		verb := "were"
		if len(others) == 1 {
			verb = "was"
		}
		s = fmt.Sprintf("; only %s, which watched it, %s notified", simulator.ListAnd(others), verb)
	}
	if self {
		s += fmt.Sprintf(", and %s's own leftover children watch fired on its own delete, waking it for nothing", cause)
	}
	return s, wasted
}

// lockedPhrase names the clients other than cause that took the lock (or
// a lease) in events.
func lockedPhrase(events []simulator.Event, cause string, lock simulator.LockKind) string {
	var locked []string
	for _, e := range events {
		if e.Event == simulator.EvLock && e.Client != cause {
			locked = append(locked, e.Client)
		}
	}
	one, many := "locks", "lock"
	if lock == simulator.LeaseLock {
		one, many = "takes a lease", "take leases"
	}
	switch len(locked) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("; %s %s", locked[0], one)
	case 2:
		return fmt.Sprintf("; both %s %s", simulator.ListAnd(locked), many)
	default:
		return fmt.Sprintf("; %s %s", simulator.ListAnd(locked), many)
	}
}

package simulator

import (
	"fmt"
	"strings"
)

// narrate tells a step in one or two sentences, from its events.
func narrate(a Action, events []Event, lock LockKind) string {
	var parts []string
	for i, e := range events {
		switch e.Event {
		case EvLock, EvWait:
			if e.Client != a.Client || !isAdd(a.Action) || i != 0 {
				continue
			}
			what, locks := "a client", "locks at once"
			switch {
			case lock == LeaseLock:
				what, locks = "an instance", "takes a lease at once"
			case a.Action == ActAddReader:
				what = "a reader"
			case lock == RW:
				what = "a writer"
			}
			if e.Event == EvLock {
				parts = append(parts, fmt.Sprintf("%s joins as %s and %s", e.Client, what, locks))
			} else if e.On != "" {
				parts = append(parts, fmt.Sprintf("%s joins as %s and waits for %s, %s", e.Client, what, e.On, watchPhrase(e.Watch)))
			} else {
				parts = append(parts, fmt.Sprintf("%s joins as %s and stands by, %s", e.Client, what, watchPhrase(e.Watch)))
			}
			if len(e.Notified) > 0 {
				parts = append(parts, fmt.Sprintf("its create woke %s for nothing", listAnd(e.Notified)))
			}
		case EvUnlock:
			if len(e.Notified) == 0 && strings.Contains(e.Text, "already gone") {
				parts = append(parts, fmt.Sprintf("%s releases, but its node is long gone", e.Client))
				continue
			}
			parts = append(parts, fmt.Sprintf("%s released", e.Client)+notifiedPhrase(events, e, lock))
		case EvCrash:
			parts = append(parts, fmt.Sprintf("%s crashed; its node outlives it until the session expires", e.Client))
		case EvPause:
			parts = append(parts, fmt.Sprintf("%s stops in a long GC pause; its node stays until the session expires", e.Client))
		case EvExpire:
			parts = append(parts, fmt.Sprintf("%.1fs later its session expired and ZooKeeper deleted its node", float64(e.AfterMs)/1000)+notifiedPhrase(events, e, lock))
		case EvResume:
			parts = append(parts, e.Client+" "+e.Text)
		case EvWrite, EvFenced:
			parts = append(parts, e.Client+" "+e.Text)
		}
	}
	if len(parts) == 0 {
		return fmt.Sprintf("%s %s", a.Client, a.Action)
	}
	s := strings.Join(parts, "; ") + "."
	if a.Note != "" {
		s += " (" + a.Note + ")"
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func watchPhrase(w string) string {
	if w == "children" {
		return "watching the lock's whole children list"
	}
	return "watching only that node"
}

// notifiedPhrase says who a release or expiry woke and what came of it.
func notifiedPhrase(events []Event, cause Event, lock LockKind) string {
	var locked []string
	wasted := 0
	children := false
	for _, e := range events {
		switch {
		case e.Event == EvNotify && e.Client != cause.Client:
			if e.Watch == "children" {
				children = true
			}
			if e.Wasted {
				wasted++
			}
		case e.Event == EvLock && e.Client != cause.Client:
			locked = append(locked, e.Client)
		}
	}
	n := cause.Notified
	var s string
	switch {
	case len(n) == 0:
		s = "; nobody was notified"
	case children:
		s = fmt.Sprintf("; every client watching the children was notified (%s) and re-read them", listAnd(n))
	default:
		verb := "were"
		if len(n) == 1 {
			verb = "was"
		}
		s = fmt.Sprintf("; only %s, which watched it, %s notified", listAnd(n), verb)
	}
	one, many := "locks", "lock"
	if lock == LeaseLock {
		one, many = "takes a lease", "take leases"
	}
	switch len(locked) {
	case 0:
	case 1:
		s += fmt.Sprintf("; %s %s", locked[0], one)
	case 2:
		s += fmt.Sprintf("; both %s %s", listAnd(locked), many)
	default:
		s += fmt.Sprintf("; %s %s", listAnd(locked), many)
	}
	if wasted > 0 {
		s += fmt.Sprintf("; %d woke for nothing", wasted)
	}
	return s
}

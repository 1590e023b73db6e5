package views_test

import (
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/views"
)

func TestClockOf(t *testing.T) {
	made := time.Unix(1000, 0)
	held := made.Add(5 * time.Second)
	now := made.Add(time.Minute)
	holder := func(since time.Time, b lockqueue.Bound) lockqueue.Node {
		n := lockqueue.Node{Name: "a", Holding: true, Ctime: made}
		n.SetHeldSince(since)
		n.SetHeldBound(b)
		return n
	}
	waitedSince := func(n lockqueue.Node, t time.Time) lockqueue.Node {
		n.SetWaitSince(t)
		return n
	}
	for _, tc := range []struct {
		name  string
		n     lockqueue.Node
		since time.Time
		label string
	}{
		{"hand-off seen", holder(held, ""), held, "holds 55s"},
		{"held at the first read", holder(made, lockqueue.HeldAtMost), made, "holds ≤ 1m 00s"},
		{"first seen holding", holder(held, lockqueue.HeldAtLeast), held, "holds ≥ 55s"},
		{"unstamped, its creation known", lockqueue.Node{Holding: true, Ctime: made}, made, "holds ≤ 1m 00s"},
		{"unstamped, its creation unknown", lockqueue.Node{Holding: true, Ctime: made, CtimeAtMost: true}, time.Time{}, ""},
		{"waiter", lockqueue.Node{Ctime: held}, held, "waits 55s"},
		{"waiter there before the reader", lockqueue.Node{Ctime: held, CtimeAtMost: true}, held, "waits ≥ 55s"},
		{"waiter, no creation time", lockqueue.Node{}, time.Time{}, ""},
		{"foreign", lockqueue.Node{Ctime: made, Foreign: true}, made, "age 1m 00s"},
		{"waiter of a run, stamped on its clock", waitedSince(lockqueue.Node{Ctime: made, CtimeAtMost: true}, held), held, "waits 55s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := views.ClockOf(tc.n)
			if !c.Since.Equal(tc.since) || c.Label(now) != tc.label {
				t.Errorf("ClockOf: since %v, %q at now; want %v, %q", c.Since, c.Label(now), tc.since, tc.label)
			}
			if (c.Hint != "") != (c.Verb == "holds ≤" || c.Verb == "holds ≥") {
				t.Errorf("a %q clock with hint %q: only a bound says why", c.Verb, c.Hint)
			}
		})
	}
}

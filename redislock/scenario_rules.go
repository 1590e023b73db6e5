package redislock

import (
	"fmt"

	"github.com/zklockviz/zklockviz/fault"
	"github.com/zklockviz/zklockviz/simulator"
)

// recipeLines is a Redis recipe's pseudocode and the lines each client
// state points at (numbered from 1).
type recipeLines struct {
	lines                    []string
	acquire, retry, work     int
	release                  int
	acquireText, releaseText string
}

// Poll is the strategy of every Redis spin lock: retry on a timer.
const Poll simulator.Strategy = "poll"

func linesFor(p params) recipeLines {
	if p.Watchdog {
		return recipeLines{
			lines: []string{
				"ttl = EVAL lock.lua K me LEASE  (HINCRBY K me 1; PEXPIRE K LEASE, if K is free or mine)",
				"if ttl: SUBSCRIBE redisson_lock__channel:{K}; wait for a message or ttl; goto 1",
				"watchdog, every LEASE/3: EVAL \"if HEXISTS K me then PEXPIRE K LEASE\"",
				"work: write(resource)",
				"release: EVAL unlock.lua (HINCRBY K me -1; at 0 DEL K and PUBLISH the channel)",
			},
			acquire: 1, retry: 2, work: 4, release: 5,
			acquireText: "EVAL lock.lua (Redisson)", releaseText: "EVAL unlock.lua (Redisson)",
		}
	}
	set := "ok = SET K token NX"
	acq := "SET NX"
	if p.ExpiryMs > 0 {
		set = fmt.Sprintf("ok = SET K token NX PX %d", p.ExpiryMs)
		acq = fmt.Sprintf("SET NX PX %d", p.ExpiryMs)
	}
	l := recipeLines{lines: []string{set, fmt.Sprintf("if not ok: sleep %d ms; goto 1", p.retryMs())}, acquire: 1, retry: 2, acquireText: acq}
	if p.IncrFencing {
		l.lines = append(l.lines, "fence = INCR K:fence")
		l.lines = append(l.lines, "work: write(resource, token = fence)")
	} else {
		l.lines = append(l.lines, "work: write(resource)")
	}
	l.work = len(l.lines)
	if p.Release == releaseCAD {
		l.lines = append(l.lines, "release: EVAL \"if GET K == token then DEL K\"")
		l.releaseText = "compare-and-delete"
	} else {
		l.lines = append(l.lines, "release: DEL K")
		l.releaseText = "DEL"
	}
	l.release = len(l.lines)
	return l
}

// Recipe is the scenario's pseudocode.
func (*Backend) Recipe(sc *simulator.Scenario, _ simulator.Strategy) simulator.Recipe {
	p, _ := paramsOf(sc)
	return simulator.Recipe{Strategy: Poll, Lines: linesFor(p).lines}
}

// DryRun checks a plan against a model of the key: one owner or none,
// each client believing it holds or not. Where two waiters poll when the
// key frees, the model gives it to the first; the server may pick the
// other, and a later step the model allowed then fails on the server, as
// it would for the client.
func (b *Backend) DryRun(sc *simulator.Scenario, plan []simulator.Action) error {
	p, err := paramsOf(sc)
	if err != nil {
		return err
	}
	type cl struct {
		state    string // waiting, holding, stale (believes, lost it in a pause), gone
		believes bool
	}
	clients := map[string]*cl{}
	var order []string
	owner := ""
	handOff := func() {
		if owner != "" {
			return
		}
		for _, n := range order {
			if c := clients[n]; c.state == "waiting" {
				c.state, c.believes, owner = "holding", true, n
				return
			}
		}
	}
	for i, a := range plan {
		fail := func(format string, args ...any) error {
			return fault.Errorf(fault.Invalid, "step %d: %s %s: %s", i+1, a.Action, a.Client, fmt.Sprintf(format, args...))
		}
		if err := b.CheckAction(sc, a, false); err != nil {
			return fault.Errorf(fault.Invalid, "step %d: %v", i+1, err)
		}
		c := clients[a.Client]
		if a.Action == simulator.ActAdd {
			if c != nil {
				return fail("%s is already in this run", a.Client)
			}
			clients[a.Client] = &cl{state: "waiting"}
			order = append(order, a.Client)
			handOff()
			continue
		}
		if c == nil {
			return fail("unknown client %s: add it first", a.Client)
		}
		if c.state == "gone" && a.Action != ActWait {
			return fail("%s has released or crashed", a.Client)
		}
		switch a.Action {
		case simulator.ActWrite:
			if !c.believes {
				return fail("%s does not hold the lock", a.Client)
			}
		case simulator.ActRelease:
			if !c.believes {
				return fail("%s holds nothing", a.Client)
			}
			if owner == a.Client || p.Release != releaseCAD && !p.Watchdog {
				owner = "" // a plain DEL deletes whoever's key
			}
			c.state, c.believes = "gone", false
		case simulator.ActPause:
			if !c.believes || c.state != "holding" {
				return fail("only a holder's pause is staged here (a paused waiter just polls later)")
			}
			if p.ExpiryMs == 0 {
				return fail("the key has no expiry, so a pause past it would never end: crash the holder instead")
			}
			owner = "" // it expires during the pause; the client still believes
		case simulator.ActCrash:
			if owner == a.Client && p.ExpiryMs > 0 {
				owner = ""
			}
			c.state, c.believes = "gone", false
		}
		if a.Action == simulator.ActPause {
			c.state = "stale"
		}
		handOff()
	}
	return nil
}

package redislock

import (
	"fmt"

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
// Subscribe is Redisson's: wait for the unlock message or the key's ttl.
const (
	Poll      simulator.Strategy = "poll"
	Subscribe simulator.Strategy = "subscribe"
)

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
	if p.Masters > 1 {
		return recipeLines{
			lines: []string{
				fmt.Sprintf("ok = SET K token NX PX %d on each of the %d masters (redsync)", p.ExpiryMs, p.Masters),
				fmt.Sprintf("if fewer than %d said OK: release the ones that did; sleep; goto 1", p.Masters/2+1),
				"work: write(resource)",
				"release: EVAL \"if GET K == token then DEL K\" on every master",
			},
			acquire: 1, retry: 2, work: 3, release: 4,
			acquireText: "redsync (SET NX PX on every master)", releaseText: "redsync's compare-and-delete on every master",
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
	st := Poll
	if p.Watchdog {
		st = Subscribe
	}
	return simulator.Recipe{Strategy: st, Lines: linesFor(p).lines}
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
	if p.Masters > 1 {
		return b.dryRunRedlock(sc, p, plan)
	}
	return b.dryRunKey(sc, p, plan)
}

// dryRunKey models one master's key for DryRun.
func (b *Backend) dryRunKey(sc *simulator.Scenario, p params, plan []simulator.Action) error {
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
	return simulator.WalkPlan(b, sc, plan, nil, func(st simulator.PlanStep) error {
		defer handOff()
		c := clients[st.Client]
		if st.Action.Action == simulator.ActAdd {
			clients[st.Client] = &cl{state: "waiting"}
			order = append(order, st.Client)
			return nil
		}
		if c.state == "gone" && st.Action.Action != ActWait {
			return st.Fail("%s has released or crashed", st.Client)
		}
		switch st.Action.Action {
		case simulator.ActWrite:
			if !c.believes {
				return st.Fail("%s does not hold the lock", st.Client)
			}
		case simulator.ActRelease:
			if !c.believes {
				return st.Fail("%s holds nothing", st.Client)
			}
			if owner == st.Client || p.Release != releaseCAD && !p.Watchdog {
				owner = "" // a plain DEL deletes whoever's key
			}
			c.state, c.believes = "gone", false
		case simulator.ActPause:
			if !c.believes || c.state != "holding" {
				return st.Fail("only a holder's pause is staged here (a paused waiter just polls later)")
			}
			if p.ExpiryMs == 0 {
				return st.Fail("the key has no expiry, so a pause past it would never end: crash the holder instead")
			}
			owner = "" // it expires during the pause; the client still believes
			c.state = "stale"
		case simulator.ActCrash:
			if owner == st.Client && p.ExpiryMs > 0 {
				owner = ""
			}
			c.state, c.believes = "gone", false
		}
		return nil
	})
}

// dryRunRedlock models each master's copy of the key: a try takes every
// free copy on the masters that are up and holds with a majority (else it
// gives them back, as redsync does); a restart, a stop or a clock jump
// loses that master's copy.
func (b *Backend) dryRunRedlock(sc *simulator.Scenario, p params, plan []simulator.Action) error {
	owner := make([]string, p.Masters) // "" free
	down := make([]bool, p.Masters)
	believes := map[string]bool{}
	state := map[string]string{} // waiting, in, gone
	var order []string
	try := func(c string) {
		var free []int
		for i := range owner {
			if !down[i] && owner[i] == "" {
				free = append(free, i)
			}
		}
		if len(free) >= p.Masters/2+1 {
			for _, i := range free {
				owner[i] = c
			}
			believes[c], state[c] = true, "in"
		}
	}
	master := func(a simulator.Action) int {
		for k := range p.Masters {
			if a.Client == masterName(k) {
				return k
			}
		}
		return -1
	}
	isMaster := func(a simulator.Action) bool { return master(a) >= 0 }
	return simulator.WalkPlan(b, sc, plan, isMaster, func(st simulator.PlanStep) error {
		a, fail := st.Action, st.Fail
		defer func() {
			for _, c := range order {
				if state[c] == "waiting" {
					try(c)
				}
			}
		}()
		switch m := master(a); {
		case m >= 0:
			switch {
			case a.Action == ActStop && down[m], a.Action == ActExpire && down[m], a.Action == ActRestart && down[m]:
				return fail("%s is down", a.Client)
			case a.Action == ActStart && !down[m]:
				return fail("%s is running", a.Client)
			}
			down[m] = a.Action == ActStop
			owner[m] = ""
		case a.Action == simulator.ActAdd:
			state[a.Client] = "waiting"
			order = append(order, a.Client)
		case state[a.Client] == "gone" && a.Action != ActWait:
			return fail("%s has released or crashed", a.Client)
		case a.Action == simulator.ActPause || a.Action == simulator.ActCrash && believes[a.Client]:
			return fail("a Redlock holder's pause or crash is not staged here: stop, restart or clock-jump a master")
		case a.Action == simulator.ActWrite && !believes[a.Client]:
			return fail("%s does not hold the lock", a.Client)
		case a.Action == simulator.ActRelease:
			if !believes[a.Client] {
				return fail("%s holds nothing", a.Client)
			}
			for k := range owner {
				if owner[k] == a.Client {
					owner[k] = ""
				}
			}
			believes[a.Client], state[a.Client] = false, "gone"
		case a.Action == simulator.ActCrash:
			state[a.Client] = "gone"
		}
		return nil
	})
}

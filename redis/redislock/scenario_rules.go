package redislock

import (
	"fmt"
	"strings"

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
			// Redlock's validity check, as redsync makes it (its drift
			// factor is 1% of the expiry): a majority got too late is no
			// lock, since its keys may already be running out.
			lines: []string{
				fmt.Sprintf("start = now; ok = SET K token NX PX %d on each of the %d masters (redsync)", p.ExpiryMs, p.Masters),
				fmt.Sprintf("validity = %d ms − (now − start) − drift (1%% of the expiry, %d ms)", p.ExpiryMs, p.ExpiryMs/100),
				fmt.Sprintf("if fewer than %d said OK or validity ≤ 0: release the ones that did; sleep; goto 1", p.Masters/2+1),
				"work, only while validity lasts: write(resource)",
				"release: EVAL \"if GET K == token then DEL K\" on every master",
			},
			acquire: 1, retry: 3, work: 4, release: 5,
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
		// The key and its token in one script: an INCR sent after the SET
		// lets a pause between the two give the stale holder the higher
		// token.
		l.lines = []string{
			fmt.Sprintf("fence = EVAL \"if %s then return INCR K:fence else return 0\"  (one script: no pause between the key and its token)", strings.TrimPrefix(set, "ok = ")),
			fmt.Sprintf("if fence == 0: sleep %d ms; goto 1", p.retryMs()),
			"work: write(resource, token = fence)",
		}
		l.acquireText = "the " + acq + " + INCR K:fence script"
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
	m := &keyModel{p: p, clients: map[string]*keyClient{}, split: simulator.Split(plan)}
	return simulator.WalkPlan(b, sc, plan, nil, func(st simulator.PlanStep) error {
		if st.Action.Action != simulator.ActExpire {
			// An expire step ends as the key goes, before any waiter's
			// next try: the wake step's.
			defer m.handOff()
		}
		if done, err := m.splitStep(st); done || err != nil {
			return err
		}
		return m.step(st)
	})
}

// splitStep checks and applies a split plan's steps (done: nothing more
// to apply): a holder cut off does nothing until its expire step, a
// paused one nothing but resume after it.
func (m *keyModel) splitStep(st simulator.PlanStep) (done bool, err error) {
	c := m.clients[st.Client]
	a := st.Action.Action
	if c == nil {
		return false, nil // an add
	}
	if err := st.SplitRefused(m.split, c.state == "cut", c.state == "lapsed", "cut off", "its key's expiry"); err != nil || !m.split {
		return err != nil, err
	}
	switch a {
	case simulator.ActPause, simulator.ActCrash:
		if !c.believes || c.state != "holding" || m.p.ExpiryMs == 0 || m.p.Watchdog {
			return false, nil // the unsplit rules judge it
		}
		c.state, c.paused = "cut", a == simulator.ActPause
		c.believes = c.paused
		return true, nil
	case simulator.ActExpire:
		if c.state != "cut" {
			return true, st.Fail("%s has no key running out while it is cut off: pause or crash its holder first", st.Client)
		}
		m.owner = ""
		c.state = "gone"
		if c.paused {
			c.state = "lapsed"
		}
	case simulator.ActResume:
		if c.state != "lapsed" {
			return true, st.Fail("%s is not paused past its key's expiry", st.Client)
		}
		c.state = "stale"
	}
	return simulator.IsSplitAction(a), nil
}

// keyModel is dryRunKey's model: one key, its owner, and the clients in
// the order they arrived.
type keyModel struct {
	p       params
	clients map[string]*keyClient
	order   []string
	owner   string
	// split: the plan tells a holder's pause in steps (an expire step).
	split bool
}

type keyClient struct {
	// waiting, holding, stale (believes, lost it in a pause), gone; in a
	// split plan cut (its key not yet expired) and lapsed (expired, the
	// client still paused)
	state    string
	believes bool
	paused   bool
}

// handOff gives a free key to the first waiter to have arrived.
func (m *keyModel) handOff() {
	if m.owner != "" {
		return
	}
	for _, n := range m.order {
		if c := m.clients[n]; c.state == "waiting" {
			c.state, c.believes, m.owner = "holding", true, n
			return
		}
	}
}

// step applies one planned action, or says why the plan cannot take it.
func (m *keyModel) step(st simulator.PlanStep) error {
	if st.Action.Action == simulator.ActAdd {
		m.clients[st.Client] = &keyClient{state: "waiting"}
		m.order = append(m.order, st.Client)
		return nil
	}
	c := m.clients[st.Client]
	if c.state == "gone" && st.Action.Action != ActWait {
		return st.Fail("%s has released or crashed", st.Client)
	}
	switch st.Action.Action {
	case simulator.ActWrite:
		if !c.believes {
			return st.Fail("%s", simulator.NoLock(st.Client, "write under"))
		}
	case simulator.ActRelease:
		if !c.believes {
			return st.Fail("%s", simulator.NoLock(st.Client, "release"))
		}
		if m.owner == st.Client || m.p.Release != releaseCAD && !m.p.Watchdog {
			m.owner = "" // a plain DEL deletes whoever's key
		}
		c.state, c.believes = "gone", false
	case simulator.ActPause:
		if !c.believes || c.state != "holding" {
			return st.Fail("%s: only a holder's pause is staged here (a paused waiter just polls later)", simulator.NoLock(st.Client, "be paused with"))
		}
		if m.p.ExpiryMs == 0 {
			return st.Fail("the key has no expiry, so a pause past it would never end: crash the holder instead")
		}
		m.owner = "" // it expires during the pause; the client still believes
		c.state = "stale"
	case simulator.ActCrash:
		if m.owner == st.Client && m.p.ExpiryMs > 0 {
			m.owner = ""
		}
		c.state, c.believes = "gone", false
	}
	return nil
}

// dryRunRedlock models each master's copy of the key: a try takes every
// free copy on the masters that are up and holds with a majority (else it
// gives them back, as redsync does); a restart, a stop or a clock jump
// loses that master's copy (a delayed restart keeps the master down, its
// lost copy still its owner's, until its start).
func (b *Backend) dryRunRedlock(sc *simulator.Scenario, p params, plan []simulator.Action) error {
	m := &redlockModel{
		owner:    make([]string, p.Masters),
		down:     make([]bool, p.Masters),
		believes: map[string]bool{},
		state:    map[string]string{},
	}
	return simulator.WalkPlan(b, sc, plan, m.isMaster, func(st simulator.PlanStep) error {
		defer m.tryWaiting()
		if k := m.master(st.Action); k >= 0 {
			return m.masterStep(st, k)
		}
		return m.clientStep(st)
	})
}

// redlockModel is dryRunRedlock's model: each master's copy of the key,
// which masters are down, and the clients in the order they arrived.
type redlockModel struct {
	owner    []string // each master's copy's owner, "" free
	down     []bool
	believes map[string]bool
	state    map[string]string // waiting, in, gone
	order    []string
}

// tryWaiting lets every waiter try, in the order they arrived.
func (m *redlockModel) tryWaiting() {
	for _, c := range m.order {
		if m.state[c] == "waiting" {
			m.try(c)
		}
	}
}

// try takes every free copy for c if they are a majority.
func (m *redlockModel) try(c string) {
	var free []int
	for i := range m.owner {
		if !m.down[i] && m.owner[i] == "" {
			free = append(free, i)
		}
	}
	if len(free) >= len(m.owner)/2+1 {
		for _, i := range free {
			m.owner[i] = c
		}
		m.believes[c], m.state[c] = true, "in"
	}
}

// master is the index of the master a acts on, -1 for a client's action.
func (m *redlockModel) master(a simulator.Action) int {
	for k := range m.owner {
		if a.Client == masterName(k) {
			return k
		}
	}
	return -1
}

func (m *redlockModel) isMaster(a simulator.Action) bool { return m.master(a) >= 0 }

// masterStep applies a stop, start, restart or clock jump of master k: each
// loses its copy of the key.
func (m *redlockModel) masterStep(st simulator.PlanStep, k int) error {
	a := st.Action
	switch {
	case a.Action != ActStart && m.down[k]:
		return st.Fail("%s is down", a.Client)
	case a.Action == ActStart && !m.down[k]:
		return st.Fail("%s is running", a.Client)
	}
	m.down[k] = a.Action == ActStop || a.Action == ActDelayedRestart
	// A master kept out after a delayed restart is down, and its lost
	// copy still counts as its owner's until it rejoins, empty.
	if a.Action != ActDelayedRestart {
		m.owner[k] = ""
	}
	return nil
}

// clientStep applies a client's planned action, or says why the plan
// cannot take it.
func (m *redlockModel) clientStep(st simulator.PlanStep) error {
	a, fail := st.Action, st.Fail
	switch {
	case a.Action == simulator.ActAdd:
		m.state[a.Client] = "waiting"
		m.order = append(m.order, a.Client)
	case m.state[a.Client] == "gone" && a.Action != ActWait:
		return fail("%s has released or crashed", a.Client)
	case a.Action == simulator.ActPause || a.Action == simulator.ActCrash && m.believes[a.Client]:
		// Not "a holder's": whether a Redlock client holds is the run's to show.
		return fail("a Redlock client's pause, or its crash once the plan has given it the lock, is not staged here: stop, restart or clock-jump a master")
	case simulator.IsSplitAction(a.Action):
		return fail("a pause told in steps is not staged on Redlock: stop, restart or clock-jump a master")
	case a.Action == simulator.ActWrite && !m.believes[a.Client]:
		return fail("%s", simulator.NoLock(a.Client, "write under"))
	case a.Action == simulator.ActRelease:
		if !m.believes[a.Client] {
			return fail("%s", simulator.NoLock(a.Client, "release"))
		}
		for k := range m.owner {
			if m.owner[k] == a.Client {
				m.owner[k] = ""
			}
		}
		m.believes[a.Client], m.state[a.Client] = false, "gone"
	case a.Action == simulator.ActCrash:
		m.state[a.Client] = "gone"
	}
	return nil
}

package zksim

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/simulator"
)

// A scene of two locks: the run's lock parent and a second one beside it
// (the run's path with "-2"), each a lock of its own that the clients take
// by the same recipe. A client joins one of them (add: the first, or the
// second for a client params.reversed names) and, holding it, queues on
// the other with the same session (lock-second). Two clients doing so in
// opposite order deadlock: each holds one lock and waits, by an exists
// watch, for the other's node. ZooKeeper has no deadlock detector and both
// sessions heartbeat, so nothing wakes them until a session ends.

// ActLockSecond queues the client on the scene's other lock, with the
// session that holds its first one.
const ActLockSecond = "lock-second"

// sceneSuffix names the second lock parent after the run's.
const sceneSuffix = "-2"

// sceneParams are a ZooKeeper scenario's own settings (Scenario.Params):
// only a scene of two locks has any.
type sceneParams struct {
	// Reversed are the clients whose first lock is the second one.
	Reversed []string `json:"reversed,omitempty"`
}

// sceneOf reads a scenario's params and says whether it is a scene of two
// locks: it has reversed clients or a lock-second step. Its locks are
// exclusive; the checker counts each one's holders apart (ClientInfo.Lock).
func sceneOf(sc *simulator.Scenario, plan []simulator.Action) (sceneParams, bool, error) {
	var p sceneParams
	if err := sc.DecodeParams(&p); err != nil {
		return p, false, err
	}
	scene := len(p.Reversed) > 0 || slices.ContainsFunc(plan, func(a simulator.Action) bool { return a.Action == ActLockSecond })
	if scene && sc.Lock != simulator.ExclusiveLock {
		return p, true, invalidf("scenario %s: a scene of two locks (lock-second, reversed) is of %s locks, not %s", sc.Name, simulator.ExclusiveLock, sc.Lock)
	}
	return p, scene, nil
}

// dryRunScene is dryRun on a scene's two locks, a ledger each: a client's
// actions go to the lock it joined; its second lock's queue is the
// server's to order.
func dryRunScene(lock simulator.LockKind, reversed []string, plan []simulator.Action) error {
	first, second := newLedger(lock, 0), newLedger(lock, 0)
	home := map[string]*ledger{}
	for i, a := range plan {
		l := home[a.Client]
		if simulator.IsAdd(a.Action) && l == nil {
			l = first
			if slices.Contains(reversed, a.Client) {
				l = second
			}
			home[a.Client] = l
		}
		if l == nil {
			l = first // unknown: the ledger says so
		}
		if err := l.apply(i+1, a); err != nil {
			return err
		}
	}
	return nil
}

// checkSteps checks a plan's actions one by one: the engine's, and
// lock-second in a scene of two locks.
func checkSteps(sc *simulator.Scenario, plan []simulator.Action, wildcard bool) error {
	if _, _, err := sceneOf(sc, plan); err != nil {
		return err
	}
	for i, a := range plan {
		if err := checkAction(sc, a, wildcard); err != nil {
			return invalidf("scenario: step %d: %v", i+1, err)
		}
	}
	return nil
}

func checkAction(sc *simulator.Scenario, a simulator.Action, wildcard bool) error {
	if a.Action != ActLockSecond {
		return simulator.CheckAction(sc.Lock, a, wildcard)
	}
	if _, scene, err := sceneOf(sc, []simulator.Action{a}); err != nil || !scene {
		return fmt.Errorf("%s: the scenario has one lock", a.Action)
	}
	return simulator.CheckClientAction([]string{ActLockSecond}, "a ZooKeeper client", a, wildcard)
}

// other is the scene's lock that is not w's.
func (w *world) other() *world {
	if w.host != nil {
		return w.host
	}
	return w.second
}

// home is the world a client added by a joins: the second lock for a
// reversed client of a scene.
func (w *world) home(a simulator.Action) *world {
	if w.second != nil && slices.Contains(w.reversed, a.Client) {
		return w.second
	}
	return w
}

// find is the client named name, wherever it joined.
func (w *world) find(name string) *client {
	if c := w.byName[name]; c != nil && c.owner == nil {
		return c
	}
	if w.second != nil {
		if c := w.second.byName[name]; c != nil && c.owner == nil {
			return c
		}
	}
	return nil
}

// lockSecond queues c on the scene's other lock with the same session: a
// second node, created, placed and watched by the same recipe.
func (w *world) lockSecond(ctx context.Context, c *client) error {
	o := c.w.other()
	switch {
	case o == nil:
		return conflictf("%s: this run has one lock", c.name)
	case c.member != nil:
		return conflictf("%s has queued on %s already", c.name, o.path)
	case c.state != simulator.StateHolding:
		return conflictf("%s holds nothing (%s): it takes its second lock while it holds its first", c.name, c.state)
	}
	m := &client{name: c.name, mode: c.mode, index: len(o.clients), w: o, joined: w.Step, since: w.Step,
		proxy: c.proxy, conn: c.conn, sess: c.sess, session: c.session, owner: c}
	c.member = m
	o.clients = append(o.clients, m)
	o.byName[m.name] = m
	acquired, err := m.join()
	if err != nil {
		return err
	}
	e := o.joinEvent(m, acquired)
	e.Text = "on " + o.path + " with the same session: " + strings.TrimPrefix(e.Text, "a client: ")
	i := o.emit(e)
	return o.settle(ctx, i, []string{m.nodePath()})
}

// memberGone settles the other lock after c's session ended (a crash's
// expiry): its node there went with the session.
func (w *world) memberGone(ctx context.Context, c *client, cause int, state string) error {
	m := c.member
	if m == nil || m.node == "" {
		return nil
	}
	gone := m.nodePath()
	if r := w.rec(); cause >= 0 && cause < len(r.Events) {
		e := &r.Events[cause]
		e.Text = strings.Replace(e.Text, "deleted "+e.Node, fmt.Sprintf("deleted %s and, on %s, %s", e.Node, m.w.path, m.node), 1)
	}
	m.node, m.waitsFor, m.state, m.since = "", "", state, w.Step
	m.watches = nil
	return m.w.settle(ctx, cause, []string{gone})
}

// releaseMember deletes c's node on the other lock before c's session ends,
// as a client lets go of everything it took.
func (w *world) releaseMember(ctx context.Context, c *client) error {
	m := c.member
	if m == nil || m.node == "" {
		return nil
	}
	o := m.w
	node := m.node
	held := m.state == simulator.StateHolding
	_, self, err := m.release()
	if err != nil {
		return err
	}
	m.state, m.since = simulator.StateReleased, w.Step
	text := "deleted " + node + " on " + o.path
	if !held {
		text = "gave up its wait on " + o.path + ": deleted " + node
	}
	if len(self) > 0 {
		text += "; its own children watch fired (left from its last getChildren)"
	}
	i := o.emit(simulator.Event{Client: m.name, Event: simulator.EvUnlock, Node: node, Text: text})
	o.emitSelf(m, self)
	return o.settle(ctx, i, []string{o.zpath + "/" + node})
}

// Locks reads both locks of a scene, the run's first (nil for a run of one
// lock): the views draw them side by side, with the wait cycle across them.
func (w *world) Locks() ([]lockqueue.Snapshot, error) {
	if w.second == nil {
		return nil, nil
	}
	a, err := w.snapshot()
	if err != nil {
		return nil, err
	}
	b, err := w.second.snapshot()
	if err != nil {
		return nil, err
	}
	return []lockqueue.Snapshot{a, b}, nil
}

// narrateScene tells a scene's step: its second lock taken, and what a
// cycle through the two locks means on ZooKeeper.
func (w *world) narrateScene(a simulator.Action, events []simulator.Event) string {
	c := w.find(a.Client)
	if c == nil || c.member == nil {
		return narrate(a, events, w.lock, w.sessionTimeout)
	}
	m := c.member
	if a.Action != ActLockSecond {
		// A release lets go of both nodes: the second unlock is told as
		// a word on the first, whose phrase tells every wake-up.
		var unlocks []int
		for i, e := range events {
			if e.Event == simulator.EvUnlock && e.Client == a.Client {
				unlocks = append(unlocks, i)
			}
		}
		if len(unlocks) == 2 {
			events = slices.Delete(slices.Clone(events), unlocks[1], unlocks[1]+1)
		}
		told := narrate(a, events, w.lock, w.sessionTimeout)
		switch {
		case len(unlocks) == 2:
			told += fmt.Sprintf(" It deleted its node on %s too.", m.w.path)
		case slices.ContainsFunc(events, func(e simulator.Event) bool { return e.Event == simulator.EvExpire }):
			told += fmt.Sprintf(" The session held a node on each lock: both went with it, %s's on %s too.", a.Client, m.w.path)
		}
		return told
	}
	var parts []string
	for _, e := range events {
		if e.Client != a.Client || e.Event != simulator.EvLock && e.Event != simulator.EvWait {
			continue
		}
		if e.Event == simulator.EvLock {
			parts = append(parts, fmt.Sprintf("%s, holding %s, takes %s too with the same session", a.Client, c.w.path, m.w.path))
		} else {
			parts = append(parts, fmt.Sprintf("%s, holding %s, queues on %s with the same session and waits for %s, %s",
				a.Client, c.w.path, m.w.path, e.On, watchPhrase(e.Watch)))
		}
		break
	}
	if ns := notifies(events); len(ns) > 0 {
		parts = append(parts, fmt.Sprintf("its create woke %s for nothing %s", simulator.ListAnd(clientsOf(ns)), countPhrase(len(ns))))
	}
	if cyc := w.cycle(); len(cyc) > 0 {
		parts = append(parts, fmt.Sprintf("the waits close a cycle, %s: each holds the lock the other waits for. ZooKeeper has no deadlock detector, and both sessions heartbeat, so no watch will ever fire and no session will time out: they wait until one of them gives up or dies",
			strings.Join(append(cyc, cyc[0]), " → ")))
	}
	return simulator.Sentence(a, parts)
}

// cycle is the clients of a wait cycle through the scene's two locks, in
// wait order, as the clients themselves know it (whom each waits for);
// nil when there is none.
func (w *world) cycle() []string {
	next := map[string][]string{}
	for _, o := range []*world{w, w.second} {
		for _, c := range o.clients {
			if c.state == simulator.StateWaiting && c.waitsFor != "" {
				next[c.name] = []string{o.ownerOf(c.waitsFor)}
			}
		}
	}
	for _, start := range slices.Sorted(maps.Keys(next)) {
		if cyc := lockqueue.WaitCycleThrough(next, start); cyc != nil {
			return cyc
		}
	}
	return nil
}

// joined are the clients in the order they joined, wherever: a scene's
// clients of both locks, without the members of the other lock.
func (w *world) joined() []*client {
	if w.second == nil {
		return w.clients
	}
	var out []*client
	for _, o := range []*world{w, w.second} {
		for _, c := range o.clients {
			if c.owner == nil {
				out = append(out, c)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b *client) int { return a.joined - b.joined })
	return out
}

package etcdlock

import (
	"context"
	"fmt"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/simulator"
)

// A split scenario tells a holder's pause as ZooKeeper's and Redis's
// classrooms do: the pause (the client goes silent, its key stays), the
// lease's expiry (etcd deletes the key; the next waiter's watch fires),
// the hand-over (that waiter handles the event and holds) and the resume
// (the paused client runs again, still believing it holds).
//
// Two things hold the story still between those steps, as the Redis
// classroom holds its key's expiry. A lease runs on etcd in real time: a
// lecturer who looks at the pause for longer than the lease would see the
// key go before the expire step. So from the cut to the expire step the
// classroom keeps the silent client's lease alive for it, and the expire
// step lets it run out, a whole lease long. And concurrency.Mutex hands the
// lock over the moment the key goes: the waiter's watch fires and its next
// request (a read of the keys before its own, then of its own key) ends its
// Lock within milliseconds. So the expire step holds the waiters' next
// requests at their gRPC layer (meter.hold), and the wake step lets them
// go: the waiter's own Mutex code then takes the lock. The narration says
// both.

// cutHeld is a split scenario's pause or crash: c goes silent and its key
// stays, its lease kept alive by the classroom until the expire step.
func (w *world) cutHeld(ctx context.Context, c *client, pause bool) error {
	kctx, cancel := context.WithCancel(context.Background())
	ch, err := w.obs.KeepAlive(kctx, c.sess.Lease())
	if err != nil {
		cancel()
		return fmt.Errorf("hold %s's lease between steps: %w", c.name, err)
	}
	go func() {
		for range ch { // drained until cancel
		}
	}()
	c.keepLease, c.cutHeld, c.paused = cancel, true, pause
	w.announceCut(c, pause, fmt.Sprintf("; its key %s stays until its %d s lease runs out (the next step: until then the classroom keeps the lease's clock still)", w.nodeName(c), w.ttl))
	return w.settle(ctx)
}

// stopKeepingLease ends the classroom's keep-alive of c's lease.
func (c *client) stopKeepingLease() {
	if c.keepLease != nil {
		c.keepLease()
		c.keepLease = nil
	}
}

// expireCut is a split scenario's expire step: c's lease, unrenewed, runs
// out and etcd deletes its key. The waiter that watched the key is woken;
// the classroom holds what it does next until the wake step.
func (w *world) expireCut(ctx context.Context, c *client) error {
	if !c.cutHeld || c.lapsed {
		return fmt.Errorf("%s has no lease running out while it is cut off (%s)", c.name, c.state)
	}
	for _, o := range w.clients {
		if o.locking {
			o.meter.hold()
		}
	}
	c.stopKeepingLease()
	stopped := time.Now()
	if err := w.awaitKeyGone(ctx, c, stopped, "its lease's last keep-alive"); err != nil {
		return err
	}
	if err := w.settle(ctx); err != nil {
		return err
	}
	// The run's clock, not this machine's: between the cut and this step
	// the lecturer may have waited any time.
	w.Clock += time.Duration(w.ttl) * time.Second
	w.expired = &lockqueue.ExpiredHolder{Name: w.nodeName(c), LeaseID: lockqueue.LeaseHex(int64(c.sess.Lease()))}
	c.lapsed, c.since, w.toWake = true, w.Step, true
	var woken []string
	for _, o := range w.clients {
		if o.locking && o.meter.held.Load() {
			woken = append(woken, o.name)
		}
	}
	text := fmt.Sprintf("its %d s lease ran out with no keep-alive from it: etcd revoked the lease and deleted its key %s", w.ttl, w.nodeName(c))
	if len(woken) > 0 {
		text += fmt.Sprintf(", and the watch of %s, the waiter just behind it, fired: its key is now the first by create revision, but it has not read that yet. "+
			"A real Mutex takes the lock within milliseconds of that event; the classroom holds %s's next request so that the hand-over is the next step",
			simulator.ListAnd(woken), simulator.ListAnd(woken))
	} else {
		text += "; nobody waited"
	}
	if c.paused {
		text += fmt.Sprintf(". %s, still stopped, believes it holds the lock", c.name)
	} else {
		c.close()
	}
	w.Emit(simulator.Event{Client: c.name, Event: simulator.EvExpire, Node: w.nodeName(c), Notified: woken,
		AfterMs: time.Since(stopped).Milliseconds(), Text: text})
	return nil
}

// wake is a split scenario's hand-over step: the waiters the expiry woke
// send their held requests, and the one whose key is now first holds
// (c is the one the scenario expects to).
func (w *world) wake(ctx context.Context, c *client) error {
	if !w.toWake {
		return fmt.Errorf("no expiry has woken anyone for %s to handle", c.name)
	}
	w.toWake = false
	var woken []string
	for _, o := range w.clients {
		if o.meter.held.Load() {
			woken = append(woken, o.name)
		}
		o.meter.release()
	}
	text := "no waiter had a watch event to handle"
	if len(woken) > 0 {
		text = ("handles the watch event: its Mutex reads the keys before its own (none is left) and its own key (still there), so Lock returns. " +
			"Told in a step of its own here; in real time it follows the delete within milliseconds: the waiter watches, it does not poll")
	}
	w.Emit(simulator.Event{Client: c.name, Event: simulator.EvWake, Notified: woken, Text: text})
	return w.settle(ctx)
}

// resumeCut is a split scenario's resume step: the paused client, whose
// lease ran out in an earlier step, runs again, still believing it holds.
// It is stale since the expiry's step, when it lost the lock.
func (w *world) resumeCut(c *client) error {
	if c.state != simulator.StatePaused || !c.lapsed {
		return fmt.Errorf("%s is not paused past its lease's expiry (%s)", c.name, c.state)
	}
	done := c.restore()
	w.Emit(simulator.Event{Client: c.name, Event: simulator.EvResume, Node: w.nodeName(c),
		Text: fmt.Sprintf("resumes: its lease ran out and etcd deleted its key while it was stopped, but nothing interrupts it: it still believes it holds the lock unless it checks (session.Done() is %s)", done)})
	return nil
}

// markCut draws a cut-off holder whose key etcd still has as a zombie: its
// client is silent, and the key lasts only as long as its lease.
func (w *world) markCut(s *lockqueue.Snapshot) {
	for _, c := range w.clients {
		if !c.cutHeld || c.lapsed {
			continue
		}
		name := w.nodeName(c)
		for i := range s.Nodes {
			if s.Nodes[i].Name == name {
				s.Nodes[i].Zombie = true
			}
		}
		how := "crashed"
		if c.paused {
			how = "paused, still believing it holds"
		}
		s.Alerts = append(s.Alerts, lockqueue.Alert{Kind: lockqueue.AlertZombie, Nodes: []string{name}, Message: fmt.Sprintf(
			"%s is silent (%s): no keep-alive of its lease reaches etcd, so its key %s stays only until the %d s lease runs out (the next step: the classroom keeps the lease's clock still between steps)",
			c.name, how, name, w.ttl)})
	}
}

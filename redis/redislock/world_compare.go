package redislock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zklockviz/zklockviz/fault"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/simulator"
)

// ActCompare runs the scenario's waiters, as many as poll now, queued on
// each service of params.CompareQueues instead, on a server started for
// it; EvQueueCost tells what that server counted.
const (
	ActCompare  = "compare-queues"
	EvQueueCost = "queue-cost"
)

// queueWindow is how long a queue is counted: longer than go-zookeeper's
// ping interval (a third of its 10 s session), so the heartbeats a queued
// waiter does send are in it.
const queueWindow = 4 * time.Second

var queueTitles = map[string]string{
	lockqueue.ZooKeeper: "ZooKeeper (go-zookeeper's Lock: each waiter watches its predecessor)",
	lockqueue.Etcd:      "etcd (concurrency.Mutex: each waiter watches the key before its own)",
}

// queueSends is what a queued waiter of each service still sends while it
// waits: no lock command, but its session is kept alive. The window's
// count is that traffic.
var queueSends = map[string]string{
	lockqueue.ZooKeeper: "the waiters' session heartbeats, a ping every third of the session timeout: a queued waiter sends no lock command, but it is not silent",
	lockqueue.Etcd:      "the waiters' lease keep-alives, one every third of the lease's 60 s TTL (so few or none in 4 s): a queued waiter sends no lock command, but it is not silent",
}

// QueueCost measures n waiters queued on service (zookeeper or etcd) for
// window, on a server of that service started for it, and answers what
// that server itself counted. cmd wires package queuecost in, so this
// package starts no ZooKeeper or etcd of its own. An error wrapping
// fault.Unavailable (the server is not installed) is told, not failed.
type QueueCost func(ctx context.Context, service string, n int, window time.Duration) (QueueResult, error)

// QueueResult is what a QueueCost server counted: Requests received in
// Window, read from Counter.
type QueueResult struct {
	Waiters  int
	Requests int64
	Window   time.Duration
	Counter  string
}

// PerSecond is the server's request rate over the window.
func (r QueueResult) PerSecond() float64 { return float64(r.Requests) / r.Window.Seconds() }

// compareQueues measures the same waiters queued on each service, while
// the Redis waiters poll on here.
func (w *world) compareQueues(ctx context.Context, who string) error {
	n := 0
	for _, c := range w.clients {
		if c.state == simulator.StateWaiting && c.loop == nil {
			n++
		}
	}
	for _, svc := range w.p.CompareQueues {
		done := make(chan struct{})
		var (
			r   QueueResult
			err error
		)
		go func() {
			defer close(done)
			if w.queueCost == nil {
				err = fault.Errorf(fault.Unavailable, "this classroom has no way to start %s wired in", svc)
				return
			}
			r, err = w.queueCost(ctx, svc, n, queueWindow)
		}()
		for polling := true; polling; {
			select {
			case <-done:
				polling = false
			default:
				if perr := w.pollFor(ctx, 1); perr != nil {
					<-done
					return perr
				}
			}
		}
		switch {
		case errors.Is(err, fault.Unavailable):
			w.Emit(simulator.Event{Client: who, Event: EvQueueCost, Text: fmt.Sprintf("the same %d waiters on %s: not measured, %v", n, svc, err)})
			continue
		case err != nil:
			return fmt.Errorf("the same %d waiters queued on %s: %w", n, svc, err)
		}
		text := fmt.Sprintf("the same %d waiters queued on %s, a server of its own: it counted %d requests in %.1fs (%s): %.1f requests/s while nobody could acquire",
			r.Waiters, queueTitles[svc], r.Requests, r.Window.Seconds(), r.Counter, r.PerSecond())
		if w.spinRate > 0 {
			text += fmt.Sprintf(", against %.0f commands/s the polling waiters cost Redis", w.spinRate)
		}
		text += "; what it counted is " + queueSends[svc]
		w.Emit(simulator.Event{Client: who, Event: EvQueueCost, Text: text})
	}
	return nil
}

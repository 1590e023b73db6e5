package pglock

import (
	"context"
	"fmt"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/simulator"
)

// A split scenario tells a holder's pause as the other services'
// classrooms do, a step for each thing that changes: the pause (the client
// goes silent inside its transaction; the server shows it idle in
// transaction, blocking everyone), the expiry (the server ends its session
// after idle_in_transaction_session_timeout) and the resume (the client
// runs again, still believing it holds).
//
// What holds the story still between the pause and the expiry is the
// timeout itself: the classroom sets it on the silent session only in the
// expire step, so a lecturer who looks at the pause for longer than the
// timeout sees the same story, as etcd's classroom keeps a silent client's
// lease alive until its expire step. The narration says so.
//
// The hand-over is not a step of its own, unlike ZooKeeper's, Redis's and
// etcd's: there a woken client must act (handle a notification, retry)
// before it holds, and the classroom can hold that act for a step. Here the
// ending backend's rollback releases the row lock and PostgreSQL's lock
// manager grants it to the first sleeping waiter in the same instant, in
// the server; no client does anything in between, so nothing could be held
// without staging a delay the server does not have. The expire step shows
// the next holder, and its narration says why.

// pauseSplit is a split scenario's pause: c goes silent inside its
// transaction, holding the lock, with no timeout yet to end its session.
// The step lasts until the server's session has been idle longer than
// classIdleGrace, so its idle-in-transaction alert is drawn however fast
// the step was taken.
func (w *classWorld) pauseSplit(ctx context.Context, c *pgClient) error {
	if c.state != simulator.StateHolding {
		return fmt.Errorf("only a holder's pause is staged here (%s is %s)", c.name, c.state)
	}
	c.cutHeld = true
	if err := w.stop(ctx, c); err != nil {
		return err
	}
	var idle float64
	err := w.obs.QueryRow(ctx, "SELECT coalesce(extract(epoch FROM clock_timestamp() - state_change), 0)::float8 FROM pg_stat_activity WHERE pid = $1",
		int32(c.pid)).Scan(&idle)
	if err != nil {
		return fmt.Errorf("%s: read how long its session has been idle: %w", c.name, err)
	}
	if left := classIdleGrace - time.Duration(idle*float64(time.Second)); left > 0 {
		return simulator.Sleep(ctx, left+settlePoll)
	}
	return nil
}

// expire is a split scenario's expire step: the classroom sets c's
// idle_in_transaction_session_timeout only now, and the server ends its
// session a timeout later; its rollback frees the lock, which the server
// grants to the first waiter at once (the step's settle tells it).
func (w *classWorld) expire(ctx context.Context, c *pgClient) error {
	if !c.cutHeld || c.lapsed || c.state != simulator.StatePaused {
		return fmt.Errorf("%s has no session idle in its transaction to end (%s)", c.name, c.state)
	}
	took, err := w.endSession(ctx, c)
	if err != nil {
		return err
	}
	// The run's clock, not this machine's: between the pause and this
	// step the lecturer may have waited any time.
	w.Clock += time.Duration(w.p.IdleInTxTimeoutMs) * time.Millisecond
	c.lapsed, c.since = true, w.Step
	var waiting []string
	for _, o := range w.clients {
		if o.pending != nil && !o.second {
			waiting = append(waiting, o.name)
		}
	}
	text := fmt.Sprintf("its session was ended by the server after %d ms idle in transaction (idle_in_transaction_session_timeout, FATAL 25P03): "+
		"its transaction rolled back and its lock went with it. The classroom set that timeout on %s's silent session only in this step "+
		"(a SET on its connection; in production it is set beforehand and counts from the last statement): that is how the classroom holds time still "+
		"between the pause and this step, however long the lecturer looks at it", w.p.IdleInTxTimeoutMs, c.name)
	if len(waiting) > 0 {
		text += fmt.Sprintf(". PostgreSQL's lock manager grants the freed lock to the first sleeping waiter in the same instant, in the server: "+
			"no client acts between the release and the grant (%s slept in the lock manager, watching nothing), so the hand-over is this step, not one of its own",
			simulator.ListAnd(waiting))
	}
	text += fmt.Sprintf(". %s, still paused, knows nothing: it believes it holds the lock", c.name)
	w.Emit(simulator.Event{Client: c.name, Event: simulator.EvExpire, Node: nodeName(int(c.pid)), AfterMs: took.Milliseconds(), Text: text})
	return nil
}

// resume is a split scenario's resume step: the paused client, whose
// session the server ended in an earlier step, runs again, still
// believing it holds. It is stale since the expiry's step.
func (w *classWorld) resume(c *pgClient) error {
	if c.state != simulator.StatePaused || !c.lapsed {
		return fmt.Errorf("%s is not paused past the end of its session (%s)", c.name, c.state)
	}
	c.state, c.line = simulator.StateStale, w.lines.work
	w.Emit(simulator.Event{Client: c.name, Event: simulator.EvResume, Node: nodeName(int(c.pid)),
		Text: "resumes, still believing it holds the lock: nothing has told it that the server ended its session and closed its connection while it was stopped; its next statement will find out"})
	return nil
}

// zombieHolders are the clients that believe they hold a lock the server
// took back: their backend is gone, so pg_locks cannot show them, and the
// snapshot says so in an alert naming the pid they had.
func (w *classWorld) zombieHolders(snap lockqueue.Snapshot) []lockqueue.Alert {
	holder := ""
	if h := snap.Holders(); len(h) > 0 {
		holder = w.clientOfNode(h[0])
	}
	var out []lockqueue.Alert
	for _, c := range w.clients {
		z := simulator.Zombie{Name: c.name, State: c.state, Node: nodeName(int(c.pid)), Lapsed: c.lapsed, CutHeld: c.cutHeld}
		if a, ok := simulator.ZombieHolder(z, holder, simulator.ZombieWords{
			Lost: "when the server ended its session (idle_in_transaction_session_timeout), not by committing: its transaction rolled back",
			Back: "running again", Gone: "whose backend is gone"}); ok {
			out = append(out, a)
		}
	}
	return out
}

// clientOfNode is the client whose backend a node is, "" if none.
func (w *classWorld) clientOfNode(node string) string {
	for _, c := range w.clients {
		if nodeName(int(c.pid)) == node {
			return c.name
		}
	}
	return ""
}

// storyIdle keeps the server's idle-in-transaction mark only on sessions
// the story has stopped: between steps every client sits idle while the
// lecturer talks, which is the classroom's pause, not the story's, and
// would draw the alert or not by the pace of the clicks.
func (w *classWorld) storyIdle(ss []lockqueue.ServerSession) []lockqueue.ServerSession {
	for i := range ss {
		if c := w.clientOfNode(ss[i].Name); c == "" || w.byName[c].state != simulator.StatePaused {
			ss[i].IdleInTxSince = time.Time{}
		}
	}
	return ss
}

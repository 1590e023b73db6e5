package redislock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync/atomic"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
	"github.com/zklockviz/zklockviz/simulator"
)

// EvGiveUp is a waiter's Lock returning without the lock: redsync's
// error after its last try. StateGaveUp is the waiter after it.
const (
	EvGiveUp    = "give-up"
	StateGaveUp = "gave-up"
)

// redsyncTries is redsync v4's default number of tries (NewMutex), which
// the give-up text quotes; the tries themselves are counted on the wire.
const redsyncTries = 32

// lockLoop is a waiter that locks with redsync's defaults (32 tries,
// 50–250 ms apart): its own retry loop, not paced by the classroom's
// steps, the way an application calls mutex.Lock().
type lockLoop struct {
	began time.Time
	done  chan struct{}
	// err and took are set before done closes.
	err  error
	took time.Duration
	// wire counts what its connection sent; cancel ends the loop early
	// (the world closes).
	wire   *wireCount
	cancel context.CancelFunc
	told   bool
}

// wireCount counts a connection's commands as go-redis sends them: every
// command, and the SET NX tries the server refused.
type wireCount struct {
	commands atomic.Int64
	tries    atomic.Int64
	refused  atomic.Int64
}

func (h *wireCount) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (h *wireCount) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.commands.Add(1)
		err := next(ctx, cmd)
		if cmd.Name() == "set" {
			h.tries.Add(1)
			if b, ok := cmd.(*redis.BoolCmd); ok && err == nil && !b.Val() {
				h.refused.Add(1)
			}
		}
		return err
	}
}

func (h *wireCount) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.commands.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// defaultLocker says whether the scenario has name lock with redsync's
// defaults.
func (w *world) defaultLocker(name string) bool { return slices.Contains(w.p.RedsyncDefault, name) }

// startLockLoop starts c's mutex.LockContext with redsync's defaults on
// its own connection; the step it ends in tells how (reapLoops).
func (w *world) startLockLoop(c *contender) {
	wire := &wireCount{}
	c.rdb().AddHook(wire)
	mutex := redsync.New(goredis.NewPool(c.rdb())).NewMutex(w.key,
		// The token is the client's own, so the views can name it; every
		// other option is redsync's default.
		redsync.WithGenValueFunc(func() (string, error) { return c.token, nil }))
	ctx, cancel := context.WithCancel(context.Background())
	l := &lockLoop{began: time.Now(), done: make(chan struct{}), wire: wire, cancel: cancel}
	c.loop, c.mutex = l, mutex
	go func() {
		defer close(l.done)
		l.err = mutex.LockContext(ctx)
		l.took = time.Since(l.began)
	}()
}

func (l *lockLoop) over() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

func (l *lockLoop) stop() {
	l.cancel()
	<-l.done
}

// reapLoops tells of every default locker whose Lock returned since the
// last look: it got the lock, or gave up.
func (w *world) reapLoops(ctx context.Context) {
	for _, c := range w.clients {
		l := c.loop
		if l == nil || l.told || !l.over() {
			continue
		}
		l.told = true
		tries := l.wire.tries.Load()
		if l.err == nil {
			c.state, c.since, c.line = simulator.StateHolding, w.Step, w.lines.work
			c.stats.Create++
			w.Emit(simulator.Event{Client: c.name, Event: simulator.EvLock, Node: c.token,
				Text: fmt.Sprintf("redsync's Lock returned after %d tries in %.1fs: it holds the lock", tries, l.took.Seconds())})
			continue
		}
		// redsync v4.18 answers its last refused try with *ErrTaken, an
		// earlier give-up (a try that never came back) with ErrFailed.
		why := l.err.Error()
		var taken *redsync.ErrTaken
		switch {
		case errors.Is(l.err, redsync.ErrFailed):
			why = "ErrFailed"
		case errors.As(l.err, &taken):
			why = fmt.Sprintf("ErrTaken (%v)", l.err)
		}
		holder := w.ownerOfKey(ctx)
		works := "the key is free now"
		if holder != "" {
			works = holder + " still holds the lock and works on"
		}
		c.state, c.since, c.line = StateGaveUp, w.Step, w.lines.retry
		w.Emit(simulator.Event{Client: c.name, Event: EvGiveUp, On: holder, Node: c.token, AfterMs: l.took.Milliseconds(),
			Text: fmt.Sprintf("gave up after %d tries in %.1fs: redsync's Lock returned %s (its defaults: %d tries, 50–250 ms apart), while %s",
				tries, l.took.Seconds(), why, redsyncTries, works)})
	}
}

// loopsRunning is how many default lockers are still in their Lock.
func (w *world) loopsRunning() int {
	n := 0
	for _, c := range w.clients {
		if c.loop != nil && !c.loop.over() {
			n++
		}
	}
	return n
}

// waitLoops lets time pass until every default locker's Lock has returned:
// the other waiters poll on meanwhile, the holder works on.
func (w *world) waitLoops(ctx context.Context) error {
	for w.loopsRunning() > 0 {
		if err := w.pollRound(ctx); err != nil {
			return err
		}
		if err := simulator.Sleep(ctx, w.p.retry()); err != nil {
			return fmt.Errorf("redsync's waiters still trying: %w", err)
		}
	}
	w.reapLoops(ctx)
	return nil
}

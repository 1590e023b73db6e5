package redislock

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/zklockviz/zklockviz/simulator"
)

// A scenario tells its story in steps, and a key's PX runs out in the step
// the scenario says (a holder's pause past the expiry, a crash), however
// long the viewer looks at a step before the next and however long a busy
// machine takes over one. Redis would count that time too: stepped every
// 30 s, or played slowly, the key would run out between two steps, before
// the pause that should cause it, and the server would have done one story
// while the narration told another. So the classroom holds the key's clock
// except in the steps that let time pass (pause, crash, wait): when a step
// ends, or a client acquires in a step that lets no time pass, it takes the
// expiry off (PERSIST) and keeps the time left, and the next step that lets
// time pass puts that time back (PEXPIREAT … NX) before it acts. The expiry
// itself is still Redis's, in its step.
//
// A watchdog's lease is not held: its holder renews it in real time, between
// steps too, and it lapses only in the step that stops the holder.

// holdsKeys says whether the run holds its key's clock between steps: a key
// with an expiry that nobody renews.
func (w *world) holdsKeys() bool { return w.p.ExpiryMs > 0 && !w.p.Watchdog }

// letsTimePass says whether action a is one in which the key's time to
// live runs: a holder's pause or crash waits for its key to expire, and a
// wait is time passing. Every other step is an instant of the story.
func letsTimePass(a simulator.Action) bool {
	return a.Action == simulator.ActPause || a.Action == simulator.ActCrash || a.Action == ActWait
}

// letsTimePass is letsTimePass in w's scenario: where the key moment is
// told step by step (split), a pause or crash only cuts its client, an
// instant, and the expire step is the one in which the key runs out.
func (w *world) letsTimePass(a simulator.Action) bool {
	if w.Split {
		return a.Action == simulator.ActExpire || a.Action == ActWait
	}
	return letsTimePass(a)
}

// holdAcquired holds a key just taken, when acquired, in a step that lets
// no time pass: its expiry would otherwise run for the rest of the step,
// which on a busy machine can be long enough to change the story.
func (w *world) holdAcquired(ctx context.Context, acquired bool) error {
	if !acquired || !w.instant {
		return nil
	}
	return w.holdKeys(ctx)
}

// up says whether master i answers (a stopped Redlock master does not).
func (w *world) up(i int) bool {
	m := w.masters[i]
	return m.srv == nil || m.srv.Running()
}

// holdKeys stops the key's clock on every master that is up and keeps the
// time left of each, for resumeKeys. PTTL and PERSIST go in one MULTI, so
// the key cannot expire between the read and the hold. Neither is one of
// the lock's commands INFO commandstats is read for.
func (w *world) holdKeys(ctx context.Context) error {
	if !w.holdsKeys() {
		return nil
	}
	if w.held == nil {
		w.held = make([]int64, len(w.masters))
	}
	for i, m := range w.masters {
		if !w.up(i) {
			w.held[i] = 0 // a stopped master comes back empty
			continue
		}
		var pttl *redis.DurationCmd
		_, err := m.obs.TxPipelined(ctx, func(p redis.Pipeliner) error {
			pttl = p.PTTL(ctx, w.key)
			p.Persist(ctx, w.key)
			return nil
		})
		if err != nil {
			return fmt.Errorf("hold %s's time to live between steps: %w", w.key, err)
		}
		// -1 (no expiry) and -2 (no key) come back as negative durations.
		// With an expiry on every SET, a key without one is the one held
		// since an earlier step: it keeps the time it had.
		switch left := pttl.Val(); {
		case left > 0:
			w.held[i] = max(1, left.Milliseconds())
		case left != -1:
			w.held[i] = 0
		}
	}
	return nil
}

// resumeKeys gives every held key its time left back, as a step that lets
// time pass begins.
// PEXPIREAT with NX sets it only on a key that still has no expiry (it is
// absent from the lock's commands that INFO commandstats counts, PEXPIRE
// is not: a Redisson renewal is one).
func (w *world) resumeKeys(ctx context.Context) error {
	for i, left := range w.held {
		w.held[i] = 0
		if left <= 0 || !w.up(i) {
			continue
		}
		at := time.Now().Add(time.Duration(left) * time.Millisecond).UnixMilli()
		if err := w.masters[i].obs.Do(ctx, "PEXPIREAT", w.key, at, "NX").Err(); err != nil {
			return fmt.Errorf("give %s its time to live back: %w", w.key, err)
		}
	}
	return nil
}

// leftMs is the key's time left on master i as the run sees it: PTTL, or
// between steps the time the classroom holds for it (0: no key, or none
// known).
func (w *world) leftMs(ctx context.Context, i int) (pttl int64, err error) {
	pttl, err = w.masters[i].obs.Do(ctx, "PTTL", w.key).Int64()
	if err != nil {
		return 0, err
	}
	if pttl == -1 && i < len(w.held) && w.held[i] > 0 {
		return w.held[i], nil
	}
	return pttl, nil
}

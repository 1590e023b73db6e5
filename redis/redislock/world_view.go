package redislock

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/zklockviz/zklockviz/simulator"
)

// ttlEvery is how often a step reads the key's PTTL: a watchdog lease of
// 1.5 s renewed every 0.5 s needs a few reads per renewal to draw its
// saw-tooth.
const ttlEvery = 50 * time.Millisecond

// ttlRead is one PTTL read during a step, at a real time since the step
// began; the token is the key's value (the Redisson hash's field), mapped
// to its client once the step is over (the clients are the step's to
// change meanwhile).
type ttlRead struct {
	after time.Duration
	left  int64
	token string
}

// samplesTTL: a key with an expiry on one server; Redlock's copies are
// drawn per master instead.
func (w *world) samplesTTL() bool { return !w.redlock() && w.p.ExpiryMs > 0 }

// sampleTTL reads the key's PTTL every ttlEvery, on the classroom's own
// connection (the lock's commands INFO commandstats counts leave PTTL, GET
// and HKEYS out), until the returned stop, which answers the reads.
func (w *world) sampleTTL(ctx context.Context) (stop func() []ttlRead) {
	if !w.samplesTTL() {
		return func() []ttlRead { return nil }
	}
	ctx, cancel := context.WithCancel(ctx)
	began := time.Now()
	var (
		mu    sync.Mutex
		reads []ttlRead
		wg    sync.WaitGroup
	)
	read := func(ctx context.Context) {
		if r, ok := w.readTTL(ctx, began); ok {
			mu.Lock()
			reads = append(reads, r)
			mu.Unlock()
		}
	}
	wg.Go(func() {
		t := time.NewTicker(ttlEvery)
		defer t.Stop()
		for {
			read(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	})
	return func() []ttlRead {
		cancel()
		wg.Wait()
		// The step's last word: what the key is as the step ends.
		rctx, rcancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer rcancel()
		read(rctx)
		return reads
	}
}

func (w *world) readTTL(ctx context.Context, began time.Time) (ttlRead, bool) {
	left, err := w.leftMs(ctx, 0)
	if err != nil {
		return ttlRead{}, false
	}
	r := ttlRead{after: time.Since(began), left: max(0, left)}
	if left < 0 {
		// -2: no key; -1 (no expiry, none held) does not happen with
		// samplesTTL.
		r.left = 0
		return r, true
	}
	tok, err := w.keyToken(ctx)
	if err != nil && !errors.Is(err, redis.Nil) {
		return ttlRead{}, false
	}
	r.token = tok
	return r, true
}

// placeTTL puts a step's reads on the run's clock, from the clock before
// the step to the one after it: an expiry step moves the clock by the
// lease, whatever this machine took.
func (w *world) placeTTL(reads []ttlRead, from, to time.Duration) []simulator.TTLSample {
	out := make([]simulator.TTLSample, 0, len(reads))
	for _, r := range reads {
		at := min(from+r.after, to)
		out = append(out, simulator.TTLSample{AtMs: at.Milliseconds(), LeftMs: r.left, Holder: w.clientOf(r.token)})
	}
	return out
}

// clientOf names the client whose token tok is ("" for no token; the
// token itself if it is nobody's in this run).
func (w *world) clientOf(tok string) string {
	if tok == "" {
		return ""
	}
	for _, c := range w.clients {
		if c.token == tok {
			return c.name
		}
	}
	return tok
}

// Servers is what the servers hold beyond the snapshot: each Redlock
// master's copy of the key, or the key's time to live during the step.
func (w *world) Servers() *simulator.Servers {
	if !w.redlock() && !w.samplesTTL() {
		return nil
	}
	sv := &simulator.Servers{TTL: w.stepTTL, TTLMs: w.p.ExpiryMs}
	if w.redlock() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		sv.Masters = w.masterStates(ctx)
	}
	return sv
}

// Package heaptune sets the Go collector's target from the live heap, for
// a long-running server: a small heap gets a fixed headroom, a big one a
// proportional one.
//
// GOGC gives every heap a headroom proportional to what is live. serve ran
// at GOGC=50 to bound the peak of a big fleet (100 locks of 1,000 nodes),
// but a server of one busy lock, whose live heap is a few MB, then collected
// every few hundred kB of garbage: a collection every few changes, whose
// mark phase took one of the two cores and made the change it met wait.
// Here the headroom is at least Floor bytes (so a small heap is collected
// rarely) and at least MinPercent of the live heap (so a big one is
// bounded as at GOGC=MinPercent): the heap peaks near
// max(live+Floor, live×(1+MinPercent/100)).
package heaptune

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// Config is the tuner's bounds.
type Config struct {
	// Floor is the least headroom, in bytes.
	Floor uint64
	// MinPercent and MaxPercent bound the GOGC set.
	MinPercent, MaxPercent int
}

// Default is serve's: at least 48 MiB of headroom, GOGC between 50 and 400.
var Default = Config{Floor: 48 << 20, MinPercent: 50, MaxPercent: 400}

// Percent is the GOGC that gives a heap of live bytes its headroom.
func (c Config) Percent(live uint64) int {
	if live == 0 {
		return c.MaxPercent
	}
	p := c.Floor * 100 / live
	return int(min(max(p, uint64(c.MinPercent)), uint64(c.MaxPercent)))
}

// Start sets GOGC from the live heap now and after every collection, until
// ctx ends.
func Start(ctx context.Context, c Config) {
	t := &tuner{cfg: c, done: ctx.Done(), sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	t.tune()
	t.arm()
}

type tuner struct {
	cfg    Config
	done   <-chan struct{}
	sample []metrics.Sample
	last   atomic.Int64
}

// arm runs tune after the next collection: the finalizer of an object
// nothing refers to runs once a collection has found it unreachable, and
// re-arms itself.
func (t *tuner) arm() {
	s := new([16]byte)
	runtime.SetFinalizer(s, func(*[16]byte) {
		select {
		case <-t.done:
			return
		default:
		}
		t.tune()
		t.arm()
	})
}

func (t *tuner) tune() {
	metrics.Read(t.sample)
	if t.sample[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	p := t.cfg.Percent(t.sample[0].Value.Uint64())
	if int64(p) != t.last.Swap(int64(p)) {
		debug.SetGCPercent(p)
	}
}

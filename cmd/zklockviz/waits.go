package main

import (
	"context"
	"sync"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/waitgraph"
)

// crossWaits joins the live readers' locks by their clients (waitgraph)
// and raises deadlock on every lock of a cycle of waits through several
// locks. The graph is brought up to date by its own goroutine, off the
// path from a change to its frame, at most every crossWaitsEvery: a
// snapshot on its way to the hub only takes the lock's current alert.
type crossWaits struct {
	publish func(lockqueue.Snapshot) // the recorder and the hub
	has     func(key string) bool    // whether the hub still follows a lock
	kick    chan struct{}

	mu    sync.Mutex
	graph *waitgraph.Graph
	raw   map[string]lockqueue.Snapshot // each lock's last, as its reader sent it
	dirty map[string]bool
}

func newCrossWaits(publish func(lockqueue.Snapshot), has func(string) bool) *crossWaits {
	return &crossWaits{publish: publish, has: has, graph: waitgraph.New(), kick: make(chan struct{}, 1),
		raw: map[string]lockqueue.Snapshot{}, dirty: map[string]bool{}}
}

// offer publishes s with its lock's cross-lock alert, if any.
func (w *crossWaits) offer(s lockqueue.Snapshot) {
	key := s.Key()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.raw[key], w.dirty[key] = s, true
	a, ok := w.graph.Alert(key)
	w.publish(waitgraph.With(s, a, ok))
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// crossWaitsEvery is the least time between two updates of the graph: a
// busy fleet's changes are taken together. A PostgreSQL deadlock lasts
// deadlock_timeout (1 s by default) before the server breaks it.
const crossWaitsEvery = 100 * time.Millisecond

// run updates the graph after changes until ctx ends. It rests ten times
// as long as an update took, at least crossWaitsEvery, so a fleet of big
// queues that change all the time gives the graph a tenth of a core at
// most, whatever its size.
func (w *crossWaits) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.kick:
		}
		start := time.Now()
		w.update()
		select {
		case <-ctx.Done():
			return
		case <-time.After(max(crossWaitsEvery, 10*time.Since(start))):
		}
	}
}

// update reads the waits of the locks changed since the last update, and
// publishes again each lock whose cross-lock alert was raised, changed or
// cleared.
func (w *crossWaits) update() {
	w.mu.Lock()
	todo := make([]lockqueue.Snapshot, 0, len(w.dirty))
	for key := range w.dirty {
		todo = append(todo, w.raw[key])
	}
	clear(w.dirty)
	w.mu.Unlock()
	// A big queue's waits take a pass over its nodes: not under mu, which
	// every reader's publish takes.
	edges := make([][]waitgraph.Edge, len(todo))
	for i, s := range todo {
		edges[i] = waitgraph.Edges(s)
	}

	w.mu.Lock()
	defer w.mu.Unlock()
	changed := false
	for i, s := range todo {
		changed = w.graph.Set(s, edges[i]) || changed
	}
	for key := range w.raw {
		if !w.has(key) {
			delete(w.raw, key)
			delete(w.dirty, key)
			changed = w.graph.Forget(key) || changed
		}
	}
	if !changed {
		return
	}
	for _, key := range w.graph.Cycles() {
		if s, ok := w.raw[key]; ok {
			a, ok := w.graph.Alert(key)
			w.publish(waitgraph.With(s, a, ok))
		}
	}
}

package simulator

import "time"

// Subscription follows one run's State for a viewer (the classroom's
// socket). A viewer slower than the changes is not queued for: C holds at
// most one signal, and State always answers the newest state. A run with
// subscribers is in use; once the last one closes, the manager closes the
// run ViewerGrace later unless someone comes back or commands it.
type Subscription struct {
	run    *Run
	c      chan struct{}
	closed bool
}

// Subscribe starts following the run. C is signalled at once, so the first
// State is the current one.
func (r *Run) Subscribe() (*Subscription, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, notFoundf("run %s is closed", r.id)
	}
	s := &Subscription{run: r, c: make(chan struct{}, 1)}
	s.c <- struct{}{}
	r.subs[s] = struct{}{}
	r.viewed = true
	return s, nil
}

// C is signalled after each change of the run's State.
func (s *Subscription) C() <-chan struct{} { return s.c }

// Done is closed when the run ends (deleted, reaped or its manager closed).
func (s *Subscription) Done() <-chan struct{} { return s.run.ctx.Done() }

// State is the run's state now.
func (s *Subscription) State() State { return s.run.State() }

// Close stops following. It is safe to call more than once.
func (s *Subscription) Close() {
	r := s.run
	r.mu.Lock()
	defer r.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	delete(r.subs, s)
	r.lastUsed = time.Now()
}

// Viewers is how many subscriptions follow the run.
func (r *Run) Viewers() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.subs)
}

// signal tells every subscriber that State changed. r.mu must be held.
func (r *Run) signal() {
	for s := range r.subs {
		select {
		case s.c <- struct{}{}:
		default: // a signal is pending already: the viewer reads the newest state
		}
	}
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zklockviz/zklockviz/etcd/etcdlock"
	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/lab"
	"github.com/zklockviz/zklockviz/lab/word"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/postgres/pglock"
	"github.com/zklockviz/zklockviz/redis/redislock"
	"github.com/zklockviz/zklockviz/web"
)

// zklockviz's word on a lab run: serve itself, as a user runs it with its
// default flags (its reader of the run's server and lock, its history
// on), in this process for the run; afterwards its history of the lock is
// checked against the clients' log (package word).

// labWord is serve's reader and history of a lab run's lock.
type labWord struct {
	m      *Main
	dir    string
	temp   bool // dir is the lab's own, removed at the end
	lock   lockqueue.LockID
	bounds word.Bounds
	start  time.Time
}

// labWordReady bounds the wait for the reader's first live sight of the
// lock, before any client starts.
const labWordReady = 15 * time.Second

// wordBounds are the tolerances of each service's reader with serve's
// default flags (see package word): ZooKeeper and etcd watch, Redis (no
// keyspace events on a throwaway server) and PostgreSQL poll. A killed
// client's hold lasts its session: ZooKeeper's, up to a tick more, as the
// server expires sessions by ticks (a throwaway server's tick is 200ms;
// a second covers a server of the usual 2s tick's minimum timeout of 4s
// less poorly, so it is counted twice over); etcd's lease, checked by the
// leader every 500ms; a Redis key's TTL; PostgreSQL's ends with the
// process.
func wordBounds(service string, session time.Duration) word.Bounds {
	switch service {
	case lockqueue.ZooKeeper:
		return word.Watching(2*session + time.Second)
	case etcdlock.Name:
		b := word.Watching(session + time.Second)
		b.LostLag, b.Reused = session/3+500*time.Millisecond, true
		return b
	case redislock.Name:
		// A key gone within a read's round trip of its TTL's end is told
		// expired (history's pttlSlack). The lab's Redis runs without
		// persistence: an outage (server, restart: a throwaway server's
		// faults only) empties it.
		b := word.Polling(redislock.DefaultPoll, session)
		b.LeaseSlack, b.Empty = 100*time.Millisecond, true
		return b
	}
	b := word.Polling(pglock.DefaultPoll, 0)
	b.Reused = true
	return b
}

// startLabWord starts serve on the run's server, watching its lock, with
// its history in dir (a temporary directory when empty), and waits until
// it has seen the lock live. Nil when the check is off.
func startLabWord(ctx context.Context, f labFlags, srv labServer, stderr io.Writer) (*labWord, error) {
	if f.word == "off" {
		return nil, nil
	}
	w := &labWord{dir: f.wordDir, lock: lockqueue.LockID{Service: f.service, Name: f.path}, bounds: wordBounds(f.service, f.session)}
	if w.dir == "" {
		dir, err := os.MkdirTemp("", "zklockviz-lab-word-")
		if err != nil {
			return nil, fmt.Errorf("zklockviz's word: %w", err)
		}
		w.dir, w.temp = dir, true
	}
	watch := f.path
	if f.service != lockqueue.ZooKeeper {
		watch = f.service + ":" + f.path
	}
	w.m = NewMain(io.Discard, stderr)
	// serve's defaults, not the environment's: ZKLOCKVIZ_* point at the
	// servers the user's own serve reads.
	w.m.Getenv = func(string) string { return "" }
	args := []string{"--" + labServices[f.service].flag, srv.addr, "--watch", watch, "--data-dir", w.dir,
		"--addr", "127.0.0.1:0", "--log-level", "warn"}
	if err := w.m.ParseFlags(args); err != nil {
		w.remove()
		return nil, fmt.Errorf("zklockviz's word: serve %v", err)
	}
	if err := w.m.Run(ctx); err != nil {
		w.remove()
		return nil, errors.Join(fmt.Errorf("zklockviz's word: serve: %w", err), w.m.Close())
	}
	if err := w.ready(ctx); err != nil {
		w.stop()
		return nil, err
	}
	w.start = time.Now()
	fmt.Fprintf(stderr, "lab: zklockviz's word: serve's reader records %s (history in %s); watch it live at %s\n", watch, w.dir, w.m.URL())
	return w, nil
}

// ready waits until serve has read the lock live, so that its history
// begins before any client asks.
func (w *labWord) ready(ctx context.Context) error {
	deadline := time.Now().Add(labWordReady)
	for time.Now().Before(deadline) {
		if s, ok := w.m.hub.Latest(w.lock.Key()); ok && s.Live() {
			// The recorder takes what the hub has; give it its linger.
			time.Sleep(50 * time.Millisecond)
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return fmt.Errorf("zklockviz's word: serve's reader did not see %s live within %v", w.lock.Key(), labWordReady)
}

// stop closes serve and removes a temporary history.
func (w *labWord) stop() {
	w.m.Close()
	w.remove()
}

func (w *labWord) remove() {
	if w.temp {
		os.RemoveAll(w.dir)
	}
}

// check lets the reader see the run's last changes, stops serve, reads
// its history of the lock and checks it against the clients' events. A
// nil w (the check off) checks nothing.
func (w *labWord) check(events []lab.Event) (*word.Result, error) {
	if w == nil {
		return nil, nil
	}
	defer w.remove()
	time.Sleep(w.bounds.Delay)
	end := time.Now()
	if err := w.m.Close(); err != nil {
		return nil, fmt.Errorf("zklockviz's word: serve: %w", err)
	}
	store, err := history.Open(history.Options{Dir: w.dir})
	if err != nil {
		return nil, fmt.Errorf("zklockviz's word: open its history: %w", err)
	}
	defer store.Close()
	hist, err := w.history(store, end)
	if err != nil {
		return nil, err
	}
	r := word.Check(events, hist, w.bounds, end)
	return &r, nil
}

// history is what serve recorded of the lock from the start to end,
// restatements included. The run has one server, so the lock has one
// cluster: recorded under two, its history is in two parts, and either
// alone would be checked as if the other had not happened.
func (w *labWord) history(store history.Source, end time.Time) ([]history.Event, error) {
	locks, err := store.Locks()
	if err != nil {
		return nil, fmt.Errorf("zklockviz's word: its history: %w", err)
	}
	var keys []string
	for _, l := range locks {
		if l.LockID == w.lock {
			keys = append(keys, l.Key())
		}
	}
	switch {
	case len(keys) == 0:
		return nil, fmt.Errorf("zklockviz's word: its history has nothing of %s", w.lock.Key())
	case len(keys) > 1:
		return nil, fmt.Errorf("zklockviz's word: its history of %s is split across %d clusters (%s): a defect of zklockviz", w.lock.Key(), len(keys), strings.Join(keys, ", "))
	}
	var out []history.Event
	if err := store.Walk(keys[0], w.start.Add(-time.Minute), end, func(e history.Event) error {
		out = append(out, e)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("zklockviz's word: read its history of %s: %w", w.lock.Key(), err)
	}
	return out, nil
}

// wordFailed is the run's error when zklockviz's word and the clients'
// differ: a defect of zklockviz, so the run fails (exit status 1).
func wordFailed(r *word.Result) error {
	if r == nil || len(r.Mismatches) == 0 {
		return nil
	}
	// The first of them in the error too: with --json the report is
	// data a reader may not open, and the error is what a log keeps.
	first := r.Mismatches[0].String()
	if len(r.Mismatches) > 1 {
		first += "; …"
	}
	return fmt.Errorf("zklockviz's word differs from the clients' in %d places (see the report): a defect of zklockviz: %s", len(r.Mismatches), first)
}

// labWordTick is how often zklockviz's word is checked while the run
// goes: the Lab page's pace.
const labWordTick = 500 * time.Millisecond

// wordLive is the check of zklockviz's word as the run goes: the
// clients' events so far, each tick checked with the history so far
// (word.Live), each settled mismatch told once on stderr, and the result
// handed to the Lab page.
type wordLive struct {
	service string
	bounds  word.Bounds
	stderr  io.Writer
	hook    func(service string, r word.LiveResult)

	mu      sync.Mutex
	events  []lab.Event
	tracker word.Tracker
}

// live checks the word as the run cfg starts goes: it sees cfg's events
// (wrapping its Observe) and checks every labWordTick until the returned
// stop is called. A nil w (the check off) does nothing.
func (w *labWord) live(ctx context.Context, cfg *lab.Config, service string, stderr io.Writer, hooks web.LabHooks) (stop func()) {
	src := w.historySource()
	if src == nil {
		return func() {}
	}
	l := &wordLive{service: service, bounds: w.bounds, stderr: stderr, hook: hooks.Word}
	observe := cfg.Observe
	cfg.Observe = func(e lab.Event) {
		l.mu.Lock()
		l.events = append(l.events, e)
		l.mu.Unlock()
		if observe != nil {
			observe(e)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		wait := labWordTick
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			now := time.Now()
			hist, err := w.history(src, now)
			if err == nil {
				l.mu.Lock()
				events := slices.Clone(l.events)
				l.mu.Unlock()
				l.tick(events, hist, now)
			}
			// Else nothing is recorded of the lock yet: the next tick
			// may have it; the final check says so if it never does.
			// A long run's check grows with it: it takes at most a fifth
			// of the time, so as not to slow the run it checks.
			wait = max(labWordTick, 4*time.Since(now))
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// historySource is serve's history while it runs; nil when w is (the
// check off) or serve keeps none.
func (w *labWord) historySource() history.Source {
	if w == nil {
		return nil
	}
	return w.m.historySource()
}

// tick checks what is settled of the run at now, tells each mismatch not
// told before on stderr, and hands the result, with every mismatch told
// so far, to the hook.
func (l *wordLive) tick(events []lab.Event, hist []history.Event, now time.Time) word.LiveResult {
	r := word.Live(events, hist, l.bounds, now)
	l.mu.Lock()
	fresh := l.tracker.Add(r.Mismatches)
	r.Mismatches = l.tracker.Told()
	l.mu.Unlock()
	for _, m := range fresh {
		fmt.Fprintf(l.stderr, "lab: zklockviz's word: %s (a defect of zklockviz; the check after the run is the verdict)\n", m)
	}
	if l.hook != nil {
		l.hook(l.service, r)
	}
	return r
}

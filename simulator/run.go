package simulator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/waitgraph"
)

// record is one recorded step: what was done, what it caused and the
// whole state after it. records[0] is the empty lock before step 1.
type record struct {
	Step       int
	Action     *Action
	Events     []Event
	Snapshot   lockqueue.Snapshot
	Stats      Stats // cumulative
	Clients    []ClientInfo
	Narration  string
	Line       int
	LineClient string
	Path       string
	// Clock is the run's clock at the end of the step (world.clock).
	Clock time.Duration
	// Servers is what the world's servers held (nil: nothing beyond the
	// snapshot).
	Servers *Servers
	// Locks are the scene's locks when it has several (LockReader).
	Locks []lockqueue.Snapshot
}

func (r record) client(name string) (ClientInfo, bool) {
	for _, c := range r.Clients {
		if c.Name == name {
			return c, true
		}
	}
	return ClientInfo{}, false
}

// ClientInfo is one client as State shows it.
type ClientInfo struct {
	Name string         `json:"name"`
	Node string         `json:"node"` // its lock node, or the last one it had
	Path string         `json:"path,omitempty"`
	Mode lockqueue.Mode `json:"mode"`
	// State: waiting, holding, released, crashed, paused, stale (back from
	// a pause that outlasted its session, still believing it holds) or
	// expired (lost its session while waiting).
	State    string `json:"state"`
	Session  string `json:"session"`
	Token    int64  `json:"token,omitempty"`
	WaitsFor string `json:"waitsFor,omitempty"` // the client it waits for
	Line     int    `json:"line"`
	Joined   int    `json:"joined"`
	Since    int    `json:"since"`
	// JoinedMs and SinceMs are the run's clock (State.ClockMs) at those
	// steps: a waiter has waited ClockMs−JoinedMs, a holder held
	// ClockMs−SinceMs.
	JoinedMs int64 `json:"joinedMs"`
	SinceMs  int64 `json:"sinceMs"`
	// Polling marks a waiter that retries on a timer (a Redis spin lock)
	// rather than waiting on a watch; Retries counts its failed tries so
	// far, one pulse each. ZooKeeper's clients leave both out.
	Polling bool `json:"polling,omitempty"`
	Retries int  `json:"retries,omitempty"`
	// Lock is the lock of a scene of several that the client joined
	// (ZooKeeper's two lock parents); empty in a run of one lock. The
	// checker counts each lock's holders apart.
	Lock string `json:"lock,omitempty"`
}

// Pseudocode is the recipe the run's clients follow and the line the
// current step is at (numbered from 1; 0 before the first step).
type Pseudocode struct {
	Strategy Strategy `json:"strategy"`
	Lines    []string `json:"lines"`
	Line     int      `json:"line"`
	Client   string   `json:"client,omitempty"`
}

// State is a run as the HTTP API and the websocket show it.
type State struct {
	ID string `json:"id"`
	// Service is the lock service the run's clients use; empty for
	// ZooKeeper, whose runs read as they always did.
	Service          string   `json:"service,omitempty"`
	Scenario         string   `json:"scenario"`
	Title            string   `json:"title"`
	Lock             LockKind `json:"lock"`
	Leases           int      `json:"leases,omitempty"`
	Strategy         Strategy `json:"strategy"`
	Fencing          bool     `json:"fencing"`
	Path             string   `json:"path"`
	SessionTimeoutMs int64    `json:"sessionTimeoutMs"`
	// Step is the step shown (0: before the first); Steps how many are
	// recorded; Planned how many the plan has.
	Step int `json:"step"`
	// ClockMs is the run's clock at the shown step: a step moves it 1.2 s
	// (a step at 1× speed), a session expiry by the session timeout. It is
	// the same on every replay of the same steps.
	ClockMs int64   `json:"clockMs"`
	Steps   int     `json:"steps"`
	Planned int     `json:"planned"`
	Playing bool    `json:"playing"`
	Speed   float64 `json:"speed"`
	// StepMs is how long the server plays a step at 1× (StepTick): a
	// page that steps runs together waits it over the speed.
	StepMs int64 `json:"stepMs"`
	Done   bool  `json:"done"`
	// Busy is set while a step runs on ZooKeeper (a crash step waits for
	// the session to expire).
	Busy  bool   `json:"busy"`
	Error string `json:"error,omitempty"`
	// Action is the shown step's action; Next the one a step forward does.
	Action *Action `json:"action,omitempty"`
	Next   *Action `json:"next,omitempty"`
	// Events are those of steps 1..Step (the latest maxStateEvents).
	Events          []Event     `json:"events"`
	EventsTruncated int         `json:"eventsTruncated,omitempty"`
	Stats           Stats       `json:"stats"`
	LastRelease     *Stats      `json:"lastRelease,omitempty"`
	Violations      []Violation `json:"violations"`
	// Verdict judges steps 1..Step (VerdictOf).
	Verdict    Verdict            `json:"verdict"`
	Meters     Meters             `json:"meters"`
	Clients    []ClientInfo       `json:"clients"`
	Narration  string             `json:"narration"`
	Pseudocode Pseudocode         `json:"pseudocode"`
	Line       int                `json:"line"`
	Snapshot   lockqueue.Snapshot `json:"snapshot"`
	// Locks are the scene's locks, one queue each, when it has several
	// (PostgreSQL's two rows); Cycle is the wait cycle across them, by
	// lockqueue's rule (the live lock page's wait-cycle alert).
	Locks []lockqueue.Snapshot `json:"locks,omitempty"`
	Cycle *lockqueue.Alert     `json:"cycle,omitempty"`
	// CycleSteps are the cycle's waits in order, each in its lock
	// (waitgraph.Scene): what the views draw across the lanes.
	CycleSteps []waitgraph.Step `json:"cycleSteps,omitempty"`
	// Servers is what the run's servers hold beyond the snapshot
	// (Redlock's masters, the key's time to live over the run's time).
	Servers *Servers `json:"servers,omitempty"`
	// Branch is set while the run is off its scenario's script: a client
	// was acted on (a what-if), and ToScript returns to the script.
	Branch *Branch `json:"branch,omitempty"`
}

// StepTick is what one step moves a run's clock by: the pace of playback at
// 1×, so a run played at 1× reads like a stopwatch.
const StepTick = playInterval

const (
	maxStateEvents = 2000
	playInterval   = 1200 * time.Millisecond
	minSpeed       = 0.05
	maxSpeed       = 50
)

// Run is one scenario being played on a real lock service.
type Run struct {
	m        *Manager
	id       string
	sc       *Scenario
	strategy Strategy
	fencing  bool
	ctx      context.Context
	cancel   context.CancelFunc

	// opMu serialises everything that touches the world or the plan.
	opMu  sync.Mutex
	cur   World
	forks int

	// pubMu guards the last snapshot of each path (a fork's has its own)
	// given to the live views.
	pubMu   sync.Mutex
	lastPub map[string]lockqueue.Snapshot

	// mu guards what State reads, so State answers while a step runs.
	mu       sync.Mutex
	plan     []Action
	records  []record
	cursor   int
	playing  bool
	stopPlay chan struct{}
	speed    float64
	busy     bool
	failed   error
	closed   bool
	// lastUsed is the last command or the last viewer leaving, for the
	// reaper; viewed says whether the run ever had a viewer.
	lastUsed time.Time
	subs     map[*Subscription]struct{}
	viewed   bool

	// script is the scenario's own plan, kept while an act has put the
	// run on a branch of it; branchFrom is the step the branch left it
	// at, -1 while the run follows it. mu guards both.
	script     []Action
	branchFrom int
}

// ID is the run's id.
func (r *Run) ID() string { return r.id }

// openWorld opens the backend's world for a fork (0: the first).
func (r *Run) openWorld(fork int) (World, error) {
	return r.m.backend.NewWorld(r.ctx, WorldSpec{
		Path: r.pathFor(fork), Scenario: r.sc, Strategy: r.strategy, Fencing: r.fencing,
		Publish: r.show, Logger: r.m.log, Token: tokenWords(r.m.backend),
	})
}

func (r *Run) pathFor(fork int) string {
	p := r.m.cfg.Root + "/" + r.sc.Name + "-" + r.id
	if fork > 0 {
		p += "." + strconv.Itoa(fork)
	}
	return p
}

// initial is record 0: the empty lock.
func (r *Run) initial(w World) (record, error) {
	rec := record{Step: 0, Path: w.Path(), Clients: []ClientInfo{}, Events: []Event{}}
	snap, ok, err := w.Snapshot()
	if err != nil {
		return rec, err
	}
	if ok {
		rec.Snapshot = snap
	}
	rec.Narration = w.Ready()
	rec.Servers = serversOf(w)
	rec.Locks, err = locksOf(w)
	return rec, err
}

// beBusy marks the run busy, and tells its subscribers, until the func it
// returns is called.
func (r *Run) beBusy() (done func()) {
	set := func(busy bool) {
		r.mu.Lock()
		r.busy = busy
		r.mu.Unlock()
		r.bump()
	}
	set(true)
	return func() { set(false) }
}

// exec runs plan step k on the world and records it. opMu must be held.
func (r *Run) exec(k int) error {
	r.mu.Lock()
	a := r.plan[k-1]
	r.mu.Unlock()
	defer r.beBusy()()
	ctx, cancel := context.WithTimeout(r.ctx, r.m.stepTimeout(r.sc))
	defer cancel()
	events, err := r.cur.Do(ctx, k, a)
	var rec record
	if err == nil {
		rec, err = r.record(r.cur, k, a, events)
	}
	r.mu.Lock()
	if err != nil {
		r.failed = err
	} else {
		r.records, r.cursor = append(r.records[:k], rec), k
	}
	r.mu.Unlock()
	if err == nil {
		r.publish(rec)
	}
	return err
}

func (r *Run) record(w World, k int, a Action, events []Event) (record, error) {
	rec := record{Step: k, Action: &a, Events: events, Stats: w.Stats(), Path: w.Path(), Clock: w.ClockAt(k)}
	if rec.Events == nil {
		rec.Events = []Event{}
	}
	snap, ok, err := w.Snapshot()
	if err != nil {
		return rec, fmt.Errorf("step %d: %w", k, err)
	}
	if ok {
		rec.Snapshot = snap
	}
	rec.Clients = w.Clients()
	rec.Servers = serversOf(w)
	if rec.Locks, err = locksOf(w); err != nil {
		return rec, fmt.Errorf("step %d: %w", k, err)
	}
	rec.Narration = w.Narrate(a, events)
	// The line to highlight: where the step left the last client it moved.
	rec.LineClient = a.Client
	for _, e := range events {
		if e.Event == EvLock || e.Event == EvWait {
			rec.LineClient = e.Client
		}
	}
	rec.Line = w.Line(rec.LineClient)
	return rec, nil
}

func (r *Run) publish(rec record) {
	if rec.Snapshot.Path != "" {
		r.show(rec.Snapshot)
	}
}

// show gives a snapshot of the run's lock, a step's or one in the middle
// of a step, to the live views, its holders' clocks carried from the last
// one shown (lockqueue.CarryHolds, as every live reader does), so the lock
// view of a run times a hand-off it saw as a hand-off.
func (r *Run) show(s lockqueue.Snapshot) {
	if r.m.cfg.Publish == nil {
		return
	}
	s.Nodes = slices.Clone(s.Nodes) // a step's record keeps its own
	r.pubMu.Lock()
	defer r.pubMu.Unlock()
	var last *lockqueue.Snapshot
	if l, ok := r.lastPub[s.Path]; ok {
		last = &l
	}
	lockqueue.CarryHolds(last, &s, time.Now())
	if r.lastPub == nil {
		r.lastPub = map[string]lockqueue.Snapshot{}
	}
	r.lastPub[s.Path] = s
	r.m.cfg.Publish(s)
}

// bump tells the subscribers that the state changed.
func (r *Run) bump() {
	r.mu.Lock()
	r.signal()
	r.mu.Unlock()
}

// touch marks the run as in use, for the reaper.
func (r *Run) touch() {
	r.mu.Lock()
	r.lastUsed = time.Now()
	r.mu.Unlock()
}

func (r *Run) usable() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return notFoundf("run %s is closed", r.id)
	}
	return nil
}

// Step moves one step forward: through the recorded steps when the view is
// behind, else by performing the next planned action. It pauses playback.
func (r *Run) Step() error {
	r.Pause()
	return r.step()
}

func (r *Run) step() error {
	if err := r.usable(); err != nil {
		return err
	}
	r.opMu.Lock()
	defer r.opMu.Unlock()
	r.mu.Lock()
	cursor, last, planned, failed := r.cursor, len(r.records)-1, len(r.plan), r.failed
	r.mu.Unlock()
	if cursor < last {
		r.mu.Lock()
		r.cursor++
		rec := r.records[r.cursor]
		r.mu.Unlock()
		r.publish(rec)
		r.bump()
		return nil
	}
	if failed != nil {
		return conflictf("the run failed (%v): go back and act to replay it on a fresh lock, or start a new run", failed)
	}
	if last >= planned {
		return conflictf("the scenario has no more steps: act on a client to add one")
	}
	return r.exec(last + 1)
}

// Back shows the previous recorded step. It pauses playback.
func (r *Run) Back() error {
	r.Pause()
	if err := r.usable(); err != nil {
		return err
	}
	r.mu.Lock()
	if r.cursor == 0 {
		r.mu.Unlock()
		return nil
	}
	r.cursor--
	rec := r.records[r.cursor]
	r.mu.Unlock()
	r.publish(rec)
	r.bump()
	return nil
}

// Seek shows step n. Past the recorded steps it performs the planned ones
// up to n.
func (r *Run) Seek(n int) error {
	r.Pause()
	if err := r.usable(); err != nil {
		return err
	}
	r.mu.Lock()
	last, planned := len(r.records)-1, len(r.plan)
	r.mu.Unlock()
	if n < 0 || n > planned {
		return invalidf("step %d: want 0 to %d", n, planned)
	}
	if n <= last {
		r.mu.Lock()
		r.cursor = n
		rec := r.records[n]
		r.mu.Unlock()
		r.publish(rec)
		r.bump()
		return nil
	}
	for {
		r.mu.Lock()
		cur := r.cursor
		r.mu.Unlock()
		if cur >= n {
			return nil
		}
		if err := r.step(); err != nil {
			return err
		}
	}
}

// Play steps forward on a timer (playInterval divided by the speed) until
// the plan ends, a step fails or Pause. At the end of the plan it starts
// again from step 0, as a media player does: the recorded steps play back.
func (r *Run) Play() error {
	if err := r.usable(); err != nil {
		return err
	}
	r.mu.Lock()
	if r.playing {
		r.mu.Unlock()
		return nil
	}
	if r.failed != nil && r.cursor == len(r.records)-1 {
		r.mu.Unlock()
		return conflictf("the run failed (%v)", r.failed)
	}
	if len(r.plan) == 0 {
		r.mu.Unlock()
		return conflictf("the scenario has no steps: act on a client to add one")
	}
	rewind := r.cursor >= len(r.plan)
	if rewind {
		r.cursor = 0
	}
	first := r.records[0]
	r.playing = true
	stop := make(chan struct{})
	r.stopPlay = stop
	go r.playLoop(stop)
	r.signal()
	r.mu.Unlock()
	if rewind {
		r.publish(first)
	}
	return nil
}

func (r *Run) playLoop(stop chan struct{}) {
	for {
		r.mu.Lock()
		wait := time.Duration(float64(playInterval) / r.speed)
		r.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-stop:
			t.Stop()
			return
		case <-r.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		err := r.step()
		r.mu.Lock()
		done := r.cursor >= len(r.plan)
		stillMine := r.stopPlay == stop
		r.mu.Unlock()
		if err != nil || done {
			r.touch() // the reaper counts idle time from the end of playback
			if err != nil && !errors.Is(err, ErrNotFound) {
				r.m.log.Info("simulator: playback stopped", "run", r.id, "err", err)
			}
			if stillMine {
				r.Pause()
			}
			return
		}
	}
}

// Pause stops playback.
func (r *Run) Pause() error {
	r.mu.Lock()
	if !r.playing {
		r.mu.Unlock()
		return nil
	}
	r.playing = false
	close(r.stopPlay)
	r.stopPlay = nil
	r.mu.Unlock()
	r.bump()
	return nil
}

// SetSpeed sets the playback speed: 1 is a step every 1.2 s.
func (r *Run) SetSpeed(x float64) error {
	if !(x >= minSpeed && x <= maxSpeed) {
		return invalidf("speed %v: want %v to %v", x, minSpeed, maxSpeed)
	}
	r.mu.Lock()
	r.speed = x
	r.mu.Unlock()
	r.bump()
	return nil
}

// Act has a client do something now, at the shown step. An add without a
// client name gets the next free one. Acting after going back replays the
// steps up to the shown one on a fresh lock path first: the recorded
// future is dropped (the rest of the plan is kept when it still fits).
// The act puts the run on a branch of its script, which the run keeps
// whole: ToScript goes back to it.
func (r *Run) Act(client, action string) error {
	if err := r.usable(); err != nil {
		return err
	}
	r.opMu.Lock()
	defer r.opMu.Unlock()
	a := Action{Client: client, Action: action}
	r.mu.Lock()
	cursor, last := r.cursor, len(r.records)-1
	plan := slices.Clone(r.plan)
	failed := r.failed
	shown := r.records[cursor]
	r.mu.Unlock()
	if a.Client == "" && IsAdd(a.Action) {
		a.Client = r.freeName(plan)
	}
	b := r.m.backend
	if err := b.CheckAction(r.sc, a, false); err != nil {
		return invalidf("%v", err)
	}
	if err := waiterHasNoLock(shown, a, cursor+1); err != nil {
		return err
	}
	prefix := slices.Clone(plan[:cursor])
	if err := b.DryRun(r.sc, append(slices.Clone(prefix), a)); err != nil {
		return conflictf("%v", err)
	}
	next := append(append(slices.Clone(prefix), a), plan[cursor:]...)
	if b.DryRun(r.sc, next) != nil {
		next = append(prefix, a)
	}
	if cursor < last || (failed != nil && cursor == last) {
		if err := r.fork(cursor); err != nil {
			return err
		}
	}
	r.mu.Lock()
	r.plan = next
	r.leaveScript(cursor)
	r.mu.Unlock()
	return r.exec(cursor + 1)
}

// waiterHasNoLock refuses an act that needs the lock (a release, a write)
// by a client the shown step has waiting, whatever a service's dry run
// models: a waiter blocked on its server has no lock to give back or to
// write under, and its world would refuse the act only once run, as a
// failed step. The refusal is the plan's fault in the plan's own terms
// (NoLock, walkplan.go): not who holds instead.
func waiterHasNoLock(shown record, a Action, step int) error {
	todo, ok := map[string]string{ActRelease: "release", ActWrite: "write under"}[a.Action]
	if c, found := shown.client(a.Client); ok && found && c.State == StateWaiting {
		return conflictf("step %d: %s %s: %s", step, a.Action, a.Client, NoLock(a.Client, todo))
	}
	return nil
}

// freeName is the next unused <prefix><k>, numbered after the highest
// one in use and as wide (C21 after C01..C20, LOCK6 after LOCK1..LOCK5).
func (r *Run) freeName(plan []Action) string {
	prefix := r.sc.prefix()
	used := map[string]bool{}
	top, width := 0, 1
	for _, a := range plan {
		used[a.Client] = true
		digits, ok := strings.CutPrefix(a.Client, prefix)
		if n, err := strconv.Atoi(digits); ok && err == nil && n >= top {
			top, width = n, len(digits)
		}
	}
	for k := top + 1; ; k++ {
		if n := fmt.Sprintf("%s%0*d", prefix, width, k); !used[n] {
			return n
		}
	}
}

// fork replays steps 1..upto on a fresh lock path and makes it the run's
// world. The old world is closed and its path removed. opMu must be held.
func (r *Run) fork(upto int) error {
	r.mu.Lock()
	plan := slices.Clone(r.plan[:upto])
	r.mu.Unlock()
	defer r.beBusy()()
	r.forks++
	w, err := r.openWorld(r.forks)
	if err != nil {
		return unavailablef("replay: %v", err)
	}
	fail := func(err error) error {
		if cerr := w.Close(); cerr != nil {
			r.m.log.Warn("simulator: clean up a failed replay", "path", w.Path(), "err", cerr)
		}
		return fmt.Errorf("replay on %s: %w", w.Path(), err)
	}
	rec0, err := r.initial(w)
	if err != nil {
		return fail(err)
	}
	recs := []record{rec0}
	for k := 1; k <= upto; k++ {
		ctx, cancel := context.WithTimeout(r.ctx, r.m.stepTimeout(r.sc))
		events, err := w.Do(ctx, k, plan[k-1])
		cancel()
		if err != nil {
			return fail(err)
		}
		rec, err := r.record(w, k, plan[k-1], events)
		if err != nil {
			return fail(err)
		}
		recs = append(recs, rec)
	}
	old := r.cur
	r.mu.Lock()
	r.cur = w
	r.records = recs
	r.cursor = upto
	r.failed = nil
	r.mu.Unlock()
	r.m.retire(old)
	r.publish(recs[upto])
	return nil
}

// close stops the run and cleans up its lock path.
func (r *Run) close() error {
	r.Pause()
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.mu.Unlock()
	r.cancel()
	r.opMu.Lock()
	defer r.opMu.Unlock()
	r.bump()
	if r.cur == nil {
		return nil
	}
	if r.m.cfg.Remove != nil {
		r.m.cfg.Remove(r.m.lockKey(r.cur))
	}
	return r.cur.Close()
}

// Done reports whether every planned step is recorded and shown.
func (r *Run) Done() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cursor == len(r.records)-1 && r.cursor >= len(r.plan)
}

// Err is the error a failed step left, if any.
func (r *Run) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

// runClocks stamps each node of snap with its clock's start on the run's
// clock, taken as that many milliseconds after the Unix epoch, the base
// State.ClockMs counts from: a holder's HeldSince when its client acquired
// (ClientInfo.SinceMs), any other node's WaitSince when its client joined
// (JoinedMs), and a node no client owns the step's clock, clockMs. The
// page times a step's nodes from the snapshot, as it does a live lock's
// (views.ClockOf, which its nodes bring: views.LaneOf), and stops their
// clocks at ClockMs. The nodes are copied: snap is the step's record.
func runClocks(snap lockqueue.Snapshot, clients []ClientInfo, clockMs int64) lockqueue.Snapshot {
	byNode := make(map[string]ClientInfo, len(clients))
	for _, c := range clients {
		if c.Node != "" {
			byNode[c.Node] = c
		}
	}
	nodes := slices.Clone(snap.Nodes)
	for i := range nodes {
		n := &nodes[i]
		held, joined := clockMs, clockMs
		if c, ok := byNode[n.Name]; ok {
			held, joined = c.SinceMs, c.JoinedMs
		}
		switch {
		case !n.Holding:
			n.SetWaitSince(time.UnixMilli(joined).UTC())
		case n.HeldSince().IsZero():
			// A world that knows better (a lock its client took later
			// than its first, as a transaction's second row) has
			// stamped it already.
			n.SetHeldSince(time.UnixMilli(held).UTC())
		}
	}
	snap.Nodes = nodes
	return snap
}

// State is the run as the browser shows it, at the shown step.
func (r *Run) State() State {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stateAt(r.cursor)
}

// StateAt is the run as it would show recorded step k (false when k is not
// recorded): a viewer who predicts each step's outcome is shown the step it
// last answered while the run has moved on.
func (r *Run) StateAt(k int) (State, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if k < 0 || k >= len(r.records) {
		return State{}, false
	}
	return r.stateAt(k), true
}

// stateAt is State at step cursor. mu must be held.
func (r *Run) stateAt(cursor int) State {
	rec := r.records[cursor]
	rc := r.m.backend.Recipe(r.sc, r.strategy)
	s := State{
		ID: r.id, Service: lockqueue.WireService(r.sc.Service), Scenario: r.sc.Name, Title: cmp.Or(r.sc.Title, r.sc.Name), Lock: r.sc.Lock, Leases: r.sc.Leases,
		Strategy: rc.Strategy, Fencing: r.fencing, Path: rec.Path, SessionTimeoutMs: r.m.backend.Timeout(r.sc).Milliseconds(),
		Step: cursor, ClockMs: rec.Clock.Milliseconds(), Steps: len(r.records) - 1, Planned: len(r.plan), Playing: r.playing, Speed: r.speed, StepMs: StepTick.Milliseconds(),
		Done: cursor == len(r.records)-1 && cursor >= len(r.plan), Busy: r.busy,
		Action: rec.Action, Stats: rec.Stats, Clients: rec.Clients, Narration: rec.Narration,
		Pseudocode: Pseudocode{Strategy: rc.Strategy, Lines: rc.Lines, Line: rec.Line, Client: rec.LineClient},
		Line:       rec.Line, Snapshot: shownLock(rec.Snapshot, rec.Clients, rec.Clock.Milliseconds()), Events: []Event{},
	}
	s.Locks, s.Cycle, s.CycleSteps = stateLocks(rec.Locks, rec.Clients, rec.Clock.Milliseconds())
	s.Servers = stateServers(r.records[:cursor+1])
	if r.failed != nil {
		s.Error = r.failed.Error()
	}
	if cursor < len(r.plan) {
		next := r.plan[cursor]
		s.Next = &next
	}
	for _, rc := range r.records[1 : cursor+1] {
		s.Events = append(s.Events, rc.Events...)
	}
	if n := len(s.Events); n > maxStateEvents {
		s.EventsTruncated = n - maxStateEvents
		s.Events = s.Events[n-maxStateEvents:]
	}
	s.Violations = r.check(r.records[:cursor+1])
	if s.Violations == nil {
		s.Violations = []Violation{}
	}
	s.Verdict = VerdictOf(s.Violations, s.Stats)
	s.Branch = r.branch()
	s.Meters = MetersOf(runWords(r.m.backend).Requests, s.Events, s.Stats)
	for k := cursor; k >= 1; k-- {
		if releases(r.records[k].Events) {
			d := r.records[k].Stats.Sub(r.records[k-1].Stats)
			s.LastRelease = &d
			break
		}
	}
	return s
}

func releases(events []Event) bool {
	return slices.ContainsFunc(events, func(e Event) bool { return e.Event == EvUnlock || e.Event == EvExpire })
}

// check runs the safety checker over recs with the run's rules.
func (r *Run) check(recs []record) []Violation {
	vs := checkSafety(recs, r.sc.Lock, r.sc.Leases, r.fencing, r.m.backend.Lost(r.sc), tokenWords(r.m.backend))
	// One sentence for the report and the page.
	timed := !runWords(r.m.backend).UntimedViolations
	for i := range vs {
		vs[i].Said = vs[i].Sentence(timed)
	}
	return vs
}

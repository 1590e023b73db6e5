package simulator

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// World is the service-specific half of a run: the clients of one lock on
// a real server. The engine (Run: stepping, seek by replay, play,
// subscriptions, narration plumbing, the ledger and the checker) is the
// same for every service; a World does one action at a time and tells what
// the server and its clients look like after it. A run has one World at a
// time; going back and acting replays the steps on a fresh one. Calls are
// serialised by the run.
type World interface {
	// Path names the lock as the views show it (a znode path, a Redis key).
	Path() string
	// Do performs plan step k (numbered from 1) and returns when every
	// client is at rest, with what happened.
	Do(ctx context.Context, step int, a Action) ([]Event, error)
	// Snapshot reads the lock's true state from the server. ok is false
	// when the world takes no snapshots (benchmarks of big queues).
	Snapshot() (snap lockqueue.Snapshot, ok bool, err error)
	// Stats are the clients' counters so far, summed.
	Stats() Stats
	// Clients are the clients as they are now, in the order they joined.
	Clients() []ClientInfo
	// ClockAt is the run's clock at the end of step k (0 before the first).
	ClockAt(step int) time.Duration
	// Line is the pseudocode line a client is at.
	Line(client string) int
	// Narrate tells step a from its events.
	Narrate(a Action, events []Event) string
	// Ready is record 0's narration: the empty lock.
	Ready() string
	// Close ends every client and removes what the world wrote.
	Close() error
}

// WorldSpec is what a Backend needs to open a World.
type WorldSpec struct {
	// Path is the run's lock name (the manager's Root, the scenario and
	// the run id; a fork adds ".k").
	Path     string
	Scenario *Scenario
	Strategy Strategy
	Fencing  bool
	// Publish shows a mid-step snapshot (the live hub); may be nil.
	Publish func(lockqueue.Snapshot)
	Logger  *slog.Logger
	// Token words a fencing token as the backend does (TokenWorder); nil:
	// in decimal.
	Token func(int64) string
}

// Backend is a lock service's classroom: its scenarios, their rules and
// its worlds. Every Manager is given one (ManagerConfig.Backend); each
// service's package has its own (zookeeper/zksim, redis/redislock, ...).
type Backend interface {
	// Name is the service's name, as the registry and its snapshots name
	// it ("zookeeper", "redis").
	Name() string
	// Open makes the server ready for runs; the manager calls it before
	// every run starts (a backend starts its server once). Its error says
	// what is missing (a package to install) and makes the run unavailable.
	Open(ctx context.Context) error
	// Catalog is the service's scenarios: its built-ins and its file
	// format's rules.
	Catalog() *Catalog
	// Actions are the actions its clients accept.
	Actions() []string
	// CheckAction checks one action against the scenario on its own
	// (wildcard: a "*" client is allowed, as in a scenario file).
	CheckAction(sc *Scenario, a Action, wildcard bool) error
	// DryRun checks a whole plan, before any client connects.
	DryRun(sc *Scenario, plan []Action) error
	// Recipe is the pseudocode the scenario's clients follow.
	Recipe(sc *Scenario, st Strategy) Recipe
	// Timeout is what a lost client takes to lose the lock (ZooKeeper's
	// session timeout, a Redis key's expiry), shown as sessionTimeoutMs.
	Timeout(sc *Scenario) time.Duration
	// Lost says why a client that believes it holds no longer does in the
	// scenario, for the checker ("session had expired").
	Lost(sc *Scenario) string
	NewWorld(ctx context.Context, spec WorldSpec) (World, error)
	// Close stops what Open started.
	Close() error
}

// Client states as ClientInfo.State names them: the checker and the
// classroom read these words, whatever the service.
const (
	StateWaiting  = "waiting"
	StateHolding  = "holding"
	StateReleased = "released"
	StateCrashed  = "crashed" // cut off for good
	StatePaused   = "paused"  // cut off, to be restored
	// StateStale: believes it holds, but the server says it no longer does.
	StateStale = "stale"
	// StateExpired: lost its session (or lease) while it waited: out of
	// the queue.
	StateExpired = "expired"
)

// TokenWorder is a Backend that words its fencing tokens itself (ZooKeeper's
// zxids in hex); the others' are decimal, as a Redis INCR or an etcd
// revision is written.
type TokenWorder interface {
	Token(t int64) string
}

// Untokened is a Backend whose recipes may give no fencing token (a
// PostgreSQL lock, Redis's SET NX without its INCR, Redlock): NoToken says
// why sc's gives none, or "" when it gives one. The classroom offers its
// fencing choice only where a resource has a token to check; a Backend
// without it gives one in every scenario.
type Untokened interface {
	NoToken(sc *Scenario) string
}

// RunWorder is a Backend that words its runs' text report and request
// meter in its service's terms; the others take NeutralRunWords.
type RunWorder interface {
	RunWords() RunWords
}

// RunWords are how a service words a run: the text report's heading and
// request counts, and what the request meter counted and who counted it.
// A nil func takes NeutralRunWords'.
type RunWords struct {
	// Heading is the text report's first line, without its newline.
	Heading func(rep Report) string
	// Counts are the run's requests in the service's terms, one line.
	Counts func(s Stats) string
	// Requests are what the server was asked for the lock, and who counted
	// them (Meters.Requests, Meters.RequestsFrom).
	Requests func(s Stats) (n int, from string)
	// UntimedViolations leaves out how long each violation lasted from
	// the text report (ZooKeeper's reports never said).
	UntimedViolations bool
}

// NeutralRunWords word a run whose service says nothing of its own: a key
// with an expiry, taken with commands the classroom counts.
func NeutralRunWords() RunWords {
	return RunWords{
		Heading: func(rep Report) string {
			return fmt.Sprintf("scenario %s (%s, %s waiters, fencing %s) on the key %s, expiry %.1fs",
				rep.Scenario, rep.Service, rep.Strategy, rep.FencingOnOff(), rep.Path, rep.TimeoutSeconds())
		},
		Counts: func(s Stats) string {
			return fmt.Sprintf("commands %d (acquire attempts that found the lock taken %d, watchdog renewals %d), acquisitions %d, deletes %d, writes %d, fenced %d",
				s.Commands, s.Retries, s.Renewals, s.Create, s.Delete, s.Writes, s.Fenced)
		},
		Requests: func(s Stats) (int, string) {
			return s.Commands, "the clients' requests to the server, counted by the classroom: the server keeps no per-lock count"
		},
	}
}

// runWords are b's words, the neutral ones where it has none.
func runWords(b Backend) RunWords {
	var w RunWords
	if rw, ok := b.(RunWorder); ok {
		w = rw.RunWords()
	}
	return w.withNeutral()
}

// withNeutral fills w's nil funcs with the neutral words.
func (w RunWords) withNeutral() RunWords {
	n := NeutralRunWords()
	if w.Heading == nil {
		w.Heading = n.Heading
	}
	if w.Counts == nil {
		w.Counts = n.Counts
	}
	if w.Requests == nil {
		w.Requests = n.Requests
	}
	return w
}

// tokenWords is how b words a fencing token.
func tokenWords(b Backend) func(int64) string {
	if tw, ok := b.(TokenWorder); ok {
		return tw.Token
	}
	return decimalToken
}

// decimalToken is a token in decimal, as most services' narration writes it.
func decimalToken(t int64) string {
	if t == 0 {
		return "none"
	}
	return strconv.FormatInt(t, 10)
}

// Resource is the protected resource a world's clients write to: the same
// fencing check for every service (refuse any token older than one seen).
type Resource struct {
	fencing  bool
	maxToken int64
	last     string
	// token words a token as the service's narration does.
	token func(int64) string
}

// Write is a client's write with its token (0: none); it says whether the
// resource accepted it and why.
func (r *Resource) Write(client string, token int64) (bool, string) {
	switch {
	case !r.fencing:
		r.note(client, token)
		return true, "accepted (fencing is off: the resource checks nothing)"
	case token == 0:
		return false, "a write without a token: this recipe gives none, so the resource cannot tell the holder's write from a stale one"
	case token < r.maxToken:
		return false, fmt.Sprintf("the resource has already seen token %s (from %s): this one is stale", r.token(r.maxToken), r.last)
	}
	r.note(client, token)
	return true, "accepted"
}

// Tell is a client's write to r with its token (0: none), counted in s
// and told as the step's event: with is what the text says the write
// carries (" with token 5", "" where the service's lock gives none).
func (r *Resource) Tell(s *Stats, client, node string, token int64, with string) Event {
	s.Writes++
	ok, why := r.Write(client, token)
	if ok {
		return Event{Client: client, Event: EvWrite, Token: token, Node: node, Text: "writes to the protected resource" + with + ": " + why}
	}
	s.Refused(token)
	return Event{Client: client, Event: EvFenced, Token: token, Node: node, Text: "writes" + with + ": rejected, " + why}
}

func (r *Resource) note(client string, token int64) {
	if token >= r.maxToken {
		r.maxToken, r.last = token, client
	}
}

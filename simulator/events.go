package simulator

import "reflect"

// Event kinds, as the CLI's JSON and the classroom name them.
const (
	EvLock   = "lock"
	EvWait   = "wait"
	EvNotify = "notify"
	EvUnlock = "unlock"
	EvCrash  = "crash"
	EvExpire = "expire"
	EvPause  = "pause"
	EvResume = "resume"
	EvWrite  = "write"
	EvFenced = "fenced"
	// EvWake: a split scenario's hand-over step begins, the waiters an
	// expiry notified handling their notification (Notified names them).
	EvWake = "wake"
	// EvDeadlock: the server broke a cycle of waits by aborting the
	// client's transaction (PostgreSQL's 40P01); the text's lead, up to
	// its first colon, is the server's own error.
	EvDeadlock = "deadlock"
)

// Event is one thing that happened in a step.
type Event struct {
	Step   int    `json:"step"`
	Client string `json:"client"`
	Event  string `json:"event"`
	// Kind repeats Event for the browser, which reads "kind".
	Kind string `json:"kind"`
	// On is, for a wait, the client waited for; for a notify, the client
	// whose node's creation or deletion fired the watch.
	On string `json:"on,omitempty"`
	// Node is the client's lock node (for a notify: the node that changed).
	Node string `json:"node,omitempty"`
	// Lock names which of several locks a client takes the event is on
	// (PostgreSQL's "row 2"), where the run's clients take more than one.
	Lock string `json:"lock,omitempty"`
	// Watch is the kind of watch involved: "exists" (the predecessor's
	// node) or "children" (the lock's children).
	Watch string `json:"watch,omitempty"`
	// Notified lists the clients a create, delete or expiry woke, in queue
	// order.
	Notified []string `json:"notified,omitempty"`
	// Wasted marks a notify after which the client did not acquire.
	Wasted bool `json:"wasted,omitempty"`
	// Token is the fencing token of a write (the writer's node czxid).
	Token int64 `json:"token,omitempty"`
	// AfterMs is, on expire and resume, how long the client had been cut off.
	AfterMs int64 `json:"afterMs,omitempty"`
	// Text is the row's detail, as the text timeline prints it.
	Text string `json:"text"`
	// AtMs is when it happened, in milliseconds since the run started.
	AtMs int64 `json:"atMs"`
}

// Stats count what the clients did, summed over all of them. Barrier syncs
// and the simulator's own reads are not counted: they are not the recipe's.
type Stats struct {
	// Notifications is the watch events delivered to clients.
	Notifications int `json:"notifications"`
	GetChildren   int `json:"getChildren"`
	Exists        int `json:"exists"`
	GetData       int `json:"getData"`
	Create        int `json:"create"`
	Delete        int `json:"delete"`
	// WastedWakeups is notifications after which the client did not acquire.
	WastedWakeups int `json:"wastedWakeups"`
	Writes        int `json:"writes"`
	Fenced        int `json:"fenced"`
	// Tokenless is the refused writes that carried no token (Refused): the
	// recipe gives none, so a fencing resource cannot tell the holder's
	// write from a stale client's and refuses both.
	Tokenless int `json:"tokenless,omitempty"`
	// ServerRefused is the refused writes that the lock's own server
	// refused, not a resource checking a token: a PostgreSQL INSERT in a
	// transaction the server had already ended. Counted in Fenced too.
	ServerRefused int `json:"serverRefused,omitempty"`
	// TokenReads is the simulator's own exists() on a client's node as it
	// acquires, to learn its fencing token (czxid); not part of the recipe,
	// so not in Exists.
	TokenReads int `json:"tokenReads"`

	// Other services' meters; ZooKeeper leaves them zero and out of its JSON.

	// Commands is every command the clients sent the server (Redis).
	Commands int `json:"commands,omitempty"`
	// Retries is the acquire attempts that found the lock taken: a
	// polling waiter's cost.
	Retries int `json:"retries,omitempty"`
	// Renewals is a watchdog's lease renewals.
	Renewals int `json:"renewals,omitempty"`
	// ServerCalls is what the server itself counted of the lock's
	// commands (Redis's INFO commandstats), not the classroom's tally.
	ServerCalls int `json:"serverCalls,omitempty"`
}

// Refused counts a write the protected resource refused, with the token it
// carried (0: none).
func (s *Stats) Refused(token int64) {
	s.Fenced++
	if token == 0 {
		s.Tokenless++
	}
}

// Add adds o's counts to s.
func (s *Stats) Add(o Stats) { s.addTimes(o, 1) }

// Sub is what s counts beyond o (a later total minus an earlier one).
func (s Stats) Sub(o Stats) Stats {
	s.addTimes(o, -1)
	return s
}

// addTimes adds n times each of o's counts to s's. Every field of Stats is
// a count, so it walks them all: a field added to Stats is summed and
// subtracted without an edit here (TestStatsAddSub).
func (s *Stats) addTimes(o Stats, n int) {
	sv, ov := reflect.ValueOf(s).Elem(), reflect.ValueOf(o)
	for i := range sv.NumField() {
		sv.Field(i).SetInt(sv.Field(i).Int() + int64(n)*ov.Field(i).Int())
	}
}

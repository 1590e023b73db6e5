package simulator

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// LockKind is the recipe family a scenario's clients follow.
type LockKind string

const (
	// RW is seed 000's read/write lock: R_/W_ sequential nodes.
	RW LockKind = "rw"
	// ExclusiveLock is the plain mutex of seeds 002/003/004.
	ExclusiveLock LockKind = "exclusive"
	// LeaseLock is seed 001's N-holder lock: up to N hold, the rest stand by.
	LeaseLock LockKind = "lease"
)

// Strategy is how a waiter learns that its turn may have come.
type Strategy string

const (
	// Herd: every waiter watches the parent's children (seed 002's first version).
	Herd Strategy = "herd"
	// Predecessor: a waiter watches only the node it waits for (seeds 000, 002, 003).
	Predecessor Strategy = "predecessor"
	// Children is what lease standbys always do (seed 001), whatever was asked.
	Children Strategy = "children"
)

// Actions a scenario step or a teacher can take.
const (
	ActAddReader = "add-reader"
	ActAddWriter = "add-writer"
	ActAdd       = "add"
	ActRelease   = "release"
	ActCrash     = "crash"
	ActPause     = "pause"
	ActWrite     = "write"
	// The key moment on steps of its own: a scenario with an expire step
	// splits a pause or a crash into the cut (pause, crash), the expiry of
	// the cut client's session (expire: the server deletes its node and
	// notifies its watchers), the hand-over (wake: the notified waiters
	// handle their notifications) and, after a pause, the client's return
	// (resume). A scenario without one does all of it in the pause or
	// crash step.
	ActExpire = "expire"
	ActWake   = "wake"
	ActResume = "resume"
)

var actions = []string{ActAddReader, ActAddWriter, ActAdd, ActRelease, ActCrash, ActPause, ActWrite, ActExpire, ActWake, ActResume}

// Split reports whether a plan (or a scenario's steps) tells the key
// moment step by step: it has an expire step.
func Split(plan []Action) bool {
	return slices.ContainsFunc(plan, func(a Action) bool { return a.Action == ActExpire })
}

// Actions lists every action a client can take, for messages and forms.
func Actions() []string { return slices.Clone(actions) }

// Action is one scenario step: a client and what it does.
type Action struct {
	Client string `json:"client"`
	Action string `json:"action"`
	// Note is shown next to the step's narration.
	Note string `json:"note,omitempty"`
}

// Scenario is a scenario data file (see docs/simulator.md).
type Scenario struct {
	// Service is the lock service the scenario is for. A scenario that
	// names one is checked by that service's backend, which reads Params;
	// one that names none speaks the engine's own actions (CheckSteps),
	// and the classroom it runs in names it (ZooKeeper's files name none).
	Service     string   `json:"service,omitempty"`
	Name        string   `json:"name"`
	Title       string   `json:"title,omitempty"`
	Description string   `json:"description,omitempty"`
	Lock        LockKind `json:"lock"`
	// Leases is the number of holders of a lease lock.
	Leases int `json:"leases,omitempty"`
	// Strategy is the default strategy (predecessor when empty).
	Strategy Strategy `json:"strategy,omitempty"`
	// Fencing is whether the protected resource checks tokens by default (on when empty).
	Fencing *bool `json:"fencing,omitempty"`
	// Clients is how many clients a step with client "*" stands for by default.
	Clients int `json:"clients,omitempty"`
	// ClientPrefix names "*" clients (<prefix>01, <prefix>02, ...) and
	// clients added without a name.
	ClientPrefix string   `json:"clientPrefix,omitempty"`
	Steps        []Action `json:"steps"`
	// Params are the service's own settings (a Redis lock's expiry and
	// release), which its backend decodes; ZooKeeper takes none.
	Params json.RawMessage `json:"params,omitempty"`
}

// ScenarioInfo is what GET /scenarios lists.
type ScenarioInfo struct {
	// Service is empty for ZooKeeper's.
	Service     string   `json:"service,omitempty"`
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Lock        LockKind `json:"lock"`
	// Modes are the node modes the lock kind takes, for the legend.
	Modes    []lockqueue.Mode `json:"modes"`
	Leases   int              `json:"leases,omitempty"`
	Strategy Strategy         `json:"strategy"`
	// StrategyFixed, when set, says why the scenario ignores a strategy
	// (a lease lock's standbys always watch the children), for the
	// classroom to show beside its disabled strategy control.
	StrategyFixed string `json:"strategyFixed,omitempty"`
	// Waiting says how another service's waiters wait (its catalog's
	// Waiting), for the classroom's strategy note and pane title.
	Waiting string `json:"waiting,omitempty"`
	Fencing bool   `json:"fencing"`
	// NoToken says why the scenario's recipe gives no fencing token, so
	// that fencing is not offered (Untokened); empty when it gives one.
	NoToken string `json:"noToken,omitempty"`
	Clients int    `json:"clients,omitempty"`
	Steps   int    `json:"steps"`
	// Unavailable says why the scenario cannot run here (its server is
	// not installed: which package provides it); empty when it can.
	Unavailable string `json:"unavailable,omitempty"`
}

// Limits on scenarios, so a typo cannot start ten thousand sessions.
const (
	MaxClients = 1000
	MaxSteps   = 10000
)

// Clone is a deep copy of the scenario.
func (sc *Scenario) Clone() *Scenario { return sc.clone() }

// ParseScenario decodes and checks a scenario file. Unknown fields are
// errors: a misspelt "acton" must not silently do nothing.
func ParseScenario(b []byte) (*Scenario, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, invalidf("scenario: the file is empty: want a JSON object with lock and steps (see docs/simulator.md)")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var sc Scenario
	if err := dec.Decode(&sc); err != nil {
		return nil, invalidf("scenario: %s", jsonError(b, err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, invalidf("scenario: unexpected data after the scenario object")
	}
	if err := sc.check(); err != nil {
		return nil, err
	}
	return &sc, nil
}

// jsonError adds a line number to a decoding error.
func jsonError(b []byte, err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	var off int64
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	default:
		return err.Error()
	}
	line := 1 + bytes.Count(b[:min(int(off), len(b))], []byte("\n"))
	return fmt.Sprintf("line %d: %v", line, err)
}

var (
	clientName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,31}$`)
	scenarioID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)
)

// check validates what a scenario says on its own; Plan validates the steps
// against each other.
func (sc *Scenario) check() error {
	if sc.Name != "" && !scenarioID.MatchString(sc.Name) {
		return invalidf("scenario: name %q: want letters, digits, '.', '_' or '-' (at most 64)", sc.Name)
	}
	switch sc.Lock {
	case RW, ExclusiveLock:
		if sc.Leases != 0 {
			return invalidf("scenario: leases is only for a %q lock", LeaseLock)
		}
	case LeaseLock:
		if sc.Leases < 1 {
			return invalidf("scenario: a lease lock needs leases >= 1")
		}
	case "":
		return invalidf("scenario: missing lock: want %q, %q or %q", RW, ExclusiveLock, LeaseLock)
	default:
		return invalidf("scenario: bad lock %q: want %q, %q or %q", sc.Lock, RW, ExclusiveLock, LeaseLock)
	}
	if sc.Strategy != "" {
		if _, err := ParseStrategy(string(sc.Strategy)); err != nil {
			return invalidf("scenario: %v", err)
		}
	}
	if sc.Clients < 0 || sc.Clients > MaxClients {
		return invalidf("scenario: clients %d: want 1 to %d", sc.Clients, MaxClients)
	}
	if sc.ClientPrefix != "" && !clientName.MatchString(sc.ClientPrefix) {
		return invalidf("scenario: clientPrefix %q: want a letter then letters, digits or '_'", sc.ClientPrefix)
	}
	if len(sc.Steps) == 0 {
		return invalidf("scenario: no steps")
	}
	if len(sc.Steps) > MaxSteps {
		return invalidf("scenario: %d steps, at most %d", len(sc.Steps), MaxSteps)
	}
	if sc.Service != "" {
		if len(sc.Params) == 0 {
			return nil
		}
		return json.Unmarshal(sc.Params, new(map[string]any))
	}
	return sc.CheckSteps()
}

// CheckSteps checks the scenario's steps against the engine's own actions
// (CheckAction, a "*" client allowed): those of a scenario that names no
// service, and of a backend whose clients take no others. Such a scenario
// has no params.
func (sc *Scenario) CheckSteps() error {
	if len(sc.Params) > 0 {
		return invalidf("scenario: params are for another lock service's scenario (set service)")
	}
	for i, a := range sc.Steps {
		if err := CheckAction(sc.Lock, a, true); err != nil {
			return invalidf("scenario: step %d: %v", i+1, err)
		}
	}
	return nil
}

// DecodeParams reads the scenario's params into p, a service's own
// settings; a field p lacks is an error, as in the scenario itself.
func (sc *Scenario) DecodeParams(p any) error {
	if len(sc.Params) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(sc.Params))
	dec.DisallowUnknownFields()
	if err := dec.Decode(p); err != nil {
		return invalidf("scenario %s: params: %v", sc.Name, err)
	}
	return nil
}

// CheckClientAction is what every backend's CheckAction checks first: an
// action its clients (named by who, "a Redis client") take, and a client
// ("*" only when wildcard).
func CheckClientAction(actions []string, who string, a Action, wildcard bool) error {
	if !slices.Contains(actions, a.Action) {
		return fmt.Errorf("unknown action %q: %s takes %s", a.Action, who, strings.Join(actions, ", "))
	}
	if a.Client == "" || a.Client == "*" && !wildcard {
		return fmt.Errorf("%s: missing client", a.Action)
	}
	return nil
}

// CheckAction checks one action on its own against a lock kind: a known
// action, a client's name ("*" when wildcard, as in a scenario file) and a
// mode the lock has.
func CheckAction(lock LockKind, a Action, wildcard bool) error {
	switch {
	case a.Action == "":
		return errors.New("missing action")
	case !slices.Contains(actions, a.Action):
		return fmt.Errorf("unknown action %q: want one of %s", a.Action, strings.Join(actions, ", "))
	case a.Client == "":
		return fmt.Errorf("%s: missing client", a.Action)
	case a.Client == "*" && wildcard:
	case !clientName.MatchString(a.Client):
		return fmt.Errorf("%s: bad client name %q: want a letter then letters, digits or '_' (at most 32)", a.Action, a.Client)
	}
	if _, err := ModeOf(lock, a.Action); err != nil {
		return err
	}
	return nil
}

// ParseStrategy reads a --strategy value.
func ParseStrategy(s string) (Strategy, error) {
	switch Strategy(s) {
	case Herd, Predecessor:
		return Strategy(s), nil
	}
	return "", invalidf("bad strategy %q: want %q or %q", s, Herd, Predecessor)
}

func (sc *Scenario) clone() *Scenario {
	c := *sc
	c.Steps = slices.Clone(sc.Steps)
	c.Params = slices.Clone(sc.Params)
	if sc.Fencing != nil {
		f := *sc.Fencing
		c.Fencing = &f
	}
	return &c
}

func (sc *Scenario) info() ScenarioInfo {
	st := cmp.Or(sc.Strategy, Predecessor)
	info := ScenarioInfo{
		Service: lockqueue.WireService(sc.Service), ID: sc.Name, Name: sc.Name, Title: cmp.Or(sc.Title, sc.Name), Description: sc.Description,
		Lock: sc.Lock, Modes: sc.Lock.Modes(), Leases: sc.Leases, Strategy: st, Fencing: sc.Fencing == nil || *sc.Fencing,
		Clients: sc.Clients, Steps: len(sc.Steps),
	}
	if sc.Lock == LeaseLock {
		info.Strategy = Children
		info.StrategyFixed = "a lease lock's standbys always keep a children watch on the lock (each freed lease wakes them all), so herd and predecessor do not apply"
	}
	return info
}

func (sc *Scenario) prefix() string {
	return cmp.Or(sc.ClientPrefix, "C")
}

// Wildcard reports whether the scenario has steps with client "*", the only
// ones a client count (--clients) changes.
func (sc *Scenario) Wildcard() bool {
	return slices.ContainsFunc(sc.Steps, func(a Action) bool { return a.Client == "*" })
}

// PlanWith expands "*" steps for n clients (0: the scenario's default) and
// checks the steps against each other with dry, a dry run of the service's
// holding logic (its Backend's DryRun).
func (sc *Scenario) PlanWith(n int, dry func([]Action) error) ([]Action, error) {
	wild := sc.Wildcard()
	n = cmp.Or(n, sc.Clients)
	if wild && n == 0 {
		return nil, invalidf("scenario %s: steps with client \"*\" need a client count (clients, or --clients)", sc.Name)
	}
	if n < 0 || n > MaxClients {
		return nil, invalidf("clients %d: want 1 to %d", n, MaxClients)
	}
	stars := 0
	for _, a := range sc.Steps {
		if a.Client == "*" {
			stars++
		}
	}
	// Count before expanding: 10,000 "*" steps for 1,000 clients must not
	// build ten million actions first.
	if total := len(sc.Steps) - stars + stars*n; total > MaxSteps {
		return nil, invalidf("scenario %s: %d steps for %d clients, at most %d", sc.Name, total, n, MaxSteps)
	}
	var out []Action
	width := max(2, len(strconv.Itoa(n)))
	for _, a := range sc.Steps {
		if a.Client != "*" {
			out = append(out, a)
			continue
		}
		for i := 1; i <= n; i++ {
			b := a
			b.Client = fmt.Sprintf("%s%0*d", sc.prefix(), width, i)
			out = append(out, b)
		}
	}
	if err := dry(out); err != nil {
		return nil, err
	}
	return out, nil
}

// Modes are the node modes a lock of the kind takes: what its add actions
// ask for (ModeOf).
func (k LockKind) Modes() []lockqueue.Mode {
	var out []lockqueue.Mode
	for _, a := range []string{ActAddReader, ActAddWriter} {
		if m, err := ModeOf(k, a); err == nil && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

// ModeOf is the queue mode an add action asks for in a lock kind.
func ModeOf(lock LockKind, action string) (lockqueue.Mode, error) {
	switch action {
	case ActAddReader:
		if lock != RW {
			return "", fmt.Errorf("%s: %s lock has no readers (use %s)", action, article(string(lock)), ActAdd)
		}
		return lockqueue.Read, nil
	case ActAddWriter:
		switch lock {
		case RW:
			return lockqueue.Write, nil
		case LeaseLock:
			return lockqueue.Lease, nil
		}
		return lockqueue.Exclusive, nil
	case ActAdd:
		switch lock {
		case RW:
			return "", fmt.Errorf("%s: a read/write lock needs %s or %s", action, ActAddReader, ActAddWriter)
		case LeaseLock:
			return lockqueue.Lease, nil
		}
		return lockqueue.Exclusive, nil
	}
	return "", nil
}

// IsAdd reports whether an action adds a client.
func IsAdd(action string) bool {
	return action == ActAdd || action == ActAddReader || action == ActAddWriter
}

// article puts "a" or "an" before a word: "an exclusive lock", "a lease lock".
func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an " + word
	}
	return "a " + word
}

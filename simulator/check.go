package simulator

import (
	"fmt"
	"slices"
	"strings"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// Violation is a safety property broken somewhere in a run's history.
type Violation struct {
	// Kind is "overlap" (two writers or exclusive holders, or a reader and
	// a writer, hold at once), "leases" (more holders than leases) or
	// "unfenced-write" (the resource accepted a write from a client that no
	// longer held the lock).
	Kind    string   `json:"kind"`
	Steps   []int    `json:"steps"`
	Clients []string `json:"clients"`
	Message string   `json:"message"`
	// ForMs is how long it lasted on the run's clock, from its first step
	// to its last (a stale holder's write: from the step it lost the lock).
	ForMs int64 `json:"forMs,omitempty"`
	// Said is the sentence the text report prints and the classroom page
	// shows: Message, and how long it lasted where the service's reports
	// say so (Sentence).
	Said string `json:"said"`

	// what is the message without its "step n:" lead; consecutive steps
	// merge only when it is the same, so a writer/writer overlap and a
	// reader/writer one (both Kind "overlap") stay apart.
	what string
}

// Sentence is v as a report says it: its message and, when timed, how
// long it lasted on the run's clock.
func (v Violation) Sentence(timed bool) string {
	if timed && v.ForMs > 0 {
		return fmt.Sprintf("%s; it lasted %.1fs on the run's clock", v.Message, float64(v.ForMs)/1000)
	}
	return v.Message
}

// checkSafety runs over recorded steps 1..n. A holder is a client whose
// recipe decided it holds and whose session is still alive; a client back
// from a pause that outlasted its lock only believes it holds, and what
// matters is whether the resource let it write. fencing is whether the
// resource checked tokens: it only says why a stale write got through.
// lost is the service's words for a lost lock ("session had expired", "key
// had expired") and token its words for a token. Each violation says how
// long it lasted on the run's clock (ForMs).
func checkSafety(recs []record, lock LockKind, leases int, fencing bool, lost string, token func(int64) string) []Violation {
	clock := make(map[int]int64, len(recs))
	for _, rec := range recs {
		clock[rec.Step] = rec.Clock.Milliseconds()
	}
	var out []Violation
	for _, rec := range recs {
		if rec.Step == 0 {
			continue
		}
		readers, writers := holders(rec.Clients)
		for _, clients := range byLock(rec.Clients) {
			r, w := holders(clients)
			out = checkOverlap(out, rec.Step, lock, leases, r, w)
		}
		for _, e := range rec.Events {
			if e.Event != EvWrite {
				continue
			}
			c, ok := rec.client(e.Client)
			if !ok || c.State == StateHolding {
				continue
			}
			out = append(out, unfencedWrite(e, c, append(slices.Clone(writers), readers...), fencing, lost, token))
		}
	}
	for i := range out {
		v := &out[i]
		v.ForMs = clock[v.Steps[len(v.Steps)-1]] - clock[v.Steps[0]]
	}
	return out
}

// byLock are the clients by the lock they joined (ClientInfo.Lock), in
// the order the locks first come: one group in a run of one lock.
func byLock(clients []ClientInfo) [][]ClientInfo {
	var out [][]ClientInfo
	at := map[string]int{}
	for _, c := range clients {
		i, ok := at[c.Lock]
		if !ok {
			i = len(out)
			at[c.Lock] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], c)
	}
	return out
}

// holders are the clients holding a lock, readers apart from writers (a
// lease's holder counts as a writer).
func holders(clients []ClientInfo) (readers, writers []string) {
	for _, c := range clients {
		if c.State != StateHolding {
			continue
		}
		if c.Mode == lockqueue.Read {
			readers = append(readers, c.Name)
		} else {
			writers = append(writers, c.Name)
		}
	}
	return readers, writers
}

// checkOverlap adds to out a violation if the holders at step are more
// than the lock allows.
func checkOverlap(out []Violation, step int, lock LockKind, leases int, readers, writers []string) []Violation {
	switch {
	case lock == LeaseLock:
		if len(writers) > leases {
			out = addViolation(out, Violation{Kind: "leases", Steps: []int{step}, Clients: writers,
				what: fmt.Sprintf("%d clients hold leases (%s), but there are only %d", len(writers), ListAnd(writers), leases)})
		}
	case len(writers) > 1:
		out = addViolation(out, Violation{Kind: "overlap", Steps: []int{step}, Clients: writers,
			what: fmt.Sprintf("%s hold the lock at once", ListAnd(writers))})
	case len(writers) == 1 && len(readers) > 0:
		cl := append(slices.Clone(writers), readers...)
		out = addViolation(out, Violation{Kind: "overlap", Steps: []int{step}, Clients: cl,
			what: fmt.Sprintf("writer %s and reader %s hold the lock at once", writers[0], ListAnd(readers))})
	}
	return out
}

// unfencedWrite is the violation of a write the resource accepted from c,
// who did not hold the lock, while holders did.
func unfencedWrite(e Event, c ClientInfo, holders []string, fencing bool, lost string, token func(int64) string) Violation {
	steps := []int{e.Step}
	why := fmt.Sprintf("%s no longer held the lock", e.Client)
	if c.State == StateStale {
		steps = []int{c.Since, e.Step}
		why = fmt.Sprintf("%s's %s at step %d", e.Client, lost, c.Since)
	}
	if len(holders) > 0 {
		why += fmt.Sprintf(" and %s held it", ListAnd(holders))
	}
	return Violation{Kind: "unfenced-write", Steps: steps, Clients: append([]string{e.Client}, holders...),
		Message: fmt.Sprintf("step %d: the protected resource accepted a write from %s with token %s, but %s: two clients acted as the lock holder (%s)",
			e.Step, e.Client, token(e.Token), why, fencingWhy(fencing, token(e.Token), holders))}
}

// fencingWhy says why the resource let a stale write through.
func fencingWhy(fencing bool, token string, holders []string) string {
	if !fencing {
		return "fencing is off: the resource checks nothing"
	}
	newer := "nobody with a newer token had written yet"
	if len(holders) > 0 {
		newer = fmt.Sprintf("%s had not written yet", ListAnd(holders))
	}
	return fmt.Sprintf("fencing is on, but the resource had not yet seen a token newer than %s (%s), so it could not tell this one was stale",
		token, newer)
}

// addViolation records a holding violation, merging it into the latest one
// of its kind when the same clients go on overlapping the same way in the
// next step. Unfenced writes in between do not break a run of steps.
func addViolation(vs []Violation, v Violation) []Violation {
	for i := len(vs) - 1; i >= 0; i-- {
		last := &vs[i]
		if last.Kind == "unfenced-write" {
			continue
		}
		if last.Kind == v.Kind && last.what == v.what && slices.Equal(last.Clients, v.Clients) && last.Steps[len(last.Steps)-1] == v.Steps[0]-1 {
			last.Steps = append(last.Steps, v.Steps[0])
			last.Message = fmt.Sprintf("steps %s: %s", stepRange(last.Steps), last.what)
			return vs
		}
		break
	}
	v.Message = fmt.Sprintf("step %d: %s", v.Steps[0], v.what)
	return append(vs, v)
}

func stepRange(steps []int) string {
	if len(steps) == 1 {
		return fmt.Sprint(steps[0])
	}
	return fmt.Sprintf("%d–%d", steps[0], steps[len(steps)-1])
}

// ListAnd writes "A", "A and B", "A, B and C".
func ListAnd(xs []string) string {
	switch len(xs) {
	case 0:
		return "nobody"
	case 1:
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

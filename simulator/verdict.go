package simulator

import "fmt"

// Verdict is a run's outcome in two words a learner can compare across
// services (scenario 12 puts every service side by side): whether mutual
// exclusion held, and what became of a write made by a holder that had
// lost the lock. It is derived from the checker's violations and the
// run's stats only, so every service's verdict means the same thing.
type Verdict struct {
	// Exclusion is "held" or "broken" (the checker found two clients
	// acting as the holder: an overlap, too many leases, or a stale write
	// the resource accepted).
	Exclusion string `json:"exclusion"`
	// BrokenMs is how long the longest violation lasted on the run's
	// clock (Violation.ForMs); 0 when exclusion held.
	BrokenMs int64 `json:"brokenMs,omitempty"`
	// StaleWrite is "accepted" (an unfenced-write violation), "fenced"
	// (the resource or the server refused at least one write: Stats.Fenced),
	// "server-refused" (every refused write was refused by the lock's own
	// server, not by a fencing check: Stats.ServerRefused),
	// "no-token" (every write refused carried no token: fencing had nothing
	// to check) or "none" (no client wrote after losing the lock).
	StaleWrite string `json:"staleWrite"`
	// Summary says both in a sentence.
	Summary string `json:"summary"`
}

// The verdict's words.
const (
	ExclusionHeld   = "held"
	ExclusionBroken = "broken"
	StaleAccepted   = "accepted"
	StaleFenced     = "fenced"
	StaleNone       = "none"
	// StaleNoToken: every refused write carried no token. The recipe
	// gives none, so fencing cannot tell the holder from a stale client:
	// the resource refused the rightful holder's writes too. Kleppmann's
	// point is that fencing needs a token; it is not a catch.
	StaleNoToken = "no-token"
	// StaleRefusedByServer: every refused write was refused by the lock's
	// own server (the transaction that held a PostgreSQL row lock had been
	// ended), with fencing off: no token was checked.
	StaleRefusedByServer = "server-refused"
)

// VerdictOf judges a run from its violations and stats. A stale write
// that was both refused once and accepted once is "accepted": one
// accepted write is enough to corrupt the resource.
func VerdictOf(vs []Violation, s Stats) Verdict {
	v := Verdict{Exclusion: ExclusionHeld, StaleWrite: StaleNone}
	for _, x := range vs {
		v.Exclusion = ExclusionBroken
		v.BrokenMs = max(v.BrokenMs, x.ForMs)
		if x.Kind == "unfenced-write" {
			v.StaleWrite = StaleAccepted
		}
	}
	if v.StaleWrite == StaleNone && s.Fenced > 0 {
		v.StaleWrite = StaleFenced
		switch {
		case s.ServerRefused > 0 && s.ServerRefused+s.Tokenless == s.Fenced:
			v.StaleWrite = StaleRefusedByServer
		case s.Tokenless == s.Fenced:
			v.StaleWrite = StaleNoToken
		}
	}
	excl := "mutual exclusion held"
	if v.Exclusion == ExclusionBroken {
		excl = "mutual exclusion broken"
		if v.BrokenMs > 0 {
			excl += fmt.Sprintf(" for %.1fs", float64(v.BrokenMs)/1000)
		}
	}
	switch v.StaleWrite {
	case StaleAccepted:
		v.Summary = excl + "; the resource accepted the stale write"
	case StaleFenced:
		v.Summary = excl + "; fencing caught the stale write"
	case StaleRefusedByServer:
		v.Summary = excl + "; the server refused the stale write: the transaction that held the lock had been ended, and the write went through it (no fencing token was checked)"
	case StaleNoToken:
		v.Summary = excl + "; fencing could not work: the recipe gives no token, so the resource refused every write, the rightful holder's too"
	default:
		v.Summary = excl + "; no stale write happened"
	}
	return v
}

// Meters are the numbers shown under every pane of scenario 12, the same
// for every service: what the server was asked, what woke the waiters and
// how long a hand-off took.
type Meters struct {
	// Requests is what the server was asked for this lock; RequestsFrom
	// says who counted them (the server itself, or the classroom's
	// clients when the server keeps no per-lock count).
	Requests     int    `json:"requests"`
	RequestsFrom string `json:"requestsFrom"`
	// PerSec is Requests over the real time from the run's start to its
	// latest event (waiters that poll keep asking between steps too).
	PerSec        float64 `json:"perSec"`
	Notifications int     `json:"notifications"`
	// HandoffMs is the latest hand-off's real time from the release or
	// expiry to the next client's lock; -1 before the first hand-off.
	HandoffMs int64 `json:"handoffMs"`
}

// MetersOf reads a run's meters from its events (in order) and stats;
// requests are the service's (RunWords.Requests), nil for the neutral ones.
func MetersOf(requests func(Stats) (int, string), events []Event, s Stats) Meters {
	m := Meters{Notifications: s.Notifications, HandoffMs: -1}
	if requests == nil {
		requests = NeutralRunWords().Requests
	}
	m.Requests, m.RequestsFrom = requests(s)
	var lastMs, freedAt int64 = 0, -1
	for _, e := range events {
		lastMs = max(lastMs, e.AtMs)
		switch e.Event {
		case EvUnlock, EvExpire:
			freedAt = e.AtMs
		case EvLock:
			if freedAt >= 0 {
				m.HandoffMs, freedAt = e.AtMs-freedAt, -1
			}
		}
	}
	if lastMs > 0 {
		m.PerSec = float64(m.Requests) / (float64(lastMs) / 1000)
	}
	return m
}

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
	// (the resource or the server refused at least one write: Stats.Fenced)
	// or "none" (no client wrote after losing the lock).
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
	default:
		v.Summary = excl + "; no stale write happened"
	}
	return v
}

package lab

import "fmt"

// Summary is the report in one sentence: what the lock let happen.
func (r Report) Summary() string {
	return fmt.Sprintf("%d two-believer moments, %d lost updates, %d writes refused for a stale token (%d acquisitions, %d writes taken)",
		len(r.Overlaps), r.LostUpdates, r.Refused, r.Acquisitions, r.Acknowledged)
}

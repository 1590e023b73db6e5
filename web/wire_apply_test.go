package web

import (
	"encoding/json"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/web/wiretest"
)

// ApplyDelta patches prev with d as a client does, by d's JSON alone
// (wiretest.ApplyDelta, which live.js's applyDelta follows step by step).
func ApplyDelta(prev lockqueue.Snapshot, d *Delta) (lockqueue.Snapshot, error) {
	b, err := json.Marshal(d)
	if err != nil {
		return prev, err
	}
	return wiretest.ApplyDelta(prev, b)
}

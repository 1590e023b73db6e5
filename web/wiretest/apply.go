// Package wiretest is a client of the websocket's frames, for tests: it
// patches a snapshot with a delta frame the way live.js's applyDelta does,
// by the frame's JSON alone, naming none of the snapshot's fields. Only
// tests import it, so the binary does not link it.
package wiretest

import (
	"encoding/json"
	"fmt"
	"maps"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// delta is a delta frame as a client reads it (web.Delta's JSON).
type delta struct {
	Base    int64                      `json:"base"`
	Header  map[string]json.RawMessage `json:"header"`
	Cleared []string                   `json:"cleared"`
	Upsert  []lockqueue.Node           `json:"upsert"`
	At      []int                      `json:"at"`
	Remove  []string                   `json:"remove"`
}

// ApplyDelta patches prev with frame, a delta frame's JSON: the header's
// members over prev's fields, less the cleared ones, then the nodes: the
// removed and upserted names dropped, each upsert put at its position. It
// fails when the frame was computed against another snapshot: the client
// has missed a frame and should reconnect for a fresh snapshot.
func ApplyDelta(prev lockqueue.Snapshot, frame []byte) (lockqueue.Snapshot, error) {
	var d delta
	if err := json.Unmarshal(frame, &d); err != nil {
		return prev, fmt.Errorf("delta for %s: %w", prev.Key(), err)
	}
	if d.Base != prev.Revision {
		return prev, fmt.Errorf("delta for %s@%d does not apply to revision %d", prev.Key(), d.Base, prev.Revision)
	}
	if len(d.At) != len(d.Upsert) {
		return prev, fmt.Errorf("delta for %s@%d: %d positions for %d upserts", prev.Key(), d.Base, len(d.At), len(d.Upsert))
	}
	next, err := applyHeader(prev, d)
	if err != nil {
		return prev, err
	}
	if next.Key() != prev.Key() {
		return prev, fmt.Errorf("delta for %s@%d turns it into another lock, %s", prev.Key(), d.Base, next.Key())
	}
	drop := make(map[string]bool, len(d.Remove)+len(d.Upsert))
	for _, name := range d.Remove {
		drop[name] = true
	}
	for _, n := range d.Upsert {
		drop[n.Name] = true
	}
	kept := make([]lockqueue.Node, 0, len(prev.Nodes))
	for _, n := range prev.Nodes {
		if !drop[n.Name] {
			kept = append(kept, n)
		}
	}
	nodes := make([]lockqueue.Node, 0, len(kept)+len(d.Upsert))
	for i, n := range d.Upsert {
		at := d.At[i]
		if at < len(nodes) || at > len(nodes)+len(kept) {
			return prev, fmt.Errorf("delta for %s@%d: upsert %s at %d is out of place", prev.Key(), d.Base, n.Name, at)
		}
		take := at - len(nodes)
		nodes = append(append(nodes, kept[:take]...), n)
		kept = kept[take:]
	}
	next.Nodes = append(nodes, kept...)
	return next, nil
}

// applyHeader is prev's fields, all but its nodes, patched by d's header
// and cleared keys, by their JSON.
func applyHeader(prev lockqueue.Snapshot, d delta) (lockqueue.Snapshot, error) {
	prev.Nodes = nil
	b, err := json.Marshal(prev)
	if err != nil {
		return prev, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return prev, err
	}
	maps.Copy(fields, d.Header)
	for _, k := range d.Cleared {
		delete(fields, k)
	}
	if b, err = json.Marshal(fields); err != nil {
		return prev, err
	}
	var next lockqueue.Snapshot
	if err := json.Unmarshal(b, &next); err != nil {
		return prev, fmt.Errorf("delta for %s@%d: header: %w", prev.Key(), d.Base, err)
	}
	return next, nil
}

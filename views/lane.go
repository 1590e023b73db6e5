package views

import "github.com/zklockviz/zklockviz/lockqueue"

// LaneWords are the words static/queue.js draws the lane with, rendered into
// every page (layout, #lane-words) so that the browser words nothing of its
// own: the lane's labels are the table's and the detail pane's.
type LaneWords struct {
	// Modes lists each mode's label in the legend's order.
	Modes []ModeWord `json:"modes"`
	// Stalled is a stalled holder's state; PartOf, followed by a node's
	// name, the state of a node that is another node's contender too.
	Stalled string `json:"stalled"`
	PartOf  string `json:"partOf"`
	// Provenance words who vouches for a waits-for edge, by
	// lockqueue.Provenance.
	Provenance map[lockqueue.Provenance]string `json:"provenance"`
	// Missing follows the lock's name when it does not exist; Unknown
	// when the snapshot is not live, whatever it shows (never "free").
	Missing string `json:"missing"`
	Unknown string `json:"unknown"`
}

// ModeWord is one mode's label.
type ModeWord struct {
	Mode  lockqueue.Mode `json:"mode"`
	Label string         `json:"label"`
}

// legendModes is the order the legend lists the modes in.
var legendModes = []lockqueue.Mode{lockqueue.Read, lockqueue.Write, lockqueue.Exclusive, lockqueue.Lease, lockqueue.Unknown}

// Words are the lane's words.
func Words() LaneWords {
	w := LaneWords{
		Stalled: Stalled, PartOf: partOfPrefix, Missing: "  (does not exist)", Unknown: "  (unknown: the last known state, not live)",
		Provenance: map[lockqueue.Provenance]string{lockqueue.ByRule: Provenance(lockqueue.ByRule), lockqueue.ByServer: Provenance(lockqueue.ByServer)},
	}
	for _, m := range legendModes {
		w.Modes = append(w.Modes, ModeWord{Mode: m, Label: ModeLabel(m)})
	}
	return w
}

// NamedNode is a node's name and sequence, as a lane asks for its label.
type NamedNode struct {
	Name string `json:"name"`
	Seq  int64  `json:"seq"`
}

// maxLaneNames bounds the names one request may ask for: a lane draws at
// most a few hundred nodes.
const maxLaneNames = 2000

// LaneNames are the lane's name labels (ShortName) of nodes, by name; of
// at most maxLaneNames.
func LaneNames(nodes []NamedNode) map[string]string {
	out := make(map[string]string, len(nodes))
	for _, n := range nodes[:min(len(nodes), maxLaneNames)] {
		out[n.Name] = ShortName(n.Name, n.Seq)
	}
	return out
}

package views

import (
	"fmt"
	"slices"
	"strings"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/lockservice"
)

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
	// Legend is the legend of the page's lock's service (Service.Legend):
	// only the shapes and arrows its locks can show, in its own terms.
	Legend []LegendItem `json:"legend"`
	// Legends are the legends of several services' locks on one page
	// (the classroom), by service name, the default service's also by ""
	// (a run names no service on the wire: lockqueue.WireService).
	Legends map[string][]LegendItem `json:"legends,omitempty"`
	// Say are the lane's titles and labels (lanePhrases), and the page's
	// own sentences (Phrases).
	Say map[string]string `json:"say"`
}

// LegendItem is one entry of the lane's legend (lockservice.LegendItem).
type LegendItem = lockservice.LegendItem

// Legend is the service's legend as the lane draws it: its words' items,
// each mode labelled as the table labels it.
func (s Service) Legend() []LegendItem {
	out := make([]LegendItem, 0, len(s.Words.Legend))
	for _, it := range s.Words.Legend {
		if it.Swatch == "mode" && it.Label == "" {
			it.Label = ModeLabel(lockqueue.Mode(it.Key))
		}
		out = append(out, it)
	}
	return out
}

// ModeWord is one mode's label, and the letter the lane's shape of it
// carries.
type ModeWord struct {
	Mode   lockqueue.Mode `json:"mode"`
	Label  string         `json:"label"`
	Letter string         `json:"letter"`
}

// Words are the lane's words, with legend the legend of the page's
// service.
func Words(legend []LegendItem) LaneWords {
	w := LaneWords{
		Stalled: Stalled, PartOf: partOfPrefix,
		Provenance: map[lockqueue.Provenance]string{lockqueue.ByRule: Provenance(lockqueue.ByRule), lockqueue.ByServer: Provenance(lockqueue.ByServer)},
		Legend:     legend, Say: lanePhrases, Modes: slices.Clone(modeWords),
	}
	return w
}

// LaneWords are the page's lane words: its service's legend, or its
// services' (Legends), and the phrases of its kind of page (Phrases).
func (p Page) LaneWords() LaneWords {
	w := Words(p.Legend)
	w.Legends = p.Legends
	w.Say = Phrases(p.Active)
	return w
}

// A lane of more than LaneAllUpTo nodes is folded: it draws its first and
// last LaneEnds nodes, the page of the table the viewer reads, the selected
// node, and from the middle at most LaneMaxExtra holders, zombies and
// alerted nodes; the rest are "…" groups with their counts. web/window.go
// picks the nodes and sends only those (with a window that says where they
// are); the browser draws what it is sent.
const (
	LaneAllUpTo  = 2*LaneEnds + 20
	LaneEnds     = 50
	LaneMaxExtra = 200
)

// FoldNote says, under a folded lane, what is drawn of a queue of total
// nodes: the table's page [from, to), drawn nodes in all, extra of them
// from the middle (capped: more were left folded).
func FoldNote(total, from, to, drawn, extra int, capped bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Showing nodes %s–%s of %s (the table's page; pick a “…” group or a page to show others), with the holders. ",
		thousands(from+1), thousands(to), thousands(total))
	fmt.Fprintf(&b, "%s of %s nodes are folded into “…” groups. ", thousands(total-drawn), thousands(total))
	fmt.Fprintf(&b, "Drawn: the first %d and the last %d, the table's page, and from the middle %d %s, zombies, selected or alerted nodes",
		LaneEnds, LaneEnds, extra, plural(extra, "holder", "holders"))
	if capped {
		fmt.Fprintf(&b, " (at most %d: more are folded)", LaneMaxExtra)
	}
	fmt.Fprintf(&b, ". An alert names at most %d nodes, so nodes past that are not marked. The table below lists every node.", lockqueue.MaxAlertNames)
	return b.String()
}

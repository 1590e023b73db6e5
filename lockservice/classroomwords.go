package lockservice

import (
	"cmp"
	"maps"
	"slices"
)

// ClassroomWords are what the classroom page says about one service's runs:
// each service's classroom supplies its own (ClassroomWorder), so the
// browser looks them up by the run's service and holds no branch on a
// service's name. Fields left empty take NeutralClassroomWords'.
type ClassroomWords struct {
	// Title is the service as people say it ("ZooKeeper"), for the status
	// line; the registry fills it from Service.Title.
	Title string `json:"title"`
	// Hint is the client pane's prompt while nothing is selected.
	Hint string `json:"hint"`
	// Actions are the act buttons' help by action (release, crash, pause).
	Actions map[string]string `json:"actions"`
	// Meters are the bars under a run: what its clients sent, counted per
	// simulator.Stats field.
	Meters []Meter `json:"meters"`
	// PairsScale scales the bars to N(N−1)/2, the waiters' wake-ups when
	// each release wakes every remaining waiter, and shows the last
	// release's figures (ZooKeeper's herd); otherwise each bar is scaled to
	// the largest run on the page and the servers' own view follows.
	PairsScale bool `json:"pairsScale"`
	// NodeLines says the client pane shows the client's node itself
	// (session, node, mode, data, watches: ZooKeeper's znodes); otherwise
	// the server describes it below the client (views.NodeDetails).
	NodeLines bool `json:"nodeLines"`
	// LegendAllModes shows every mode the service's recipes take in the
	// legend, whatever the scenario's kind of lock.
	LegendAllModes bool `json:"legendAllModes"`
	// Strategies title a run by its watch strategy (herd, predecessor…);
	// a service whose waiters choose none leaves it empty.
	Strategies map[string]string `json:"strategies,omitempty"`
	// Panes are the service's panes of scenario 12 (SideBySide).
	Panes []SidePane `json:"-"`
	// Say are the service's own phrases, by the key the views of a run's
	// card say them by (say in views/runmeters.go): a sentence about what
	// only its servers hold (Redis's masters), or one of the card's worded
	// in its terms.
	Say map[string]string `json:"say,omitempty"`
}

// Meter is one bar under a run.
type Meter struct {
	// Key names the bar and the simulator.Stats field it shows; Sum, when
	// set, are the fields added up instead.
	Key   string   `json:"key"`
	Sum   []string `json:"sum,omitempty"`
	Label string   `json:"label"`
	Help  string   `json:"help"`
	// Good marks the bar as the cheap kind always; GoodAtZero only while
	// it reads 0.
	Good       bool `json:"good,omitempty"`
	GoodAtZero bool `json:"goodAtZero,omitempty"`
}

// WritesMeter counts the clients' writes to the protected resource, which
// every service's scenarios make alike.
var WritesMeter = Meter{Key: "writes", Label: "writes", Help: "writes to the protected resource"}

// ClassroomWorder is a Classroom that supplies its service's words.
type ClassroomWorder interface {
	ClassroomWords() ClassroomWords
}

// NeutralClassroomWords are the words of a service that says nothing of
// its own: a client is described by the server, as a lock service's
// clients are whatever their recipe.
func NeutralClassroomWords() ClassroomWords {
	return ClassroomWords{
		Hint: "Click a client or a node to see it as the server does, and to release, crash or pause it.",
		Actions: map[string]string{
			"release": "release the lock: it passes on",
			"crash":   "kill the client without a release",
			"pause":   "stop the client (a GC pause): it does nothing until it wakes",
		},
	}
}

// withNeutral fills what w leaves empty with the neutral words.
func (w ClassroomWords) withNeutral() ClassroomWords {
	n := NeutralClassroomWords()
	w.Hint = cmp.Or(w.Hint, n.Hint)
	acts := maps.Clone(n.Actions)
	maps.Copy(acts, w.Actions)
	w.Actions = acts
	if w.Meters == nil {
		w.Meters = []Meter{}
	}
	return w
}

// ClassroomsWords are every registered service's classroom words, as the
// classroom page renders them (#service-words).
type ClassroomsWords struct {
	// Default is the service a run that names none is on (Lookup("")):
	// the classroom API leaves that name out.
	Default  string                    `json:"default"`
	Services map[string]ClassroomWords `json:"services"`
	// Side is scenario 12, listed when some service has a pane of it.
	Side ScenarioWords `json:"side"`
}

// ClassroomWords are the registered services' classroom words by name.
func (r *Registry) ClassroomWords() ClassroomsWords {
	out := ClassroomsWords{Services: map[string]ClassroomWords{}, Side: SideBySide}
	if def, err := r.Lookup(""); err == nil {
		out.Default = def.Name
	}
	for _, s := range r.All() {
		var w ClassroomWords
		if cw, ok := s.Classroom.(ClassroomWorder); ok {
			w = cw.ClassroomWords()
		}
		w.Title = cmp.Or(s.Title, w.Title, s.Name)
		out.Services[s.Name] = w.withNeutral()
	}
	return out
}

// SidePanes are the panes of scenario 12 that ws supply, in the order they
// are shown (SidePane.Order).
func SidePanes(ws ...ClassroomWords) []SidePane {
	var panes []SidePane
	for _, w := range ws {
		panes = append(panes, w.Panes...)
	}
	slices.SortStableFunc(panes, func(a, b SidePane) int { return cmp.Compare(a.Order, b.Order) })
	return panes
}

// SideBySide lists scenario 12's panes of the registered classrooms, in the
// order they are shown: the classroom's panes read it.
func (r *Registry) SideBySide() []SidePane {
	var ws []ClassroomWords
	for _, s := range r.All() {
		if cw, ok := s.Classroom.(ClassroomWorder); ok {
			ws = append(ws, cw.ClassroomWords())
		}
	}
	return SidePanes(ws...)
}

package simulator

import (
	"io"

	"github.com/zklockviz/zklockviz/lockservice"
)

// NewClassroom adapts a Manager, whatever its backend, to the lock-service
// seam: each service's package registers it as its Classroom.
func NewClassroom(m *Manager) lockservice.Classroom { return classroom{m} }

type classroom struct{ m *Manager }

func (c classroom) Scenarios() any    { return c.m.Scenarios() }
func (c classroom) Actions() []string { return c.m.Actions() }

// Warm warms the backend's server when the backend has one that is slow to
// start (lockservice.Warmer).
func (c classroom) Warm() {
	if w, ok := c.m.backend.(lockservice.Warmer); ok {
		w.Warm()
	}
}

// Start decodes a Spec and starts its run.
func (c classroom) Start(decode func(any) error) (lockservice.Run, error) {
	var spec Spec
	if err := decode(&spec); err != nil {
		return nil, err
	}
	r, err := c.m.Start(spec)
	if err != nil {
		return nil, err
	}
	return seamRun{r}, nil
}

func (c classroom) Get(id string) (lockservice.Run, bool) {
	r, ok := c.m.Get(id)
	if !ok {
		return nil, false
	}
	return seamRun{r}, true
}

func (c classroom) Runs() []lockservice.Run {
	rs := c.m.Runs()
	out := make([]lockservice.Run, len(rs))
	for i, r := range rs {
		out[i] = seamRun{r}
	}
	return out
}

func (c classroom) Delete(id string) error { return c.m.Delete(id) }

// ScenarioCheck is a scenario the classroom's editor sent, checked: how
// the classroom lists it, and its definition to start (Spec.Definition).
type ScenarioCheck struct {
	Scenario   ScenarioInfo `json:"scenario"`
	Definition *Scenario    `json:"definition"`
}

// CheckScenario checks a scenario file's bytes as the command line does
// (Manager.CheckScenario), for the classroom's editor.
func (c classroom) CheckScenario(b []byte) (any, error) {
	info, sc, err := c.m.CheckScenario(b)
	if err != nil {
		return nil, err
	}
	return ScenarioCheck{info, sc}, nil
}

// Definition is a built-in scenario as its file says it, for the editor.
func (c classroom) Definition(name string) (any, bool) {
	sc, ok := c.m.Definition(name)
	return sc, ok
}

// seamRun is a Run whose State and Subscribe speak lockservice.
type seamRun struct{ *Run }

func (r seamRun) State() any { return r.Run.State() }

// StateAt is Run.StateAt in the seam's terms (web's predict-then-reveal).
func (r seamRun) StateAt(k int) (any, bool) { return r.Run.StateAt(k) }

func (r seamRun) Subscribe() (lockservice.Subscription, error) {
	s, err := r.Run.Subscribe()
	if err != nil {
		return nil, err
	}
	return seamSubscription{s}, nil
}

// TimeSpaceSVG draws the run's recorded history (lockservice.Drawer).
func (r seamRun) TimeSpaceSVG(w io.Writer) error { return WriteSVG(w, r.Run.Report()) }

var _ lockservice.Drawer = seamRun{}

type seamSubscription struct{ *Subscription }

func (s seamSubscription) State() any { return s.Subscription.State() }

// ClassroomWords are the backend's words for the classroom page
// (lockservice.ClassroomWorder); a backend with none says nothing of its
// own, and the neutral words stand.
func (c classroom) ClassroomWords() lockservice.ClassroomWords {
	if w, ok := c.m.backend.(lockservice.ClassroomWorder); ok {
		return w.ClassroomWords()
	}
	return lockservice.ClassroomWords{}
}

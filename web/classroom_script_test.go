package web

import (
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/simulator"
)

// A what-if (an act off the script) keeps the script: the run says it is
// on a branch, from which step and how many of the script's steps remain,
// and POST /script goes back to that step and plays the script on, on a
// real ZooKeeper.
func TestClassroomWhatIfKeepsTheScript(t *testing.T) {
	m := newSim(t, simulator.ManagerConfig{})
	e := newEnv(t, Config{Services: zkRegistry(nil, m)})
	api := apiClient{t: t, url: e.ts.URL + "/api/v1/sim", owners: &ownerJar{}}

	var s simulator.State
	api.do("POST", "/runs", map[string]any{"scenario": "lock1-5", "strategy": "predecessor"}, 201, &s)
	run := "/runs/" + s.ID
	for range 3 {
		api.do("POST", run+"/step", nil, 200, &s)
	}
	if s.Branch != nil {
		t.Fatalf("on the script: branch %+v, want none", s.Branch)
	}
	if msg := api.errorOf("POST", run+"/script", nil, 409); !strings.Contains(msg, "follows its script") {
		t.Errorf("back to the script while on it: %q", msg)
	}
	scriptPath := s.Path

	// A write by the holder at step 3 leaves the script, which still fits
	// after it: the branch plays the script's seven remaining steps on.
	api.do("POST", run+"/act", map[string]string{"client": "LOCK1", "action": "write"}, 200, &s)
	if want := (simulator.Branch{From: 3, Script: 10, Left: 7, Kept: true}); s.Branch == nil || *s.Branch != want || s.Planned != 11 {
		t.Fatalf("after a write: branch %+v, want %+v; planned %d, want 11", s.Branch, want, s.Planned)
	}
	// A writer added next queues behind LOCK3: the script's readers would
	// then wait behind it, so its remaining steps no longer fit after the
	// act. The branch ends with the act, and says so; it still left the
	// script at step 3.
	api.do("POST", run+"/act", map[string]string{"action": "add-writer"}, 200, &s)
	if s.Step != 5 || s.Planned != 5 || !s.Done || clientNamed(s, "LOCK6").Name == "" {
		t.Fatalf("after the added writer: step %d, planned %d, done %v, clients %+v", s.Step, s.Planned, s.Done, s.Clients)
	}
	if want := (simulator.Branch{From: 3, Script: 10, Left: 7, Kept: false}); s.Branch == nil || *s.Branch != want {
		t.Fatalf("after the added writer: branch %+v, want %+v", s.Branch, want)
	}
	if msg := api.errorOf("POST", run+"/step", nil, 409); !strings.Contains(msg, "no more steps") {
		t.Errorf("a step at the branch's end: %q", msg)
	}
	// Acting earlier in the branch moves its start: the plan is the
	// script's up to there.
	api.do("POST", run+"/seek", map[string]any{"step": 2}, 200, &s)
	api.do("POST", run+"/act", map[string]string{"client": "LOCK1", "action": "write"}, 200, &s)
	if s.Branch == nil || s.Branch.From != 2 || s.Branch.Left != 8 {
		t.Fatalf("a what-if earlier: branch %+v, want one from step 2 with 8 steps left", s.Branch)
	}
	var got simulator.State
	api.do("GET", run, nil, 200, &got)
	if got.Branch == nil || got.Branch.From != 2 {
		t.Errorf("GET the run: branch %+v", got.Branch)
	}

	// Back to the script: the step the branch left it at, on a fresh
	// lock, with the script's own next step and no trace of the branch.
	api.do("POST", run+"/script", nil, 200, &s)
	if s.Branch != nil || s.Step != 2 || s.Steps != 2 || s.Planned != 10 || s.Done {
		t.Fatalf("back to the script: branch %+v, step %d of %d, planned %d, done %v", s.Branch, s.Step, s.Steps, s.Planned, s.Done)
	}
	if s.Path == scriptPath || len(s.Snapshot.Nodes) != 2 || clientNamed(s, "LOCK6").Name != "" {
		t.Errorf("back to the script: path %s (the script's was %s), nodes %v, clients %+v", s.Path, scriptPath, s.Snapshot.Nodes, s.Clients)
	}
	if s.Next == nil || s.Next.Client != "LOCK3" || s.Next.Action != simulator.ActAddWriter {
		t.Errorf("back to the script: next %+v, want LOCK3 add-writer", s.Next)
	}
	for k := 3; k <= 10; k++ {
		api.do("POST", run+"/step", nil, 200, &s)
		if k == 8 {
			if h := s.Snapshot.Holders(); len(h) != 2 || clientNamed(s, "LOCK4").State != "holding" || clientNamed(s, "LOCK5").State != "holding" {
				t.Errorf("step 8 of the script: holders %v, clients %+v", h, s.Clients)
			}
		}
	}
	if !s.Done || s.Step != 10 || len(s.Violations) != 0 || len(s.Snapshot.Nodes) != 0 {
		t.Errorf("the script played to its end: done %v, step %d, violations %v, nodes %v", s.Done, s.Step, s.Violations, s.Snapshot.Nodes)
	}
	if msg := api.errorOf("POST", run+"/script", nil, 409); !strings.Contains(msg, "follows its script") {
		t.Errorf("back to the script twice: %q", msg)
	}
}

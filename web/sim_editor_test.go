package web

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/simulator"
	"github.com/zklockviz/zklockviz/zookeeper/zksim"
)

// TestClassroomScenarioEditor: the editor starts from a built-in's
// definition, and a scenario it sends is checked as `zklockviz sim
// --scenario FILE` checks the same file: the same refusal, word for word,
// and a scenario that passes starts as a run.
func TestClassroomScenarioEditor(t *testing.T) {
	m := newSim(t, simulator.ManagerConfig{})
	e := newEnv(t, Config{Services: zkRegistry(nil, m)})
	api := apiClient{t: t, url: e.ts.URL + "/api/v1/sim", owners: &ownerJar{}}

	var def simulator.Scenario
	api.do("GET", "/scenarios/lock1-5", nil, 200, &def)
	if def.Name != "lock1-5" || def.Lock != simulator.RW || len(def.Steps) != 10 {
		t.Fatalf("lock1-5's definition: %+v", def)
	}
	if msg := api.errorOf("GET", "/scenarios/nope", nil, 404); !strings.Contains(msg, `no built-in scenario "nope"`) {
		t.Errorf("an unknown scenario: %q", msg)
	}

	check := func(body string, want int) (simulator.ScenarioCheck, string) {
		t.Helper()
		code, _, b := do(t, "POST", api.url+"/scenarios/check", body, nil)
		if code != want {
			t.Fatalf("check %.80s: %d %s, want %d", body, code, b, want)
		}
		var out simulator.ScenarioCheck
		var e struct{ Error string }
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		json.Unmarshal(b, &e)
		return out, e.Error
	}

	// The built-in, edited: one client fewer.
	def.Steps = def.Steps[:len(def.Steps)-1]
	def.Steps = append(def.Steps[:4], def.Steps[5:]...)
	def.Name, def.Title = "lock1-4", "four clients"
	edited, _ := json.Marshal(def)
	got, _ := check(string(edited), 200)
	if got.Scenario.ID != "lock1-4" || got.Scenario.Steps != 8 || got.Definition == nil || len(got.Definition.Steps) != 8 {
		t.Fatalf("the edited scenario checked: %+v", got)
	}
	var st simulator.State
	api.do("POST", "/runs", map[string]any{"definition": got.Definition}, 201, &st)
	if st.Scenario != "lock1-4" || st.Planned != 8 {
		t.Errorf("the edited scenario's run: scenario %q, %d steps planned", st.Scenario, st.Planned)
	}
	api.do("DELETE", "/runs/"+st.ID, nil, 204, nil)

	for _, tc := range []struct {
		name, body string
		want       string
	}{
		{"empty", "", "the file is empty"},
		{"malformed", "{\n\"lock\": \"rw\",\n\"steps\": [}", "line 3"},
		{"unknown field", `{"lock":"rw","steps":[{"client":"A","action":"add-reader"}],"colour":"red"}`, `unknown field "colour"`},
		{"a reader in an exclusive lock", `{"lock":"exclusive","steps":[{"client":"A","action":"add-reader"}]}`, "add-reader"},
		{"another service's", `{"service":"redis","lock":"exclusive","steps":[{"client":"A","action":"add"}]}`, `service "redis"`},
		{"a release with no lock", `{"lock":"exclusive","steps":[{"client":"A","action":"add"},{"client":"B","action":"add"},{"client":"B","action":"release"}]}`,
			"step 3: release B: the plan gives B no lock to release at that step"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, msg := check(tc.body, http.StatusBadRequest)
			if !strings.Contains(msg, tc.want) {
				t.Errorf("refusal %q, want it to say %q", msg, tc.want)
			}
			// The command line reads the same file the same way (Parse), and
			// its run's start dry-runs the plan (PlanWith).
			sc, err := zksim.Catalog.Parse([]byte(tc.body))
			if err == nil {
				_, err = sc.PlanWith(0, func(p []simulator.Action) error { return (&zksim.Backend{}).DryRun(sc, p) })
			}
			if err == nil || err.Error() != msg {
				t.Errorf("the server says %q, the command line %v", msg, err)
			}
			if strings.Contains(msg, "waits for") {
				t.Errorf("refusal %q tells whom a client waits for", msg)
			}
		})
	}
	// A plan the file's format accepts but its dry run refuses is refused by
	// POST /runs too, with the same words.
	body := `{"lock":"exclusive","steps":[{"client":"A","action":"add"},{"client":"B","action":"add"},{"client":"B","action":"write"}]}`
	_, msg := check(body, 400)
	var sc simulator.Scenario
	json.Unmarshal([]byte(body), &sc)
	if run := api.errorOf("POST", "/runs", map[string]any{"definition": sc}, 400); run != msg {
		t.Errorf("POST /runs says %q, the check %q", run, msg)
	}
}

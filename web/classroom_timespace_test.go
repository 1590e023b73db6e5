package web

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/simulator"
	"github.com/zklockviz/zklockviz/simulator/timespacetest"
)

// TestClassroomTimeSpace: GET /api/v1/sim/runs/{id}/timespace.svg answers
// the run's recorded history as an SVG to download, drawn from the steps a
// real ZooKeeper run took; a run that does not exist is a 404 in JSON.
func TestClassroomTimeSpace(t *testing.T) {
	m := newSim(t, simulator.ManagerConfig{})
	e := newEnv(t, Config{Services: zkRegistry(nil, m)})
	api := apiClient{t: t, url: e.ts.URL + "/api/v1/sim", owners: &ownerJar{}}

	var s simulator.State
	api.do("POST", "/runs", map[string]any{"scenario": "gc-pause", "fencing": false}, 201, &s)
	for !s.Done {
		api.do("POST", "/runs/"+s.ID+"/step", nil, 200, &s)
	}
	// Scrubbed back, the diagram is still the whole recorded run.
	api.do("POST", "/runs/"+s.ID+"/seek", map[string]any{"step": 2}, 200, &s)

	res, err := http.Get(e.ts.URL + "/api/v1/sim/runs/" + s.ID + "/timespace.svg")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "image/svg+xml" {
		t.Fatalf("status %d, Content-Type %q: %s", res.StatusCode, res.Header.Get("Content-Type"), b)
	}
	if cd := res.Header.Get("Content-Disposition"); !strings.HasPrefix(cd, "attachment") || !strings.Contains(cd, s.ID) || !strings.HasSuffix(cd, `.svg"`) {
		t.Errorf("Content-Disposition %q: want an attachment named after run %s, .svg", cd, s.ID)
	}
	d, err := timespacetest.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.LanesOf("client"); !slices.Equal(got, []string{"LOCK1", "LOCK2"}) {
		t.Errorf("client lanes %v", got)
	}
	if len(d.LanesOf("server")) != 1 || len(d.LanesOf("resource")) != 1 {
		t.Errorf("lanes %v: want one server and one resource", d.Lanes)
	}
	if d.Marks["violation"] != 1 || d.Marks["expiry"] != 1 || d.Marks["unlock"] != 1 {
		t.Errorf("violations %d, expiries %d, releases %d: want the whole run's 1, 1, 1", d.Marks["violation"], d.Marks["expiry"], d.Marks["unlock"])
	}

	if msg := api.errorOf("GET", "/runs/nope/timespace.svg", nil, 404); !strings.Contains(msg, `no run "nope"`) {
		t.Errorf("unknown run: %q", msg)
	}
}

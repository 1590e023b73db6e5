package web

import (
	"testing"

	"github.com/zklockviz/zklockviz/lockservice"
	"github.com/zklockviz/zklockviz/simulator"
)

// Scenario 12's panes come from the API, and a pane's run is an ordinary
// run whose State carries its verdict and meters.
func TestClassroomSideBySideAPI(t *testing.T) {
	m := newSim(t, simulator.ManagerConfig{})
	e := newEnv(t, Config{Services: zkRegistry(nil, m)})
	api := apiClient{t: t, url: e.ts.URL + "/api/v1/sim"}

	var panes []lockservice.SidePane
	api.do("GET", "/side-by-side", nil, 200, &panes)
	if len(panes) != 5 || panes[0].Service != "zookeeper" || panes[0].Scenario != "zk-side-by-side" {
		t.Fatalf("panes %+v, want five, ZooKeeper's first", panes)
	}

	var st simulator.State
	api.do("POST", "/runs", map[string]any{"scenario": panes[0].Scenario}, 201, &st)
	if st.Verdict.Exclusion != simulator.ExclusionHeld || st.Verdict.StaleWrite != simulator.StaleNone || st.Meters.HandoffMs != -1 {
		t.Errorf("before the first step: verdict %+v, meters %+v; want held, no stale write, no hand-off yet", st.Verdict, st.Meters)
	}
	for !st.Done {
		api.do("POST", "/runs/"+st.ID+"/step", nil, 200, &st)
	}
	if st.Verdict.Exclusion != simulator.ExclusionHeld || st.Verdict.StaleWrite != simulator.StaleFenced {
		t.Errorf("verdict %+v, want held, the stale write fenced", st.Verdict)
	}
	if st.Meters.Requests == 0 || st.Meters.RequestsFrom == "" || st.Meters.Notifications == 0 || st.Meters.HandoffMs < 0 {
		t.Errorf("meters %+v: want requests and who counted them, notifications, a hand-off", st.Meters)
	}
}

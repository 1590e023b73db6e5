package web

import (
	"slices"
	"testing"

	"github.com/zklockviz/zklockviz/etcd/etcdlock"
	"github.com/zklockviz/zklockviz/lockservice"
	"github.com/zklockviz/zklockviz/postgres/pglock"
	"github.com/zklockviz/zklockviz/redis/redislock"
	"github.com/zklockviz/zklockviz/simulator"
)

// Scenario 12's panes come from the API, each registered classroom's own in
// the order they are shown (not the registry's, which is serve's), and a
// pane's run is an ordinary run whose State carries its verdict and meters.
func TestClassroomSideBySideAPI(t *testing.T) {
	m := newSim(t, simulator.ManagerConfig{})
	reg := zkRegistry(nil, m)
	for _, c := range []struct {
		svc lockservice.Service
		new func(simulator.ManagerConfig) (lockservice.Classroom, *simulator.Manager, error)
	}{
		{etcdlock.Service(nil), etcdlock.NewClassroom},
		{pglock.Service(nil), pglock.NewClassroom},
		{redislock.Service(nil, nil), func(cfg simulator.ManagerConfig) (lockservice.Classroom, *simulator.Manager, error) {
			return redislock.NewClassroomWith(cfg, nil)
		}},
	} {
		cls, cm, err := c.new(simulator.ManagerConfig{Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cm.Close() })
		c.svc.Classroom = cls
		if err := reg.Register(c.svc); err != nil {
			t.Fatal(err)
		}
	}
	e := newEnv(t, Config{Services: reg})
	api := apiClient{t: t, url: e.ts.URL + "/api/v1/sim", owners: &ownerJar{}}

	var panes []lockservice.SidePane
	api.do("GET", "/side-by-side", nil, 200, &panes)
	var got []string
	for _, p := range panes {
		got = append(got, p.Service+" "+p.Scenario)
	}
	want := []string{"zookeeper zk-side-by-side", "redis redis-side-by-side", "redis redis-token-side-by-side", "etcd etcd-side-by-side", "postgres pg-side-by-side"}
	if !slices.Equal(got, want) {
		t.Fatalf("panes %q, want %q", got, want)
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

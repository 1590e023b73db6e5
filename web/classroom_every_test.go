package web

import (
	"slices"
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/redis/redislock"
	"github.com/zklockviz/zklockviz/simulator"
)

// GET /api/v1/sim/scenarios?service=* lists every classroom's scenarios in
// one list, the registry's order, each naming its service (ZooKeeper's
// none), as the classroom page offers them; without it a request still
// answers one service's.
func TestClassroomEveryScenario(t *testing.T) {
	reg := zkRegistry(nil, newSim(t, simulator.ManagerConfig{}))
	cls, m, err := redislock.NewClassroomWith(simulator.ManagerConfig{Logger: testLogger(t)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	if err := reg.Register(redislock.Service(nil, cls)); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, Config{Services: reg})
	api := apiClient{t: t, url: e.ts.URL + "/api/v1/sim", owners: &ownerJar{}}

	var every, zk, redis []simulator.ScenarioInfo
	api.do("GET", "/scenarios?service=*", nil, 200, &every)
	api.do("GET", "/scenarios", nil, 200, &zk)
	api.do("GET", "/scenarios?service=redis", nil, 200, &redis)
	if len(zk) == 0 || len(redis) == 0 || len(every) != len(zk)+len(redis) {
		t.Fatalf("every service's scenarios: %d, want ZooKeeper's %d and Redis's %d", len(every), len(zk), len(redis))
	}
	var services []string
	for i, sc := range every {
		if i < len(zk) && (sc.ID != zk[i].ID || sc.Service != "") || i >= len(zk) && (sc.ID != redis[i-len(zk)].ID || sc.Service != "redis") {
			t.Errorf("scenario %d: %s of %q", i, sc.ID, sc.Service)
		}
		if !slices.Contains(services, sc.Service) {
			services = append(services, sc.Service)
		}
	}
	if strings.Join(services, ",") != ",redis" {
		t.Errorf("services in order: %q, want ZooKeeper's then Redis's", services)
	}
}

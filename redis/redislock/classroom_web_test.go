package redislock

import (
	"testing"

	"github.com/zklockviz/zklockviz/hub"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/simulator"
)

// TestClassroomThroughAPI: a Redis run over the classroom's HTTP API
// (?service=redis), its steps published to the hub under redis:<key>.
func TestClassroomThroughAPI(t *testing.T) {
	h := hub.New()
	api := newClassroomAPI(t, h, 0)
	call := func(method, path, body string, want int, out any) {
		t.Helper()
		api.Call(t, method, path, body, want, out)
	}
	var list []simulator.ScenarioInfo
	call("GET", "/api/v1/sim/scenarios?service=redis", "", 200, &list)
	if len(list) != len(Catalog.Names()) || list[1].ID != "redis-px-pause" || list[1].Service != "redis" || list[1].Unavailable != "" {
		t.Fatalf("scenarios %+v", list)
	}
	var st simulator.State
	call("POST", "/api/v1/sim/runs?service=redis", `{"scenario":"redis-px-pause"}`, 201, &st)
	call("POST", "/api/v1/sim/runs/"+st.ID+"/seek?service=redis", `{"step":9}`, 200, &st)
	if len(st.Violations) != 1 || st.Violations[0].Kind != "unfenced-write" || st.Violations[0].ForMs <= 0 {
		t.Errorf("violations at step 9: %+v, want C1's stale write with its duration", st.Violations)
	}
	snap, ok := h.Latest(lockqueue.LockID{Service: "redis", Name: st.Path}.Key())
	if !ok || snap.Service != "redis" || len(snap.Holders()) != 1 || snap.Holders()[0] != clientOf(t, st, "C2").Node {
		t.Errorf("hub's snapshot of %s: %+v (found %v), want C2's token holding", st.Path, snap, ok)
	}
	call("POST", "/api/v1/sim/runs/"+st.ID+"/act?service=redis", `{"client":"C1","action":"add-reader"}`, 400, nil)
	call("DELETE", "/api/v1/sim/runs/"+st.ID+"?service=redis", "", 204, nil)
	if _, ok := h.Latest(lockqueue.LockID{Service: "redis", Name: st.Path}.Key()); ok {
		t.Errorf("the hub still has the deleted run's lock")
	}
}

package etcdlock_test

import (
	"testing"

	"github.com/zklockviz/zklockviz/etcd/etcdlock"
	"github.com/zklockviz/zklockviz/hub"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/simulator"
	"github.com/zklockviz/zklockviz/simulator/simtest"
)

// TestClassroomThroughAPI: etcd runs over the classroom's HTTP API
// (?service=etcd), their steps published to the hub under etcd:<prefix>.
func TestClassroomThroughAPI(t *testing.T) {
	if err := (&etcdlock.Backend{}).Available(); err != nil {
		t.Skip(err)
	}
	h := hub.New()
	svc := classroomService(t, h, 0)
	api := simtest.Serve(t, svc, h)
	call := func(method, path, body string, want int, out any) {
		t.Helper()
		api.Call(t, method, path, body, want, out)
	}
	var list []simulator.ScenarioInfo
	call("GET", "/api/v1/sim/scenarios?service=etcd", "", 200, &list)
	if len(list) != len(etcdlock.Catalog.Names()) || list[0].ID != "etcd-mutex-queue" || list[1].ID != "etcd-lease-pause" || list[0].Service != "etcd" || list[0].Unavailable != "" {
		t.Fatalf("scenarios %+v", list)
	}

	// Scenario 8 at step 6: C3 has left from the middle; the hub's snapshot,
	// read from etcd, shows C4's key waiting on C2's.
	var st simulator.State
	call("POST", "/api/v1/sim/runs?service=etcd", `{"scenario":"etcd-mutex-queue"}`, 201, &st)
	call("POST", "/api/v1/sim/runs/"+st.ID+"/seek?service=etcd", `{"step":6}`, 200, &st)
	id := lockqueue.LockID{Service: etcdlock.Name, Name: st.Path}.Key()
	snap, ok := h.Latest(id)
	if !ok || snap.Service != etcdlock.Name || snap.Recipe != lockqueue.EtcdMutex {
		t.Fatalf("hub's snapshot of %s: %+v (found %v), want an etcd Mutex queue", st.Path, snap, ok)
	}
	if got := serverQueue(t, st); got != "C1 C2>C1 C4>C2" {
		t.Errorf("queue after C3 left: %q, want C1 C2>C1 C4>C2", got)
	}
	for _, n := range snap.Nodes {
		if n.LeaseID() == "" || n.LeaseTTLMs() != 5000 || n.Order() == 0 {
			t.Errorf("node %s: lease %q ttl %d ms, create revision %d: want its lease and 5 s TTL, and its revision", n.Name, n.LeaseID(), n.LeaseTTLMs(), n.Order())
		}
	}
	call("POST", "/api/v1/sim/runs/"+st.ID+"/act?service=etcd", `{"client":"C4","action":"leave"}`, 200, &st)
	if got := serverQueue(t, st); got != "C1 C2>C1" {
		t.Errorf("after C4's leave the server queue is %q, want C1 C2>C1", got)
	}
	// A crashed holder's key goes when its 5 s lease runs out, and C2 holds.
	call("POST", "/api/v1/sim/runs/"+st.ID+"/act?service=etcd", `{"client":"C1","action":"crash"}`, 200, &st)
	if got := serverQueue(t, st); got != "C2" || client(t, st, "C1").State != simulator.StateCrashed {
		t.Errorf("after C1's crash the server queue is %q and C1 %s, want C2 holding and C1 crashed", got, client(t, st, "C1").State)
	}
	call("POST", "/api/v1/sim/runs/"+st.ID+"/act?service=etcd", `{"client":"C2","action":"add-reader"}`, 400, nil)
	call("DELETE", "/api/v1/sim/runs/"+st.ID+"?service=etcd", "", 204, nil)
	if _, ok := h.Latest(id); ok {
		t.Errorf("the hub still has the deleted run's lock")
	}

	// Scenario 9 with fencing off, to step 10 (7 before its pause was
	// told in four steps): C1's stale write is flagged.
	call("POST", "/api/v1/sim/runs?service=etcd", `{"scenario":"etcd-lease-pause","fencing":false}`, 201, &st)
	call("POST", "/api/v1/sim/runs/"+st.ID+"/seek?service=etcd", `{"step":10}`, 200, &st)
	if len(st.Violations) != 1 || st.Violations[0].Kind != "unfenced-write" || st.Violations[0].ForMs <= 0 {
		t.Errorf("violations at step 10: %+v, want C1's stale write with its duration", st.Violations)
	}
	call("DELETE", "/api/v1/sim/runs/"+st.ID+"?service=etcd", "", 204, nil)
}

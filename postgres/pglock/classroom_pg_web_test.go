package pglock

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/hub"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/lockservice"
	"github.com/zklockviz/zklockviz/postgres/pglocal"
	"github.com/zklockviz/zklockviz/simulator"
	"github.com/zklockviz/zklockviz/web"
)

// TestPgClassroomThroughAPI: a PostgreSQL run over the classroom's HTTP
// API (?service=postgres), its steps published to the hub under
// postgres:<lock>, the lock the live reader would name the same way.
func TestPgClassroomThroughAPI(t *testing.T) {
	if err := pglocal.Installed(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	h := hub.New()
	cls, hm, err := NewClassroom(simulator.ManagerConfig{IdleTimeout: -1, Publish: h.Publish, Remove: h.Remove,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := hm.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	svc := Service(nil)
	svc.Classroom = cls
	reg := &lockservice.Registry{}
	if err := reg.Register(svc); err != nil {
		t.Fatal(err)
	}
	srv, err := web.New(web.Config{Hub: h, Services: reg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	var owner string // the run's owner secret: only its starter may delete it
	call := func(method, path, body string, want int, out any) {
		t.Helper()
		req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(web.RunOwnerHeader, owner)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if s := resp.Header.Get(web.RunOwnerHeader); s != "" {
			owner = s
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, b, want)
		}
		if out != nil {
			if err := json.Unmarshal(b, out); err != nil {
				t.Fatalf("%s %s: %v: %s", method, path, err, b)
			}
		}
	}
	var list []simulator.ScenarioInfo
	call("GET", "/api/v1/sim/scenarios?service=postgres", "", 200, &list)
	if len(list) != len(Catalog.Names()) || list[0].ID != "pg-row-fifo" || list[0].Service != Name || list[0].Unavailable != "" {
		t.Fatalf("scenarios %+v", list)
	}
	var st simulator.State
	call("POST", "/api/v1/sim/runs?service=postgres", `{"scenario":"pg-advisory-fifo"}`, 201, &st)
	if err := CheckName(st.Path); err != nil {
		t.Errorf("the run's lock %q is not a name the live reader takes: %v", st.Path, err)
	}
	call("POST", "/api/v1/sim/runs/"+st.ID+"/seek?service=postgres", `{"step":3}`, 200, &st)
	snap, ok := h.Latest(lockqueue.LockID{Service: Name, Name: st.Path}.Key())
	if !ok || snap.Service != Name || snap.WatchSource != "pg_locks" {
		t.Fatalf("hub's snapshot of %s: %+v (found %v)", st.Path, snap, ok)
	}
	var c1 string
	for _, c := range st.Clients {
		if c.Name == "C1" {
			c1 = c.Node
		}
	}
	if hs := snap.Holders(); len(hs) != 1 || hs[0] != c1 {
		t.Errorf("hub's holders %v, want C1's backend %s", hs, c1)
	}
	// Acting off the plan: C1 releases at once, and the server hands the
	// lock to C2, the first in line.
	call("POST", "/api/v1/sim/runs/"+st.ID+"/act?service=postgres", `{"client":"C1","action":"release"}`, 200, &st)
	var c2 string
	for _, c := range st.Clients {
		if c.Name == "C2" {
			c2 = c.Node
		}
	}
	snap, _ = h.Latest(lockqueue.LockID{Service: Name, Name: st.Path}.Key())
	if hs := snap.Holders(); len(hs) != 1 || hs[0] != c2 {
		t.Errorf("after C1's release the hub's holders are %v, want C2's backend %s", hs, c2)
	}
	// A waiter has no lock to release or write under: the act is refused
	// in the plan's terms, before PostgreSQL is asked, and the run goes on.
	for _, act := range []struct{ body, want string }{
		{`{"client":"C3","action":"release"}`, "step 5: release C3: the plan gives C3 no lock to release at that step"},
		{`{"client":"C3","action":"write"}`, "step 5: write C3: the plan gives C3 no lock to write under at that step"},
	} {
		var refused struct{ Error string }
		call("POST", "/api/v1/sim/runs/"+st.ID+"/act?service=postgres", act.body, 409, &refused)
		if refused.Error != act.want {
			t.Errorf("act %s: %q, want %q", act.body, refused.Error, act.want)
		}
	}
	call("GET", "/api/v1/sim/runs/"+st.ID+"?service=postgres", "", 200, &st)
	if st.Error != "" || st.Step != 4 {
		t.Errorf("after the refused acts: step %d, error %q; want step 4 and no error", st.Step, st.Error)
	}
	call("POST", "/api/v1/sim/runs/"+st.ID+"/act?service=postgres", `{"client":"C1","action":"add-reader"}`, 400, nil)
	call("DELETE", "/api/v1/sim/runs/"+st.ID+"?service=postgres", "", 204, nil)
	if _, ok := h.Latest(lockqueue.LockID{Service: Name, Name: st.Path}.Key()); ok {
		t.Errorf("the hub still has the deleted run's lock")
	}
}

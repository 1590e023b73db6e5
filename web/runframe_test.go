package web

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/zklockviz/zklockviz/simulator"
	"github.com/zklockviz/zklockviz/views"
)

// A classroom panel's socket brings, with each state, the run's table, the
// selected node's details and the lane's labels, rendered from the run's own
// step: the panel sends nothing back to be rendered. The API's answers carry
// the labels too.
func TestClassroomSocketParts(t *testing.T) {
	m := newSim(t, simulator.ManagerConfig{})
	e := newEnv(t, Config{Services: zkRegistry(nil, m)})
	api := apiClient{t: t, url: e.ts.URL + "/api/v1/sim", owners: &ownerJar{}}
	var s simulator.State
	api.do("POST", "/runs", map[string]any{"scenario": "lock1-5"}, 201, &s)
	run := "/runs/" + s.ID
	api.do("POST", run+"/step", nil, 200, &s)
	api.do("POST", run+"/step", nil, 200, &s)
	if len(s.Snapshot.Nodes) < 2 {
		t.Fatalf("after two steps: nodes %v", s.Snapshot.Nodes)
	}
	first, second := s.Snapshot.Nodes[0], s.Snapshot.Nodes[1]
	for _, n := range s.Snapshot.Nodes {
		if got := lines(n); len(got) != 3 || got[0] != views.ShortName(n.Name, n.Seq) || !strings.HasPrefix(got[2], "s ") {
			t.Errorf("the step's answer gives %s the lane's lines %q", n.Name, got)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	read := func(q url.Values) (st simulator.State, x runParts) {
		t.Helper()
		ws, _, err := websocket.Dial(ctx, strings.Replace(api.url, "http", "ws", 1)+run+"/ws?"+q.Encode(), nil)
		if err != nil {
			t.Fatalf("websocket %s: %v", q.Encode(), err)
		}
		defer ws.CloseNow()
		_, b, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("websocket read: %v", err)
		}
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &x); err != nil {
			t.Fatal(err)
		}
		return st, x
	}

	st, x := read(url.Values{"parts": {"1"}, "selected": {second.Name}})
	if st.Step != 2 || x.NodeName != second.Name {
		t.Fatalf("the frame: step %d, node %q; want step 2, node %s", st.Step, x.NodeName, second.Name)
	}
	for _, want := range []string{`<tr data-row="` + first.Name + `" data-state="holding"`, `<tr data-row="` + second.Name + `"`} {
		if !strings.Contains(x.Table, want) {
			t.Errorf("the table has no %s:\n%s", want, x.Table)
		}
	}
	if !strings.Contains(x.Node, `<div class="node-details" data-node="`+second.Name+`">`) || !strings.Contains(x.Node, `<dt class="time">waiting for</dt>`) {
		t.Errorf("the selected node's details:\n%s", x.Node)
	}
	if _, x := read(url.Values{"parts": {"1"}}); !strings.Contains(x.Node, "Click a node to see its details.") {
		t.Errorf("no node selected, the details say:\n%s", x.Node)
	}
	if _, x := read(url.Values{"parts": {"1"}, "size": {"1"}, "page": {"1"}}); strings.Contains(x.Table, `data-row="`+first.Name+`"`) || !strings.Contains(x.Table, `data-row="`+second.Name+`"`) {
		t.Errorf("the table's second page of one row:\n%s", x.Table)
	}
	if _, x := read(url.Values{}); x.Table != "" || x.HTML != "" {
		t.Errorf("a socket that asked for no parts got %+v", x)
	}
	if msg := api.errorOf("GET", run+"/ws?parts=1&page=-1", nil, 400); !strings.Contains(msg, "bad table view") {
		t.Errorf("a bad page: %q", msg)
	}
}

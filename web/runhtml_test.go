package web

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/zklockviz/zklockviz/simulator"
)

// What a run's card shows of its state (its narration, clients, events and
// pseudocode) comes rendered with every answer of the API and every frame
// of a parts socket, from the same state; a socket that asked for no parts
// gets the state alone.
func TestClassroomRunHTML(t *testing.T) {
	m := newSim(t, simulator.ManagerConfig{})
	e := newEnv(t, Config{Services: zkRegistry(nil, m)})
	api := apiClient{t: t, url: e.ts.URL + "/api/v1/sim", owners: &ownerJar{}}
	var s struct {
		simulator.State
		HTML string `json:"html"`
	}
	api.do("POST", "/runs", map[string]any{"scenario": "lock1-5"}, 201, &s)
	if !strings.HasPrefix(s.HTML, `<div class="narration">Ready: `) {
		t.Fatalf("the new run's answer: %s", s.HTML)
	}
	run := "/runs/" + s.ID
	api.do("POST", run+"/step", nil, 200, &s)
	api.do("POST", run+"/step", nil, 200, &s)
	answered := s.HTML
	want := []string{`<ol class="events"><li data-step="1"`, `<li data-step="2" data-kind="wait" class="current"><code>wait</code> LOCK2: `, `<ol class="pseudo">`, `aria-current="step"`}
	for _, c := range s.Clients {
		want = append(want, `data-client="`+c.Name+`" data-state="`+c.State+`"`)
	}
	for _, w := range want {
		if !strings.Contains(answered, w) {
			t.Errorf("the answer at step 2 has no %s:\n%s", w, answered)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	frame := func(q string) (x struct {
		HTML *string `json:"html"`
	}) {
		t.Helper()
		ws, _, err := websocket.Dial(ctx, strings.Replace(api.url, "http", "ws", 1)+run+"/ws"+q, nil)
		if err != nil {
			t.Fatalf("websocket %s: %v", q, err)
		}
		defer ws.CloseNow()
		_, b, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("websocket read: %v", err)
		}
		if err := json.Unmarshal(b, &x); err != nil {
			t.Fatal(err)
		}
		return x
	}
	if x := frame("?parts=1"); x.HTML == nil || *x.HTML != answered {
		t.Errorf("the parts frame's html %v, want the answer's:\n%s", x.HTML, answered)
	}
	if x := frame(""); x.HTML != nil {
		t.Errorf("a socket that asked for no parts got %s", *x.HTML)
	}
}

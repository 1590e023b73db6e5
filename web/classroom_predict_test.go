package web

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/zklockviz/zklockviz/simulator"
)

// control is what a run's answers say of who may move it.
type control struct {
	ID         string `json:"id"`
	Owner      string `json:"owner"`
	MayControl bool   `json:"mayControl"`
	ControlWhy string `json:"controlWhy"`
	Open       bool   `json:"open"`
	Step       int    `json:"step"`
}

// TestClassroomRunRights: only a run's owner (its secret) or whoever holds
// the server's token may move it; anyone else is refused with 403 saying
// why, and the run's state tells each requester whether it may. A run
// started open to all may be moved by anyone, and still deleted only by
// its owner.
func TestClassroomRunRights(t *testing.T) {
	m := newSim(t, simulator.ManagerConfig{})
	e := newEnv(t, Config{Services: zkRegistry(nil, m)})
	url := e.ts.URL + "/api/v1/sim"
	alice := apiClient{t: t, url: url, owners: &ownerJar{}}
	stranger := apiClient{t: t, url: url}

	var a control
	alice.do("POST", "/runs", map[string]any{"scenario": "lock1-5"}, 201, &a)
	if !a.MayControl || a.Open {
		t.Errorf("the start's answer: %+v, want mayControl and not open", a)
	}
	run := "/runs/" + a.ID
	commands := []struct {
		path string
		body any
		verb string
	}{
		{"/step", nil, "may step it;"},
		{"/back", nil, "may step it back"},
		{"/seek", map[string]any{"step": 1}, "may seek in it"},
		{"/play", nil, "may play it"},
		{"/pause", nil, "may pause it"},
		{"/speed", map[string]any{"speed": 2}, "may change its speed"},
		{"/act", map[string]string{"action": "add-reader"}, "may act on its clients"},
		{"/script", nil, "may take it back to its script"},
	}
	for _, c := range commands {
		msg := stranger.errorOf("POST", run+c.path, c.body, http.StatusForbidden)
		if !strings.Contains(msg, "run "+a.ID+" was started by someone else") || !strings.Contains(msg, c.verb) || !strings.Contains(msg, RunOwnerHeader) {
			t.Errorf("a stranger's %s: %q, want a refusal naming the owner's secret and %q", c.path, msg, c.verb)
		}
	}
	var st control
	alice.do("GET", run, nil, 200, &st)
	if st.Step != 0 {
		t.Fatalf("the stranger's commands moved the run to step %d", st.Step)
	}
	if !st.MayControl {
		t.Errorf("the owner's view of the run: %+v, want mayControl", st)
	}
	stranger.do("GET", run, nil, 200, &st)
	if st.MayControl || !strings.Contains(st.ControlWhy, "answer its questions") {
		t.Errorf("a stranger's view of the run: %+v, want no control, saying why", st)
	}
	alice.do("POST", run+"/step", nil, 200, &st)
	if st.Step != 1 {
		t.Errorf("the owner's step: at step %d, want 1", st.Step)
	}

	var o control
	alice.do("POST", "/runs", map[string]any{"scenario": "lock1-5", "open": true}, 201, &o)
	if !o.Open {
		t.Errorf("a run started open to all: %+v, want open", o)
	}
	stranger.do("POST", "/runs/"+o.ID+"/step", nil, 200, &st)
	if st.Step != 1 {
		t.Errorf("a stranger's step of an open run: %+v, want step 1", st)
	}
	stranger.do("GET", "/runs/"+o.ID, nil, 200, &st)
	if !st.MayControl || !st.Open {
		t.Errorf("a stranger's view of an open run: %+v, want open and control", st)
	}
	if msg := stranger.errorOf("DELETE", "/runs/"+o.ID, nil, http.StatusForbidden); !strings.Contains(msg, "started by someone else") {
		t.Errorf("a stranger's delete of an open run: %q, want refused", msg)
	}
	if msg := alice.errorOf("POST", "/runs", map[string]any{"scenario": "lock1-5", "open": "yes"}, 400); !strings.Contains(msg, "open: want true or false") {
		t.Errorf("a bad open: %q", msg)
	}
}

// predicted is what a predicting socket's frame says beside the state.
type predicted struct {
	Step      int    `json:"step"`
	Narration string `json:"narration"`
	Held      bool   `json:"held"`
	RunStep   int    `json:"runStep"`
	Predict   *struct {
		Step      int `json:"step"`
		Questions []struct {
			ID      string   `json:"id"`
			Choices []string `json:"choices"`
		} `json:"questions"`
		Answered int  `json:"answered"`
		Mine     bool `json:"mine"`
	} `json:"predict"`
	Reveal *struct {
		Step     int                       `json:"step"`
		Right    map[string]string         `json:"right"`
		Counts   map[string]map[string]int `json:"counts"`
		Answered int                       `json:"answered"`
		Mine     map[string]string         `json:"mine"`
	} `json:"reveal"`
}

// TestClassroomPredict: a student who does not move the run is held at
// the last step it answered: until it answers the next step's questions,
// its socket brings neither that step's state nor its answer; once it
// answers, the step is shown with the right answers and its own. The
// owner's socket counts the class's answers per choice once the step is
// shown. The questions are the step's: who holds and whom it wakes for a
// release, whether it lands for a write.
func TestClassroomPredict(t *testing.T) {
	m := newSim(t, simulator.ManagerConfig{})
	e := newEnv(t, Config{Services: zkRegistry(nil, m)})
	url := e.ts.URL + "/api/v1/sim"
	lecturer := apiClient{t: t, url: url, owners: &ownerJar{}}
	student := apiClient{t: t, url: url}

	var st simulator.State
	lecturer.do("POST", "/runs", map[string]any{"scenario": "lock1-5"}, 201, &st)
	run := "/runs/" + st.ID
	lecturer.do("POST", run+"/seek", map[string]any{"step": 5}, 200, &st)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dial := func(q string) *websocket.Conn {
		t.Helper()
		ws, _, err := websocket.Dial(ctx, strings.Replace(url, "http", "ws", 1)+run+"/ws?"+q, nil)
		if err != nil {
			t.Fatalf("websocket %s: %v", q, err)
		}
		t.Cleanup(func() { ws.CloseNow() })
		return ws
	}
	// read reads frames until one passes ok (the socket may bring a state
	// twice, or a busy one first).
	read := func(ws *websocket.Conn, ok func(predicted) bool) (predicted, string) {
		t.Helper()
		for {
			_, b, err := ws.Read(ctx)
			if err != nil {
				t.Fatalf("websocket read: %v", err)
			}
			var p predicted
			if err := json.Unmarshal(b, &p); err != nil {
				t.Fatal(err)
			}
			if ok(p) {
				return p, string(b)
			}
		}
	}
	alice := dial("predict=student-alice&hold=1")
	p, _ := read(alice, func(p predicted) bool { return p.Step == 5 })
	if p.Predict == nil || p.Predict.Step != 6 || len(p.Predict.Questions) != 2 || p.Predict.Questions[0].ID != "holds" || p.Predict.Questions[1].ID != "woken" {
		t.Fatalf("at step 5, before LOCK1's release: %+v, want step 6's questions: holds, woken", p.Predict)
	}
	bob := dial("predict=student-bob1&hold=1")
	read(bob, func(p predicted) bool { return p.Step == 5 })
	owner := dial("predict=the-lecturer")
	read(owner, func(p predicted) bool { return p.Step == 5 })

	lecturer.do("POST", run+"/step", nil, 200, &st)
	if st.Step != 6 {
		t.Fatalf("the lecturer's step: at %d", st.Step)
	}
	held, raw := read(alice, func(p predicted) bool { return p.RunStep == 6 })
	if !held.Held || held.Step != 5 || held.Reveal == nil || held.Reveal.Step != 5 {
		t.Fatalf("a student who has not answered, the run at step 6: %+v, want held at step 5", held)
	}
	if strings.Contains(raw, st.Narration) {
		t.Errorf("the held frame carries step 6's narration %q", st.Narration)
	}

	answer := func(who string, step int, answers map[string][]string, want int) string {
		t.Helper()
		body := map[string]any{"viewer": who, "step": step, "answers": answers}
		if want != 204 {
			return student.errorOf("POST", run+"/answers", body, want)
		}
		student.do("POST", run+"/answers", body, want, nil)
		return ""
	}
	if msg := answer("student-alice", 6, map[string][]string{"holds": {"LOCK9"}, "woken": nil}, 400); !strings.Contains(msg, `"LOCK9" is not one of`) {
		t.Errorf("an answer not among the choices: %q", msg)
	}
	if msg := answer("student-alice", 6, map[string][]string{"holds": {"LOCK2"}}, 400); !strings.Contains(msg, `missing answer to "woken"`) {
		t.Errorf("an answer missing: %q", msg)
	}
	answer("student-alice", 6, map[string][]string{"holds": {"LOCK2"}, "woken": {"LOCK2"}}, 204)
	if msg := answer("student-alice", 6, map[string][]string{"holds": {"LOCK3"}, "woken": {}}, 409); !strings.Contains(msg, "answered this step already") {
		t.Errorf("a second answer from one browser: %q", msg)
	}
	answer("student-bob1", 6, map[string][]string{"holds": {"LOCK2", "LOCK3"}, "woken": {"LOCK2", "LOCK3"}}, 204)
	// A browser that is not held sees the run's step: it may not answer it.
	if msg := answer("student-carol", 6, map[string][]string{"holds": {"LOCK2"}, "woken": {"LOCK2"}}, 409); !strings.Contains(msg, "step 6 was shown to this browser already") {
		t.Errorf("an answer to a step already shown: %q", msg)
	}

	shown, _ := read(alice, func(p predicted) bool { return !p.Held && p.Step == 6 })
	if shown.Narration != st.Narration || shown.Reveal == nil || shown.Reveal.Step != 6 {
		t.Fatalf("after answering: %+v, want step 6 shown with its answers", shown)
	}
	wantRight := map[string]string{"holds": "LOCK2", "woken": "LOCK2"}
	sameJSON(t, "step 6's right answers", shown.Reveal.Right, wantRight)
	sameJSON(t, "the student's own answers", shown.Reveal.Mine, wantRight)
	if shown.Predict == nil || shown.Predict.Step != 7 {
		t.Errorf("after step 6: %+v, want step 7's questions", shown.Predict)
	}

	counted, _ := read(owner, func(p predicted) bool { return p.Step == 6 && p.Reveal != nil && p.Reveal.Answered == 2 })
	sameJSON(t, "the class's counts", counted.Reveal.Counts, map[string]map[string]int{
		"holds": {"LOCK2": 1, "LOCK2, LOCK3": 1},
		"woken": {"LOCK2": 1, "LOCK2, LOCK3": 1},
	})
	if counted.Held {
		t.Errorf("the lecturer's socket is held: %+v", counted)
	}
}

// Which questions a step asks is decided by its action alone, so that
// being asked gives nothing away.
func TestPredictAsksOf(t *testing.T) {
	tests := []struct {
		action string
		want   []string
	}{
		{"add-reader", []string{"holds"}},
		{"add-writer", []string{"holds"}},
		{"add", []string{"holds"}},
		{"write", []string{"lands"}},
		{"checked-write", []string{"lands"}},
		{"release", []string{"holds", "woken"}},
		{"crash", []string{"holds", "woken"}},
		{"expire", []string{"holds", "woken"}},
		{"clock-jump", []string{"holds", "woken"}},
		{"resume", []string{"holds"}},
	}
	for _, tt := range tests {
		if got := asksOf(factAction{Client: "C1", Action: tt.action}); strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Errorf("%s asks %v, want %v", tt.action, got, tt.want)
		}
	}
}

package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp/kb"
)

// startScripted starts a run as a script does, and answers its id and
// owner secret.
func startScripted(t *testing.T, url, body string) (id, owner string) {
	t.Helper()
	res, err := http.Post(url+"/api/v1/sim/runs", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var run struct{ ID, Owner string }
	err = json.NewDecoder(res.Body).Decode(&run)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusCreated || run.Owner == "" {
		t.Fatalf("start a run: %d %v (owner %q)", res.StatusCode, err, run.Owner)
	}
	return run.ID, run.Owner
}

// The classroom lists the server's open runs: this tab's marked, another
// tab's of this browser with a delete button that ends it on the server,
// and a run someone else started with none (only its starter deletes it).
func TestClassroomRunList(t *testing.T) {
	need(t)
	srv := startServer(t, "--sim")
	tb := newTab(t)
	tb.open(srv.URL + "/sim?scenario=lock1-5&strategy=predecessor")
	scope := run("predecessor")
	tb.until("the run", `document.querySelector(`+jsString(scope)+`) && document.querySelector(`+jsString(scope)+`).dataset.run`)
	mine := eval[string](tb, `document.querySelector(`+jsString(scope)+`).dataset.run`)

	// Another run, as a closed tab of this browser leaves one: its secret
	// in this browser's storage.
	var other struct{ ID string }
	var owner string
	other.ID, owner = startScripted(t, srv.URL, `{"scenario":"herd","clients":3}`)
	tb.run(`{ const k = 'zklockviz.runOwners'; const o = JSON.parse(localStorage.getItem(k) || '{}'); o[` + jsString(other.ID) + `] = ` + jsString(owner) + `; localStorage.setItem(k, JSON.stringify(o)); }`)
	// And one someone else started.
	foreign, _ := startScripted(t, srv.URL, `{"scenario":"herd","clients":2}`)

	tb.click("open the run list", `#run-list summary`)
	item := func(id string) string { return `#run-items li[data-run=` + jsString(id) + `]` }
	tb.until("the runs listed", `document.querySelector(`+jsString(item(other.ID)+` button[data-delete]`)+`) && document.querySelector(`+jsString(item(mine))+`) && document.querySelector(`+jsString(item(foreign))+`)`)
	if n := eval[int](tb, `document.querySelectorAll(`+jsString(item(foreign)+` button`)+`).length`); n != 0 {
		t.Errorf("someone else's run offers %d buttons, want none", n)
	}
	if got := eval[string](tb, `document.querySelector(`+jsString(item(foreign))+`).textContent`); !strings.Contains(got, "only its starter deletes it") {
		t.Errorf("someone else's run reads %q, want it to say why it has no delete", got)
	}
	req, err := http.NewRequest(http.MethodDelete, srv.URL+"/api/v1/sim/runs/"+foreign, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := http.DefaultClient.Do(req); err != nil || got.StatusCode != http.StatusForbidden {
		t.Fatalf("a delete without the owner's secret: %v %v, want 403", got.Status, err)
	} else {
		got.Body.Close()
	}
	if got := eval[string](tb, `document.querySelector(`+jsString(item(mine))+`).textContent`); !strings.Contains(got, "(this tab)") || !strings.Contains(got, "predecessor") {
		t.Errorf("this tab's run reads %q", got)
	}
	if n := eval[int](tb, `document.querySelectorAll(`+jsString(item(mine)+` button`)+`).length`); n != 0 {
		t.Errorf("this tab's run offers %d buttons, want none", n)
	}
	tb.click("delete the other run", item(other.ID)+` button[data-delete]`)
	tb.until("it leaves the list", `!document.querySelector(`+jsString(item(other.ID))+`) && document.getElementById('run-count').textContent === '(2)'`)
	got, err := http.Get(srv.URL + "/api/v1/sim/runs/" + other.ID)
	if err != nil {
		t.Fatal(err)
	}
	got.Body.Close()
	if got.StatusCode != http.StatusNotFound {
		t.Errorf("the deleted run answers %d, want 404", got.StatusCode)
	}
	if msg := eval[string](tb, `document.getElementById('sim-error').textContent`); msg != "" {
		t.Errorf("error shown: %q", msg)
	}
}

// ha-standby's lease lock has no strategy to choose: the control is
// disabled and says why, and the run shows the children strategy it uses.
func TestClassroomFixedStrategy(t *testing.T) {
	need(t)
	srv := startServer(t, "--sim")
	tb := newTab(t)
	tb.open(srv.URL + "/sim?scenario=ha-standby&strategy=herd")
	tb.until("the lease run", `document.querySelector(`+jsString(run("children"))+`) && document.querySelector(`+jsString(run("children"))+`).dataset.run`)
	if !eval[bool](tb, `document.getElementById('strategy').disabled`) {
		t.Error("the strategy control is enabled for a lease lock")
	}
	if got := eval[string](tb, `document.getElementById('strategy-fixed').hidden ? '' : document.getElementById('strategy-fixed').textContent`); !strings.Contains(got, "children watch") {
		t.Errorf("the reason shown: %q", got)
	}
	if n := eval[int](tb, `document.querySelectorAll('#runs .run').length`); n != 1 {
		t.Errorf("%d runs shown, want the one lease run", n)
	}
	// Back to a scenario with a choice: the control comes back.
	tb.run(`{ const s = document.getElementById('scenario'); s.value = 'lock1-5'; s.dispatchEvent(new Event('change', {bubbles: true})); }`)
	tb.until("the strategy control again", `!document.getElementById('strategy').disabled && document.getElementById('strategy-fixed').hidden && document.querySelector(`+jsString(run("herd"))+`)`)
}

// Play at the end of a run starts it again from the beginning, as a media
// player does, instead of answering with an error.
func TestClassroomPlayAtEnd(t *testing.T) {
	need(t)
	srv := startServer(t, "--sim")
	tb := newTab(t)
	tb.open(srv.URL + "/sim?scenario=lock1-5&strategy=predecessor")
	scope := run("predecessor")
	tb.until("the run", settled(scope, 0))
	tb.key(kb.End)
	tb.until("the end", settled(scope, 10)+` && document.getElementById('step-info').textContent.includes('done')`)
	tb.key(" ")
	tb.until("playing again from the start", `document.body.dataset.playing === 'true' && Number(document.querySelector(`+jsString(scope)+`).dataset.step) < 10`)
	if msg := eval[string](tb, `document.getElementById('sim-error').textContent`); msg != "" {
		t.Errorf("play at the end: error %q", msg)
	}
	tb.key(" ")
	tb.until("paused", `document.body.dataset.playing === 'false'`)
}

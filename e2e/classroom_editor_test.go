package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// The scenario editor: it shows the chosen scenario's JSON, a refused plan
// is told beside it in the plan's terms, a loaded file is checked, and an
// edited scenario runs as "<title> (edited)".
func TestClassroomScenarioEditor(t *testing.T) {
	tb, _ := openEditor(t)

	verdict := `document.getElementById('scenario-verdict')`
	setText := func(text string) {
		tb.run(`document.getElementById('scenario-json').value = ` + jsString(text))
	}
	// B waits for A: the refusal must not say so.
	tb.expectConsole(`status of 400 .*/api/v1/sim/scenarios/check`, "the server rightly refuses the invalid scenario the test sends to the check")
	setText(`{"lock":"exclusive","steps":[{"client":"A","action":"add"},{"client":"B","action":"add"},{"client":"B","action":"release"}]}`)
	tb.click("check", `#scenario-check`)
	tb.until("the refusal", verdict+`.classList.contains('error') && `+verdict+`.textContent.includes('step 3: release B: the plan gives B no lock to release at that step')`)
	if got := eval[string](tb, verdict+`.textContent`); strings.Contains(got, "waits for") {
		t.Errorf("the refusal gives the queue away: %q", got)
	}

	// A file loaded is checked at once.
	file := filepath.Join(t.TempDir(), "two.json")
	if err := os.WriteFile(file, []byte(`{"name":"two","title":"Two clients","lock":"exclusive","steps":[{"client":"A","action":"add"},{"client":"B","action":"add"},{"client":"A","action":"release"},{"client":"B","action":"release"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tb.do("load a file", chromedp.SetUploadFiles(chromedp.CSS(`#scenario-file`), []string{file}))
	tb.until("the file checked", `!`+verdict+`.classList.contains('error') && `+verdict+`.textContent.includes('Two clients: 4 steps')`)

	tb.click("run it", `#scenario-run`)
	tb.until("the edited scenario runs", `document.getElementById('scenario').value === 'edited:two' && document.getElementById('scenario').selectedOptions[0].textContent === 'Two clients (edited)' && document.querySelector('.run') && document.querySelector('.run').dataset.run && document.getElementById('step-info').textContent.includes('of 4')`)
	if msg := eval[string](tb, `document.getElementById('sim-error').textContent`); msg != "" {
		t.Errorf("error shown: %q", msg)
	}
}

// An edited scenario's share link reopens it: the link carries its JSON,
// which the server checks again; a link without it says it cannot.
func TestClassroomEditedShareLink(t *testing.T) {
	tb, srv := openEditor(t)
	tb.run(`document.getElementById('scenario-json').value = ` + jsString(`{"name":"two","title":"Two clients","lock":"exclusive","steps":[{"client":"A","action":"add"},{"client":"B","action":"add"},{"client":"A","action":"release"}]}`))
	tb.click("run it", `#scenario-run`)
	edited := `document.getElementById('scenario').value === 'edited:two' && document.querySelector('.run') && document.querySelector('.run').dataset.run && document.getElementById('step-info').textContent.includes('of 3')`
	tb.until("the edited scenario runs", edited)
	tb.until("the link carries it", `new URLSearchParams(location.search).has('definition')`)
	link := eval[string](tb, `location.href`)

	tb.open(link)
	tb.until("the link reopens the edited scenario", edited+` && document.getElementById('scenario').selectedOptions[0].textContent === 'Two clients (edited)'`)
	if msg := eval[string](tb, `document.getElementById('sim-error').textContent`); msg != "" {
		t.Errorf("error shown: %q", msg)
	}

	tb.open(srv.URL + "/sim?scenario=edited:two&strategy=predecessor")
	tb.until("a link without the JSON says it cannot", `document.getElementById('sim-error').textContent.includes('cannot reopen it')`)
}

// openEditor opens the classroom on LOCK1–LOCK5 with the scenario editor
// showing its JSON.
func openEditor(t *testing.T) (*tab, *server) {
	t.Helper()
	need(t)
	srv := startServer(t, "--sim")
	tb := newTab(t)
	tb.open(srv.URL + "/sim?scenario=lock1-5&strategy=predecessor")
	tb.until("the run", settled(run("predecessor"), 0))
	tb.click("open the editor", `#scenario-editor summary`)
	tb.until("lock1-5's JSON", `JSON.parse(document.getElementById('scenario-json').value || '{}').name === 'lock1-5'`)
	return tb, srv
}

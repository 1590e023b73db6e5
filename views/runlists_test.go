package views

import (
	"encoding/json"
	"strings"
	"testing"
)

// A run's narration and lists are rendered from its state's JSON as the
// panel shows them: the violations after the narration, the events up to
// the step shown, the current line, and how each waiter waits.
func TestRunLists(t *testing.T) {
	var s RunState
	if err := json.Unmarshal([]byte(`{"step":2,"line":1,"narration":"A holds.","error":"boom",
		"violations":[{"kind":"overlap","said":"two <holders>"},{"message":"unsaid"}],"pseudocode":{"lines":["create <node>","wait"]},
		"events":[{"step":1,"kind":"join","client":"A","text":"joins"},{"step":2,"kind":"notify","text":"woken"},{"step":3,"kind":"later"}],
		"clients":[{"name":"A","mode":"write","state":"waiting","polling":true,"retries":10},{"name":"B","state":"waiting","waitsFor":"A"},
		{"name":"C","mode":"read","state":"holding"},{"name":"D","state":"waiting"}]}`), &s); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		got       string
		want, not []string
	}{
		{"clients", render(t, runClients(s.Clients)), []string{
			`data-client="A" data-state="waiting"`, `<span class="cstate">writer · waiting</span>`,
			`<span class="pulses" data-retries="10" title="polls: 10 failed tries so far`, `<i class="pulse"></i><small>10×</small>`,
			`<strong>B</strong><span class="cstate">waiting</span><span class="queued" data-queued="true"`, `>queued after A</span>`,
			`<span class="cstate">reader · holding</span></button>`, `>queued</span>`,
		}, []string{strings.Repeat(`<i class="pulse"></i>`, 9)}},
		{"events", render(t, runEvents(s)), []string{
			`<li data-step="1" data-kind="join" class=""><code>join</code> A: joins</li>`,
			`<li data-step="2" data-kind="notify" class="current"><code>notify</code> woken</li>`,
		}, []string{"later"}},
		{"narration", render(t, runNarration(s)), []string{
			`A holds.<span class="violation" data-kind="overlap">⚠ two &lt;holders&gt;</span><span class="violation" data-kind="">⚠ unsaid</span><span class="violation">⚠ boom</span>`,
		}, nil},
		{"ready", render(t, runNarration(RunState{})), []string{"Ready. Press Space"}, []string{"violation"}},
		{"pseudocode", render(t, runPseudocode(s)), []string{
			`<li class="current" aria-current="step">create &lt;node&gt;</li><li>wait</li>`,
		}, nil},
	} {
		for _, w := range tc.want {
			if !strings.Contains(tc.got, w) {
				t.Errorf("%s: no %s in\n%s", tc.name, w, tc.got)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(tc.got, w) {
				t.Errorf("%s: %s in\n%s", tc.name, w, tc.got)
			}
		}
	}
}

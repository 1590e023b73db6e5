package views

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/lockservice"
)

// Each client's pane is drawn from the step's state and locks: a service
// that shows its nodes here (ZooKeeper's znodes) has the node's lines and
// clock, another leaves room for the server's details of it; the acts say
// their help and are off for a client out of the queue.
func TestRunPanes(t *testing.T) {
	held := lockqueue.Node{Name: "lock-1", Holding: true, Session: "0x1", Data: "", Watching: []string{"/l/lock-0"}}
	held.SetHeldSince(time.UnixMilli(1200))
	// Stamped on the run's clock, as the run stamps its step's nodes.
	waiting := lockqueue.Node{Name: "lock-2", WaitsOn: lockqueue.OnChildren, Data: "eA==", DataBinary: true, Watching: []string{"/l"}}
	waiting.SetWaitSince(time.UnixMilli(2400))
	locks := []lockqueue.Snapshot{{Path: "/l", Nodes: []lockqueue.Node{held, waiting}}}
	s := RunState{Fencing: true, ClockMs: 3600, Clients: []RunClient{
		{Name: "A", Node: "lock-1", State: "holding", Token: 7},
		{Name: "B", Node: "lock-2", State: "paused", JoinedMs: 2400, WaitsFor: "A"},
		{Name: "C", State: "crashed", Session: "0x3"},
		{Name: "D", Node: "lock-2", State: "stale"},
	}}
	zk := lockservice.ClassroomWords{NodeLines: true, Hint: "Click a client.", Actions: map[string]string{"release": "let go"}}
	// templ leaves a space between some elements, which the pane's
	// layout (a grid of terms, a flex row of buttons) does not show.
	between := regexp.MustCompile(`>\s+<`)
	got := between.ReplaceAllString(render(t, runPanes(s, zk, locks)), "><")
	for _, w := range []string{
		`<div data-client=""><p class="dim">Click a client.</p></div>`,
		`<div data-client="A"><dl><dt>client</dt><dd class="">A</dd><dt>state</dt><dd class="">holding</dd><dt>session</dt><dd class="mono">0x1</dd><dt>node</dt><dd class="mono">lock-1</dd><dt>mode</dt>`,
		`<dt>data</dt><dd class="mono">(empty)</dd><dt>watches</dt><dd class="mono">lock-0</dd><dt>holding for</dt><dd class="time" data-since="1200" data-verb=""></dd><dt>fencing token</dt><dd class="">7</dd></dl>`,
		`<button type="button" title="let go" data-action="release">release</button>`,
		`title="write to the protected resource (it checks the fencing token)" data-action="write">write</button>`,
		`<dt>waits for client</dt><dd class="">A</dd>`, `<dd class="mono">base64 eA==</dd><dt>waits for</dt><dd class="mono">children of /l</dd><dt>watches</dt><dd class="mono">/l</dd><dt>waiting for</dt><dd class="time" data-since="2400"`,
		`data-action="crash">crash</button><button type="button" title="" data-action="pause" disabled>pause</button>`,
		`<dd class="">crashed</dd><dt>session</dt><dd class="mono">0x3</dd><dt>node</dt><dd class="mono">—</dd></dl><div class="acts"><button type="button" title="let go" data-action="release" disabled>`,
		`<dd class="">stale: back from a pause that outlasted its hold`,
	} {
		if !strings.Contains(got, w) {
			t.Errorf("no %s in\n%s", w, got)
		}
	}
	got = between.ReplaceAllString(render(t, runPanes(s, lockservice.ClassroomWords{}, locks)), "><")
	if !strings.Contains(got, `<div data-client="A"><dl><dt>client</dt><dd class="">A</dd><dt>state</dt><dd class="">holding</dd><dt>fencing token</dt><dd class="">7</dd></dl><div class="server-details"></div><div class="acts">`) ||
		!strings.Contains(got, `<div data-client="C"><dl><dt>client</dt><dd class="">C</dd><dt>state</dt><dd class="">crashed</dd><dt>session</dt>`) {
		t.Errorf("a service that describes its nodes itself: the pane\n%s", got)
	}
}

// A scene's wait cycle is said by its clients, round to the first again,
// across the scene's locks (those after the followed one).
func TestRunCycleNote(t *testing.T) {
	s := RunState{Clients: []RunClient{{Name: "A", Node: "n1"}, {Name: "B", Node: "n2"}}}
	locks := make([]lockqueue.Snapshot, 3)
	if got := render(t, RunParts(s, lockservice.ClassroomWords{}, locks)); !strings.Contains(got, `<div class="cycle-note" data-cycle=""></div>`) {
		t.Errorf("no cycle, the note:\n%s", got)
	}
	s.Cycle = &struct {
		Nodes   []string `json:"nodes"`
		Message string   `json:"message"`
	}{[]string{"n1", "n2", "n3"}, "each waits for the next"}
	want := `<div class="cycle-note" data-cycle="A B n3"><strong>⚠ wait cycle across 2 locks: A → B → n3 → A</strong><small>each waits for the next</small></div>`
	if got := render(t, RunParts(s, lockservice.ClassroomWords{}, locks)); !strings.Contains(got, want) {
		t.Errorf("the cycle's note: want %s in\n%s", want, got)
	}
}

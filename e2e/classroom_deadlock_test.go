package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp/kb"
)

// sceneLane is one lock's lane of a classroom scene as the page draws it:
// the lock, and its holders and waiters by client (a PostgreSQL node's
// label begins with its session's application name, the client's).
type sceneLane struct {
	Lock    string   `json:"lock"`
	Holders []string `json:"holders"`
	Waiters []string `json:"waiters"`
}

func (l sceneLane) String() string {
	row, _, _ := strings.Cut(strings.TrimPrefix(l.Lock, "row "), " ")
	return fmt.Sprintf("%s: holds %v, waits %v", row, l.Holders, l.Waiters)
}

const sceneLanesJS = `[...document.querySelectorAll('.run svg.locks > svg.lane')].filter(l => l.getBoundingClientRect().width > 0).map(l => {
	const who = (state) => [...l.querySelectorAll('[data-node][data-state=' + state + '] .label.data')].map(t => t.textContent.split(' · ')[0]);
	return {lock: l.dataset.lock, holders: who('holding'), waiters: who('waiting')};
})`

// PostgreSQL's deadlock in the browser: each row is a lane of its own,
// the wait cycle is drawn across them naming both sessions while it
// stands, and once the deadlock check has aborted C2 (40P01) the rows show
// who really holds them, as the clients' chips do.
func TestClassroomDrawsDeadlockAcrossRows(t *testing.T) {
	need(t)
	needServers(t)
	srv := startServer(t, "--sim")
	tb := newTab(t)
	tb.open(srv.URL + "/sim?scenario=pg-deadlock")
	tb.until("pg-deadlock's run", settled(serviceRun, 0)+` && document.getElementById('scenario').value === 'pg-deadlock'`)
	for k := 1; k <= 5; k++ {
		tb.key(kb.ArrowRight)
		tb.until(fmt.Sprintf("step %d", k), settled(serviceRun, k))
	}

	// Step 5: C2 asks for row 1 and closes the cycle.
	lanes := eval[[]sceneLane](tb, sceneLanesJS)
	want := []string{"1: holds [C1], waits [C2]", "2: holds [C2], waits [C1]"}
	if got := laneText(lanes); !slices.Equal(got, want) {
		t.Errorf("the cycle's step draws the rows %q, want %q", got, want)
	}
	links := eval[[]map[string]string](tb, `[...document.querySelectorAll('.run svg.locks .cycle-link')].map(p => ({client: p.dataset.cycleLink, from: p.dataset.fromLock, to: p.dataset.toLock}))`)
	var across []string
	for _, l := range links {
		if l["from"] != l["to"] {
			across = append(across, l["client"])
		}
	}
	slices.Sort(across)
	if !slices.Equal(across, []string{"C1", "C2"}) {
		t.Errorf("links of the cycle across the rows: %v, want one for C1 and one for C2, each from one row to the other", links)
	}
	inLane := eval[[]string](tb, `[...document.querySelectorAll('.run svg.locks svg.lane')].flatMap(l => [...l.querySelectorAll('.arrows [data-cycle=true]')].map(p => l.dataset.lock.split(' ')[1] + ':' + p.dataset.from + '→' + p.dataset.to))`)
	if len(inLane) != 2 {
		t.Errorf("waits-for arrows marked as the cycle's: %q, want one in each row", inLane)
	}
	note := eval[string](tb, `(n => n && !n.hidden ? n.textContent : '')(document.querySelector('.run .cycle-note'))`)
	if !strings.Contains(note, "C1 → C2 → C1") || !strings.Contains(note, "a wait cycle: pid-") {
		t.Errorf("the cycle's note %q: want it to name C1 → C2 → C1 and give lockqueue's alert", note)
	}
	tb.screenshot("classroom-deadlock.png")

	// Step 6: the deadlock check aborted C2; C1 got row 2.
	tb.key(kb.ArrowRight)
	tb.until("step 6", settled(serviceRun, 6))
	lanes = eval[[]sceneLane](tb, sceneLanesJS)
	want = []string{"1: holds [C1], waits []", "2: holds [C1], waits []"}
	if got := laneText(lanes); !slices.Equal(got, want) {
		t.Errorf("after 40P01 the rows %q, want %q", got, want)
	}
	if n := eval[int](tb, `document.querySelectorAll('.run svg.locks .cycle-link, .run svg.locks [data-cycle=true]').length`); n != 0 {
		t.Errorf("after 40P01, %d parts of the broken cycle are still drawn", n)
	}
	chips := clientStates(tb, serviceRun)
	if chips["C1"] != "holding" || chips["C2"] != "released" {
		t.Errorf("after 40P01 the chips say %v, want C1 holding, C2 released", chips)
	}
	for _, l := range lanes {
		for _, h := range l.Holders {
			if chips[h] != "holding" {
				t.Errorf("%s is drawn holding %s while its chip says %s", h, l.Lock, chips[h])
			}
		}
	}
}

func laneText(lanes []sceneLane) []string {
	out := make([]string, len(lanes))
	for i, l := range lanes {
		out[i] = l.String()
	}
	return out
}

// etcd's classroom names each node by its client, as every other service
// does; the lease stays in the details.
func TestClassroomEtcdNodesNamedByClient(t *testing.T) {
	need(t)
	needServers(t, "etcd")
	srv := startServer(t, "--sim")
	tb := newTab(t)
	tb.open(srv.URL + "/sim?scenario=etcd-mutex-queue")
	tb.until("etcd-mutex-queue's run", settled(serviceRun, 0)+` && document.getElementById('scenario').value === 'etcd-mutex-queue'`)
	for k := 1; k <= 3; k++ {
		tb.key(kb.ArrowRight)
		tb.until(fmt.Sprintf("step %d", k), settled(serviceRun, k))
	}
	got := eval[[]string](tb, `[...document.querySelectorAll('.run svg.lane [data-node] .label.data')].map(t => t.textContent)`)
	if !slices.Equal(got, []string{"C1", "C2", "C3"}) {
		t.Errorf("etcd's nodes read %q, want C1, C2, C3", got)
	}
}

// ZooKeeper's deadlock in the browser: two lock parents, each a lane of
// its own; C1 holds the first and waits in the second, C2 the reverse, by
// their sessions' second nodes. The cycle is drawn across the lanes while
// it stands, and the note says who waits for whom. Once C2's session has
// expired, C1 holds both locks and no part of the cycle is left.
func TestClassroomDrawsZooKeeperDeadlock(t *testing.T) {
	need(t)
	srv := startServer(t, "--sim")
	tb := newTab(t)
	tb.open(srv.URL + "/sim?scenario=zk-deadlock&strategy=predecessor")
	scope := run("predecessor")
	tb.until("zk-deadlock's run", settled(scope, 0)+` && document.getElementById('scenario').value === 'zk-deadlock'`)
	for k := 1; k <= 4; k++ {
		tb.key(kb.ArrowRight)
		tb.until(fmt.Sprintf("step %d", k), settled(scope, k))
	}
	// A ZooKeeper node's data label is its client's name, quoted.
	lanesJS := strings.Replace(strings.ReplaceAll(sceneLanesJS, `.split(' · ')[0]`, `.replace(/[“”]/g, '')`),
		`'.run svg.locks > svg.lane'`, jsString(scope+` svg.locks > svg.lane`), 1)
	lanes := eval[[]sceneLane](tb, lanesJS)
	var got []string
	for _, l := range lanes {
		got = append(got, fmt.Sprintf("holds %v, waits %v", l.Holders, l.Waiters))
	}
	if want := []string{"holds [C1], waits [C2]", "holds [C2], waits [C1]"}; !slices.Equal(got, want) {
		t.Errorf("the cycle's step draws the locks %q, want %q", got, want)
	}
	if len(lanes) == 2 && lanes[1].Lock != lanes[0].Lock+"-2" {
		t.Errorf("the lanes are %s and %s, want the run's lock and the one beside it", lanes[0].Lock, lanes[1].Lock)
	}
	links := eval[[]string](tb, `[...document.querySelectorAll(`+jsString(scope+` svg.locks .cycle-link`)+`)].filter(p => p.dataset.fromLock !== p.dataset.toLock).map(p => p.dataset.cycleLink).sort()`)
	if !slices.Equal(links, []string{"C1", "C2"}) {
		t.Errorf("links of the cycle across the locks: %v, want one for C1 and one for C2", links)
	}
	note := eval[string](tb, `(n => n && !n.hidden ? n.textContent : '')(document.querySelector(`+jsString(scope+` .cycle-note`)+`))`)
	if !strings.Contains(note, "C1 → C2 → C1") {
		t.Errorf("the cycle's note %q: want it to name C1 → C2 → C1", note)
	}
	tb.screenshot("classroom-zk-deadlock.png")

	// Step 5: C2 is killed; its session expires and C1 gets the second lock.
	tb.key(kb.ArrowRight)
	tb.until("step 5", settled(scope, 5))
	got = nil
	for _, l := range eval[[]sceneLane](tb, lanesJS) {
		got = append(got, fmt.Sprintf("holds %v, waits %v", l.Holders, l.Waiters))
	}
	if want := []string{"holds [C1], waits []", "holds [C1], waits []"}; !slices.Equal(got, want) {
		t.Errorf("after C2's session expired the locks %q, want %q", got, want)
	}
	if n := eval[int](tb, `document.querySelectorAll(`+jsString(scope+` svg.locks .cycle-link, `+scope+` svg.locks [data-cycle=true]`)+`).length`); n != 0 {
		t.Errorf("after C2's session expired, %d parts of the cycle are still drawn", n)
	}
}

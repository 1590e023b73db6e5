package web

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/views"
)

// lastWindow is the window the viewer's last frame said its nodes are.
func (v *viewer) lastWindow() *Window {
	v.t.Helper()
	var f Frame
	if err := json.Unmarshal(v.last, &f); err != nil {
		v.t.Fatalf("decode frame: %v", err)
	}
	return f.Window
}

// checkWindow fails unless got, with win, is a true window of whole: each
// run's nodes are whole's at those positions, the folds are the rest with
// their holders counted, and the counts are whole's.
func checkWindow(t *testing.T, got lockqueue.Snapshot, win *Window, whole lockqueue.Snapshot) {
	t.Helper()
	if win == nil {
		t.Fatal("no window on a frame of a long queue")
	}
	if win.Total != len(whole.Nodes) {
		t.Errorf("window total %d, queue has %d", win.Total, len(whole.Nodes))
	}
	holding := 0
	for _, n := range whole.Nodes {
		if n.Holding {
			holding++
		}
	}
	if win.Holding != holding {
		t.Errorf("window says %d holding, queue has %d", win.Holding, holding)
	}
	k, covered := 0, 0
	for _, r := range win.Runs {
		for i := r[0]; i < r[0]+r[1]; i++ {
			if k >= len(got.Nodes) || got.Nodes[k].Name != whole.Nodes[i].Name {
				t.Fatalf("run %v: node %d is not the queue's node %d (%s)", r, k, i, whole.Nodes[i].Name)
			}
			k++
		}
		covered += r[1]
	}
	if k != len(got.Nodes) {
		t.Errorf("runs cover %d nodes, %d sent", k, len(got.Nodes))
	}
	for _, f := range win.Folds {
		h := 0
		for i := f[0]; i <= f[1]; i++ {
			if whole.Nodes[i].Holding {
				h++
			}
		}
		if h != f[2] {
			t.Errorf("fold %v: %d holders in it", f, h)
		}
		covered += f[1] - f[0] + 1
	}
	if covered != len(whole.Nodes) {
		t.Errorf("runs and folds cover %d positions of %d", covered, len(whole.Nodes))
	}
}

// A lock page's socket on a 100,000-node queue gets the part the page
// shows: the head, the tail, the holders and the window asked for, in a
// frame of tens of KB; a change is a delta of that part; another window
// brings those nodes. A queue within windowWholeUpTo comes whole.
func TestWindowedSocket(t *testing.T) {
	e := newEnv(t, Config{})
	f := gozkFolder("/huge", 100_000)
	f.watchPred = true
	e.hub.Publish(f.snapshot())
	whole, _ := e.hub.Latest("/huge")

	for _, tc := range []struct {
		name   string
		query  string
		want   []int // positions that must be sent
		budget int   // JSON bytes of the first frame
	}{
		{"the first page", "window=0:100", []int{0, 99, 99_999}, 120 << 10},
		{"a page in the middle", "window=50000:100", []int{0, 50_000, 50_099, 99_950}, 120 << 10},
		{"a node picked by name", "window=0:100&node=" + url.QueryEscape(whole.Nodes[73_210].Name), []int{73_210}, 120 << 10},
		{"past the end, clamped to the last page", "window=200000:100", []int{99_900, 99_999}, 120 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := e.mustDial(t, "/huge&"+tc.query)
			v.next()
			if len(v.last) > tc.budget {
				t.Errorf("first frame %d bytes of JSON, want at most %d (the whole queue would be megabytes)", len(v.last), tc.budget)
			}
			win := v.lastWindow()
			checkWindow(t, v.snap, win, whole)
			sent := map[string]bool{}
			for _, n := range v.snap.Nodes {
				sent[n.Name] = true
			}
			for _, i := range tc.want {
				if !sent[whole.Nodes[i].Name] {
					t.Errorf("node at %d (%s) not sent", i, whole.Nodes[i].Name)
				}
			}
			t.Logf("%s: %d nodes, %d bytes of JSON, window %d-%d, %d runs, %d folds", tc.name, len(v.snap.Nodes), len(v.last), win.From, win.To, len(win.Runs), len(win.Folds))
		})
	}

	// Changes reach a windowed viewer as deltas of its window.
	v := e.mustDial(t, "/huge&window=0:100")
	v.next()
	for _, change := range []struct {
		name string
		do   func()
	}{
		{"the holder releases", func() { f.remove(gozk(0, 0)) }},
		{"a waiter joins at the tail", func() { f.add(100_000) }},
		{"a waiter deep in the fold leaves", func() { f.remove(gozk(60_000, 60_000)) }},
	} {
		change.do()
		f.rev++
		e.hub.Publish(f.snapshot())
		v.next()
		whole, _ := e.hub.Latest("/huge")
		if v.kind != FrameDelta || len(v.last) > 8<<10 {
			t.Errorf("%s: %s frame of %d bytes, want a delta of a few KB", change.name, v.kind, len(v.last))
		}
		checkWindow(t, v.snap, v.lastWindow(), whole)
	}
}

// A short queue comes whole to a windowed socket, as to any other (with
// the lane's lines, which a page draws), and a malformed window is refused
// with a clear error.
func TestWindowedSocketShortQueueAndBadWindow(t *testing.T) {
	e := newEnv(t, Config{})
	f := gozkFolder("/short", windowWholeUpTo)
	e.hub.Publish(f.snapshot())
	plain := e.mustDial(t, "/short")
	plain.next()
	windowed := e.mustDial(t, "/short&window=0:100")
	windowed.next()
	if len(plain.snap.Nodes) != windowWholeUpTo || len(windowed.snap.Nodes) != windowWholeUpTo {
		t.Errorf("a short queue of %d nodes came as %d to a plain socket and %d to a windowed one", windowWholeUpTo, len(plain.snap.Nodes), len(windowed.snap.Nodes))
	}
	for i := range windowed.snap.Nodes {
		p, w := plain.snap.Nodes[i], windowed.snap.Nodes[i]
		if p.Lane() != nil || len(lines(w)) != 3 || !nodeEqual(&p, &w) {
			t.Fatalf("node %d: plain %s with %+v, windowed %s with %+v; want the same node, with its lane's only for the page", i, p.Name, p.Lane(), w.Name, w.Lane())
		}
	}
	if windowed.lastWindow() != nil {
		t.Error("a short queue's frame has a window")
	}

	for _, bad := range []string{"window=x", "window=0", "window=-1:100", "window=0:0", "window=0:100000"} {
		code, _, body := do(t, http.MethodGet, e.ts.URL+"/ws?path=/short&"+bad, "", nil)
		if code != http.StatusBadRequest {
			t.Errorf("%s: status %d (%s), want 400", bad, code, body)
		}
	}
}

// windowOf reads only the nodes a window shows, with the facts of the
// whole queue read once per snapshot: its windows are those of a pass over
// every node (windowOfEveryNode, the way it was first written), on queues
// with holders, zombies and alerted nodes here and there or everywhere,
// windows at the ends and in the middle, a node selected inside, outside
// or past the cap of drawn nodes.
func TestWindowOfMatchesAPassOverEveryNode(t *testing.T) {
	base := gozkFolder("/w", 5000).snapshot()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name                      string
		holders, zombies, alerted int // how many, at random positions
		children                  int // waiters on the parent's children
	}{
		{"one holder", 0, 0, 0, 0},
		{"a few of each", 5, 7, 30, 3},
		{"past the cap", 150, 150, 120, 0},
		{"every node a zombie", 0, 5000, 0, 0},
		{"every node holding", 5000, 0, 0, 0},
	} {
		s := base
		s.Nodes = slices.Clone(base.Nodes)
		for range tc.holders {
			s.Nodes[rng.IntN(len(s.Nodes))].Holding = true
		}
		for range tc.zombies {
			s.Nodes[rng.IntN(len(s.Nodes))].Zombie = true
		}
		for range tc.children {
			s.Nodes[rng.IntN(len(s.Nodes))].WaitsOn = lockqueue.OnChildren
		}
		if tc.zombies == len(s.Nodes) {
			for i := range s.Nodes {
				s.Nodes[i].Zombie = true
			}
		}
		if tc.holders == len(s.Nodes) {
			for i := range s.Nodes {
				s.Nodes[i].Holding = true
			}
		}
		if tc.alerted > 0 {
			a := lockqueue.Alert{Kind: "test", Message: "alerted"}
			for range tc.alerted {
				a.Nodes = append(a.Nodes, s.Nodes[rng.IntN(len(s.Nodes))].Name)
			}
			s.Alerts = []lockqueue.Alert{a}
		}
		facts := readWindowFacts(&s)
		for _, v := range []view{
			{on: true, from: 0, size: 100},
			{on: true, from: 2500, size: 100},
			{on: true, from: 4990, size: 100},
			{on: true, from: 30, size: 1000},
			{on: true, from: 0, size: 100, node: s.Nodes[3210].Name},
			{on: true, from: 0, size: 100, node: s.Nodes[4970].Name},
			{on: true, from: 2500, size: 100, node: s.Nodes[2550].Name},
			{on: true, from: 0, size: 100, node: "no-such-node"},
		} {
			wantSnap, wantWin := windowOfEveryNode(s, v)
			gotSnap, gotWin := windowOf(s, v, facts)
			want, _ := json.Marshal(Frame{Type: FrameSnapshot, Snapshot: &wantSnap, Window: wantWin})
			got, _ := json.Marshal(Frame{Type: FrameSnapshot, Snapshot: &gotSnap, Window: gotWin})
			if string(got) != string(want) {
				t.Errorf("%s, window %d:%d node %q: the frames differ\n got window %+v\nwant window %+v", tc.name, v.from, v.size, v.node, gotWin, wantWin)
			}
		}
	}
}

// windowOfEveryNode is windowOf as a pass over every node of the queue
// (the lane's lines stamped as windowOf does: not what it checks).
func windowOfEveryNode(s lockqueue.Snapshot, v view) (lockqueue.Snapshot, *Window) {
	n := len(s.Nodes)
	if !v.on || n <= windowWholeUpTo {
		return views.StampLane(s), nil
	}
	from := min(v.from, max(0, n-v.size))
	w := &Window{Total: n, From: from, To: min(n, from+v.size)}
	alerted := map[string]bool{}
	for _, a := range s.Alerts {
		for _, name := range a.Nodes {
			alerted[name] = true
		}
	}
	show := make([]bool, n)
	sent := 0
	mark := func(i int) {
		if !show[i] {
			show[i] = true
			sent++
		}
	}
	for i := range min(windowEnds, n) {
		mark(i)
	}
	for i := max(0, n-windowEnds); i < n; i++ {
		mark(i)
	}
	for i := w.From; i < w.To; i++ {
		mark(i)
	}
	for i := range s.Nodes {
		nd := &s.Nodes[i]
		if nd.Holding {
			w.Holding++
		}
		if show[i] {
			continue
		}
		if nd.Name == v.node || (nd.Holding || nd.Zombie || alerted[nd.Name]) && !w.Capped {
			if nd.Name != v.node && w.Extra >= windowMaxExtra {
				w.Capped = true
				continue
			}
			mark(i)
			w.Extra++
		}
	}
	nodes := make([]lockqueue.Node, 0, sent)
	for i := 0; i < n; {
		j := i
		for j < n && show[j] == show[i] {
			j++
		}
		if show[i] {
			nodes = append(nodes, s.Nodes[i:j]...)
			w.Runs = append(w.Runs, [2]int{i, j - i})
		} else {
			holding := 0
			for k := i; k < j; k++ {
				if s.Nodes[k].Holding {
					holding++
				}
			}
			w.Folds = append(w.Folds, [3]int{i, j - 1, holding})
		}
		i = j
	}
	w.Targets = foldedTargetsEveryNode(s, nodes, show)
	if len(nodes) < n {
		w.Note = views.FoldNote(n, w.From, w.To, len(nodes), w.Extra, w.Capped)
	}
	s.Nodes = nodes
	return views.StampLane(s), w
}

// foldedTargetsEveryNode is foldedTargets as a pass over every node: it finds the positions of the nodes that the sent nodes wait
// for, watch or are blocked by but that were not sent.
func foldedTargetsEveryNode(s lockqueue.Snapshot, sent []lockqueue.Node, show []bool) map[string]int {
	in := make(map[string]bool, len(sent))
	for i := range sent {
		in[sent[i].Name] = true
	}
	want := map[string]bool{}
	need := func(name string) {
		if name != "" && !in[name] {
			want[name] = true
		}
	}
	prefix := strings.TrimSuffix(s.Path, "/") + "/"
	for i := range sent {
		nd := &sent[i]
		need(nd.WaitsFor)
		for _, b := range nd.BlockedBy() {
			need(b)
		}
		p := prefix
		if nd.Folder() != "" {
			p = nd.Folder() + "/"
		}
		for _, w := range nd.Watching {
			if name, ok := strings.CutPrefix(w, p); ok && !strings.Contains(name, "/") {
				need(name)
			}
		}
	}
	if len(want) == 0 {
		return nil
	}
	at := make(map[string]int, len(want))
	for i := range s.Nodes {
		if !show[i] && want[s.Nodes[i].Name] {
			at[s.Nodes[i].Name] = i
		}
	}
	return at
}

package web

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/zklockviz/zklockviz/lockqueue"
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

// A short queue comes whole to a windowed socket, as to any other, and a
// malformed window is refused with a clear error.
func TestWindowedSocketShortQueueAndBadWindow(t *testing.T) {
	e := newEnv(t, Config{})
	f := gozkFolder("/short", windowWholeUpTo)
	e.hub.Publish(f.snapshot())
	plain := e.mustDial(t, "/short")
	plain.next()
	windowed := e.mustDial(t, "/short&window=0:100")
	windowed.next()
	if string(plain.last) != string(windowed.last) {
		t.Error("a windowed socket got another first frame for a short queue")
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

package web

import (
	"encoding/json"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/hub"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/views"
)

// The lane's words and lines are the server's: every page carries the
// words (#lane-words), and a lock page's socket's frames bring each node's
// lines (lockqueue.LaneLines).
func TestLaneWordsAndLines(t *testing.T) {
	ts, _ := partsServer(t, hub.New())

	_, page := pageGet(t, ts.URL+"/sim", nil)
	m := regexp.MustCompile(`(?s)<script id="lane-words" type="application/json">(.*?)</script>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no #lane-words in the page:\n%s", page)
	}
	var words views.LaneWords
	if err := json.Unmarshal([]byte(m[1]), &words); err != nil {
		t.Fatalf("#lane-words %s: %v", m[1], err)
	}
	if len(words.Modes) != len(views.Words(nil).Modes) || words.Stalled != views.Stalled || words.Provenance[lockqueue.ByServer] != "confirmed" {
		t.Errorf("#lane-words %+v", words)
	}
	for _, w := range words.Modes {
		if w.Label != views.ModeLabel(w.Mode) {
			t.Errorf("mode %s: %q, want %q", w.Mode, w.Label, views.ModeLabel(w.Mode))
		}
	}

	// The lane's lines come with the nodes of a lock page's socket's
	// frames, and again with a node whose lines change.
	h := hub.New()
	reg := zkRegistry(nil, nil)
	srv, err := New(Config{Hub: h, Services: reg, Pages: true, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	e := &testEnv{hub: h, srv: srv, ts: httptest.NewServer(srv)}
	t.Cleanup(e.ts.Close)
	const curator = "_c_8f3a1b2c-1111-2222-3333-444455556666-__READ__0000000003"
	const foreign = "some-foreign-child-with-a-long-name"
	snap := pageSnapshot("/lane", lockqueue.Connected, curator, "W_0000000012")
	h.Publish(snap)
	v := e.mustDial(t, "/lane&window=0:100&parts=1")
	v.next()
	sameJSON(t, "the first frame's lines", frameLanes(t, v.last), map[string][]string{
		curator: {"8f3a…READ#3", "“LOCK1”", "s 0x1000"}, "W_0000000012": {"W_0000000012", "“LOCK2”", "s 0x1001"},
	})
	if !strings.Contains(frameParts(t, v.last), `<tr data-row="W_0000000012"`) {
		t.Errorf("the first frame's parts have no row of W_0000000012:\n%s", frameParts(t, v.last))
	}
	snap.Nodes = slices.Clone(snap.Nodes)
	snap.Nodes[1].Data = "LOCK9"
	snap.Revision++
	snap.Nodes = append(snap.Nodes, lockqueue.Node{Name: foreign, Seq: -1, Mode: lockqueue.Unknown})
	h.Publish(snap)
	v.next()
	sameJSON(t, "the next frame's lines", frameLanes(t, v.last), map[string][]string{
		"W_0000000012": {"W_0000000012", "“LOCK9”", "s 0x1001"}, foreign: {"some-f…g-name", "—", ""},
	})
}

// frameLanes are the lane's lines of the nodes a frame brings, whole or
// as a delta's upserts, by name.
func frameLanes(t *testing.T, b []byte) map[string][]string {
	t.Helper()
	var f Frame
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("frame %s: %v", b, err)
	}
	var nodes []lockqueue.Node
	switch {
	case f.Snapshot != nil:
		nodes = f.Snapshot.Nodes
	case f.Delta != nil:
		nodes = f.Upsert
	}
	out := map[string][]string{}
	for _, n := range nodes {
		if l := n.Lane(); l != nil {
			out[n.Name] = l.Lines
		}
	}
	return out
}

func frameParts(t *testing.T, b []byte) string {
	t.Helper()
	var x pageExtra
	if err := json.Unmarshal(b, &x); err != nil {
		t.Fatalf("frame %s: %v", b, err)
	}
	return x.Parts
}

// lines are the lines n's lane writes under it, nil when it brings none.
func lines(n lockqueue.Node) []string {
	if l := n.Lane(); l != nil {
		return l.Lines
	}
	return nil
}

package web

import (
	"encoding/json"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/hub"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/views"
)

// The lane's words and name labels are the server's: every page carries
// the words (#lane-words), and a lock page's socket brings views.ShortName
// of each node with the frame that brings it.
func TestLaneWordsAndNames(t *testing.T) {
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

	// The lane's labels come with the frames of a lock page's socket:
	// each node's once, with the frame that brings it, and none for a
	// node that is its own label.
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
	sameJSON(t, "the first frame's names", frameNames(t, v.last), map[string]string{curator: "8f3a…READ#3"})
	if !strings.Contains(frameParts(t, v.last), `<tr data-row="W_0000000012"`) {
		t.Errorf("the first frame's parts have no row of W_0000000012:\n%s", frameParts(t, v.last))
	}
	snap.Revision++
	snap.Nodes = append(snap.Nodes, lockqueue.Node{Name: foreign, Seq: -1, Mode: lockqueue.Unknown})
	h.Publish(snap)
	v.next()
	sameJSON(t, "the next frame's names", frameNames(t, v.last), map[string]string{foreign: views.ShortName(foreign, -1)})
}

// frameNames and frameParts read what a parts socket's frame carries
// beside the nodes.
func frameNames(t *testing.T, b []byte) map[string]string {
	t.Helper()
	var x pageExtra
	if err := json.Unmarshal(b, &x); err != nil {
		t.Fatalf("frame %s: %v", b, err)
	}
	if x.Names == nil {
		return map[string]string{}
	}
	return x.Names
}

func frameParts(t *testing.T, b []byte) string {
	t.Helper()
	var x pageExtra
	if err := json.Unmarshal(b, &x); err != nil {
		t.Fatalf("frame %s: %v", b, err)
	}
	return x.Parts
}

package web

import (
	"encoding/json"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/hub"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/lockservice"
	"github.com/zklockviz/zklockviz/views"
)

// A fifth service brings its own words through the seam, and the lock page
// says them with no change to views or static: the fixture of seam_test.go,
// registered with words of its own, gets its legend (and no other
// service's) in the page's #lane-words, which static/queue.js draws as it
// is, and its own column headers, source and read-only sentence.
func TestFifthServiceWords(t *testing.T) {
	h := hub.New()
	reg := zkRegistry(&watchList{"/locks/orders"}, nil)
	fix, r := fixtureService(h)
	fix.Words = &lockservice.Words{
		Legend: append(lockservice.ModeItems(lockqueue.Exclusive), lockservice.Holding,
			lockservice.LegendItem{Key: "rule", Swatch: "rule", Label: "next in the fixture's line", Title: "the fixture's own rule"}),
		Columns:  lockservice.Columns{Order: "ticket", Client: "caller", Lease: "fixture lease"},
		Source:   func(src string) (string, string) { return "fed by", src + " feed" },
		ReadOnly: "the fixture is fixed data.",
	}
	if err := reg.Register(fix); err != nil {
		t.Fatal(err)
	}
	srv, err := New(Config{Hub: h, Services: reg, Pages: true, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	if err := r.Watch("orders"); err != nil {
		t.Fatal(err)
	}

	_, page := pageGet(t, ts.URL+"/lock?service=fixture&path=orders", nil)
	m := regexp.MustCompile(`(?s)<script id="lane-words" type="application/json">(.*?)</script>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no #lane-words in the page:\n%s", page)
	}
	var words views.LaneWords
	if err := json.Unmarshal([]byte(m[1]), &words); err != nil {
		t.Fatalf("#lane-words %s: %v", m[1], err)
	}
	want := []views.LegendItem{
		{Key: "exclusive", Swatch: "mode", Label: views.ModeLabel(lockqueue.Exclusive)},
		lockservice.Holding,
		{Key: "rule", Swatch: "rule", Label: "next in the fixture's line", Title: "the fixture's own rule"},
	}
	sameJSON(t, "the fixture's legend", words.Legend, want)
	if words.Legends != nil {
		t.Errorf("a lock page carries other services' legends: %v", words.Legends)
	}

	head := regexp.MustCompile(`(?s)<thead>.*?</thead>`).FindString(page)
	var cols []string
	for _, c := range regexp.MustCompile(`<th scope="col">([^<]*)</th>`).FindAllStringSubmatch(head, -1) {
		cols = append(cols, c[1])
	}
	if got, want := strings.Join(cols, "|"), "#|node|mode|state|waits for|ticket|caller|fixture lease|data|time|alerts"; got != want {
		t.Errorf("the fixture's table headers %s, want %s", got, want)
	}
	for _, want := range []string{`data-lock-query="service=fixture&amp;path=orders"`, "fed by", "fixture feed"} {
		if !strings.Contains(page, want) {
			t.Errorf("the fixture's lock page lacks %q", want)
		}
	}

	// A lock the fixture does not follow says the fixture's read-only
	// sentence.
	_, page = pageGet(t, ts.URL+"/lock?service=fixture&path=other", nil)
	if !strings.Contains(page, "Watching is read-only: the fixture is fixed data.") {
		t.Errorf("the fixture's unwatched lock page lacks its read-only sentence")
	}
}

package e2e

import (
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp/kb"
	"github.com/zklockviz/zklockviz/simulator/timespacetest"
)

// download is what the export link's URL answered, fetched from the page.
type download struct {
	Status      int    `json:"status"`
	Type        string `json:"type"`
	Disposition string `json:"disposition"`
	Body        string `json:"body"`
}

// exportSVG presses e (the export key), checks that it clicks the export
// link, and fetches what the link points at, as the download would.
func exportSVG(t *testing.T, tb *tab) (timespacetest.Diagram, download) {
	t.Helper()
	// The click is caught before the browser acts on it: the test reads
	// the file through fetch, so no download lands on the machine.
	tb.run(`window.exported = ''; document.addEventListener('click', (e) => {
  const a = e.target.closest && e.target.closest('a#export-svg');
  if (a) { window.exported = a.href; e.preventDefault(); }
}, {capture: true, once: true})`)
	tb.key("e")
	tb.until("the export link clicked", `window.exported !== ''`)
	if got := eval[string](tb, `document.getElementById('export-svg').hasAttribute('download') ? window.exported : ''`); !strings.Contains(got, "/timespace.svg") {
		t.Fatalf("e clicked a link to %q, want a download of the run's timespace.svg", got)
	}
	dl := evalAwait[download](tb, `fetch(window.exported).then(async (r) => ({status: r.status, type: r.headers.get('Content-Type'), disposition: r.headers.get('Content-Disposition') || '', body: await r.text()}))`)
	if dl.Status != 200 || dl.Type != "image/svg+xml" || !strings.HasPrefix(dl.Disposition, "attachment") || !strings.HasPrefix(dl.Body, "<svg ") {
		t.Fatalf("the export answered %d, %q, %q, starting %.60q", dl.Status, dl.Type, dl.Disposition, dl.Body)
	}
	d, err := timespacetest.Parse([]byte(dl.Body))
	if err != nil {
		t.Fatal(err)
	}
	return d, dl
}

// The classroom's "export SVG" link (and its key, e) downloads the shown
// run as a time–space diagram drawn by the server from the whole recorded
// run: on ZooKeeper's GC pause with fencing off, the clients' lanes, the
// tokens and the violation's interval; on Redis, the run of the service it
// was started on.
func TestClassroomExportsTimeSpaceSVG(t *testing.T) {
	need(t)
	srv := startServer(t, "--sim")
	tb := newTab(t)
	tb.open(srv.URL + "/sim?scenario=gc-pause&fencing=0")
	tb.until("gc-pause's run", settled(serviceRun, 0)+` && document.getElementById('scenario').value === 'gc-pause'`)
	if eval[bool](tb, `document.getElementById('export-svg').hasAttribute('href')`) {
		t.Error("the export link points somewhere before the first step: there is nothing to draw")
	}
	if got := eval[string](tb, `document.getElementById('shortcuts').textContent`); !strings.Contains(got, "export the run as a time–space diagram") {
		t.Errorf("the keys' help does not list e: %q", got)
	}
	for k := 1; !eval[bool](tb, `document.getElementById('step').disabled`); k++ {
		tb.key(kb.ArrowRight)
		tb.until("the next step", settled(serviceRun, k))
	}
	d, dl := exportSVG(t, tb)
	if got := d.LanesOf("client"); !slices.Equal(got, []string{"LOCK1", "LOCK2"}) {
		t.Errorf("client lanes %v, want LOCK1 and LOCK2", got)
	}
	if !slices.Equal(d.LanesOf("server"), []string{"ZooKeeper"}) || len(d.LanesOf("resource")) != 1 {
		t.Errorf("lanes %v: want ZooKeeper's and the resource's", d.Lanes)
	}
	if d.Marks["violation"] != 1 || d.Marks["pause"] == 0 || d.Marks["grant"] < 2 {
		t.Errorf("%d violation intervals, %d pause spans, %d grants: want 1, some, 2 or more", d.Marks["violation"], d.Marks["pause"], d.Marks["grant"])
	}
	id := eval[string](tb, `document.querySelector('.run').dataset.run || ''`)
	if id != "" && !strings.Contains(dl.Disposition, id) {
		t.Errorf("the file %q is not named after run %s", dl.Disposition, id)
	}

	// Another service's run: the link asks the classroom it was started on.
	tb.open(srv.URL + "/sim?scenario=redis-px-pause")
	tb.until("redis-px-pause's run", settled(serviceRun, 0)+` && document.getElementById('scenario').value === 'redis-px-pause'`)
	for k := 1; k <= 2; k++ {
		tb.key(kb.ArrowRight)
		tb.until("the next step", settled(serviceRun, k))
	}
	d, _ = exportSVG(t, tb)
	if !slices.Equal(d.LanesOf("server"), []string{"Redis"}) || !slices.Equal(d.LanesOf("client"), []string{"C1", "C2"}) {
		t.Errorf("redis-px-pause's lanes %v, want Redis's and C1's and C2's", d.Lanes)
	}
}

package e2e

import (
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/simulator/timespacetest"
)

// The Lab page as a person uses it: pick Redis, fencing off, a short run
// with pauses, start. While it runs the page shows a belief lane per
// client and the counts the server sends, and under them zklockviz's own
// record of the lock (its reader's, as a user's serve would read it); when it ends, the run's
// time–space diagram (the classroom's drawing, a lane per client) and the
// report's links, the HTML one answering the same report.
func TestLabPageRun(t *testing.T) {
	need(t)
	srv := startServer(t, "--sim")
	tb := newTab(t)
	tb.open(srv.URL + "/lab")
	tb.until("the Lab page's form", `document.getElementById('lab-form')`)
	tb.run(`document.getElementById('lab-service').value = 'redis';
document.getElementById('lab-clients').value = '2';
document.getElementById('lab-nemesis').value = 'pause';
document.getElementById('lab-duration').value = '5s';
document.getElementById('lab-fencing').checked = false;
document.getElementById('lab-start').click()`)
	tb.until("a belief lane per client while the run goes",
		`document.querySelector('.lab-live[data-done="false"]') && document.querySelectorAll('.lab-lane').length === 2 && document.querySelector('.lab-belief')`)
	if got := eval[string](tb, `document.querySelector('.lab-counts').textContent`); !strings.Contains(got, "two believers:") || !strings.Contains(got, "lost updates:") {
		t.Errorf("the counts say %q", got)
	}
	if !eval[bool](tb, `document.getElementById('lab-stop').disabled === false && document.getElementById('lab-start').disabled`) {
		t.Error("while a run goes, stop is not offered, or start still is")
	}
	// zklockviz's own record of the run's lock, under the belief lanes:
	// its reader's holds, one of them at least by a client a belief lane
	// names, and its word's count so far.
	tb.until("zklockviz's record with a hold by a client of the belief lanes", `(() => {
  const clients = [...document.querySelectorAll('.lab-lane')].map((l) => l.dataset.client);
  const lane = document.querySelector('.lab-record-lane');
  return lane && lane.textContent.includes("zklockviz's") &&
    [...document.querySelectorAll('.lab-record-lane rect[data-client]')].some((r) => clients.includes(r.dataset.client));
})()`)
	if got := eval[string](tb, `document.querySelector('.lab-word').textContent`); !strings.Contains(got, "zklockviz's word") || !strings.Contains(got, "mismatches with the clients'") {
		t.Errorf("the word's count says %q", got)
	}
	tb.until("the run's end, with its diagram", `document.querySelector('.lab-live[data-done="true"] .lab-timespace svg')`)
	tb.screenshot("lab.png")
	svg := eval[string](tb, `document.querySelector('.lab-timespace svg').outerHTML`)
	d, err := timespacetest.Parse([]byte(svg))
	if err != nil {
		t.Fatal(err)
	}
	if got := d.LanesOf("client"); len(got) != 2 || d.Marks["grant"] == 0 {
		t.Errorf("the diagram's client lanes %v, %d grants: want c1 and c2, and grants", got, d.Marks["grant"])
	}
	report := evalAwait[string](tb, `fetch(document.querySelector('a.lab-report-html').href).then((r) => r.text())`)
	if !strings.Contains(report, `data-service="redis"`) || !strings.Contains(report, "--service redis") {
		t.Errorf("the HTML report has no Redis section with its command: %.300q", report)
	}
	if !eval[bool](tb, `document.getElementById('lab-start').disabled === false`) {
		t.Error("start is not offered again once the run ended")
	}
}

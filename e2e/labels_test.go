package e2e

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/third_party/zk"
	"github.com/zklockviz/zklockviz/views"
)

// serverModes reads the mode column of the lock page as the server paints it
// (templ), keyed by node name.
func serverModes(t *testing.T, url string) map[string]string {
	t.Helper()
	body := get(t, url)
	out := map[string]string{}
	row := regexp.MustCompile(`(?s)<tr data-row="([^"]+)"[^>]*>(.*?)</tr>`)
	cell := regexp.MustCompile(`(?s)<td[^>]*>(.*?)</td>`)
	for _, m := range row.FindAllStringSubmatch(body, -1) {
		cells := cell.FindAllStringSubmatch(m[2], -1)
		if len(cells) < 3 {
			t.Fatalf("row %s: %d cells", m[1], len(cells))
		}
		out[m[1]] = cells[2][1]
	}
	return out
}

// One label per mode everywhere: the legend, the server's table, the
// browser's table, the node tooltips; kazoo's __lock__ keeps one mode
// whether readers are beside it or not; counts agree with their nouns.
func TestModeLabelsAndPlurals(t *testing.T) {
	need(t)
	const path = "/e2e/labels"
	admin := connect(t)
	ensurePath(t, admin, path)
	create := func(name string) string {
		t.Helper()
		p, err := admin.Create(path+"/"+name, []byte("x"), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
		if err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		return p[len(path)+1:]
	}
	const hex = "0123456789abcdef0123456789abcdef"
	writer := create(hex + "__lock__")
	reader := create(hex + "__rlock__")

	srv := startServer(t, "--watch", path)
	tb := newTab(t)
	tb.open(srv.URL + "/lock?path=" + path)
	tb.until("two nodes", nodeCount(2))

	// The browser's labels are the server's: the lane's modes come from the
	// page (#lane-words), which has no other copy.
	js := evalAwait[map[string]string](tb, `import('/static/queue.js').then(m => Object.fromEntries(['read', 'write', 'exclusive', 'lease', 'unknown', 'no-such-mode'].map(k => [k, m.modeLabel(k)])))`)
	if js["no-such-mode"] != views.ModeLabel(lockqueue.Unknown) {
		t.Errorf("an unknown mode reads %q, want %q", js["no-such-mode"], views.ModeLabel(lockqueue.Unknown))
	}
	for _, w := range views.Words(nil).Modes {
		m, l := w.Mode, w.Label
		if js[string(m)] != l {
			t.Errorf("mode %s: the browser says %q, the server %q", m, js[string(m)], l)
		}
		if got := eval[string](tb, `(document.querySelector('#legend [data-legend=`+string(m)+`]') || {}).textContent || ''`); got != l {
			t.Errorf("legend for %s reads %q, want %q", m, got, l)
		}
	}

	check := func(when string, want map[string]lockqueue.Mode) {
		t.Helper()
		srvModes := serverModes(t, srv.URL+"/lock?path="+path)
		for name, m := range want {
			label := views.ModeLabel(m)
			if srvModes[name] != label {
				t.Errorf("%s: the server's table calls %s %q, want %q", when, name, srvModes[name], label)
			}
			tb.until(fmt.Sprintf("%s: %s drawn as %s", when, name, m), fmt.Sprintf(`document.querySelector('#lane [data-node=%s][data-mode=%s]')`, jsString(name), jsString(string(m))))
			tip := eval[string](tb, fmt.Sprintf(`document.querySelector('#lane [data-node=%s] > title').textContent`, jsString(name)))
			if !strings.Contains(tip, label+" · ") {
				t.Errorf("%s: %s's tooltip %q does not call it %q", when, name, tip, label)
			}
			tb.until(fmt.Sprintf("%s: the table calls %s %s", when, name, label),
				fmt.Sprintf(`[...document.querySelectorAll('#table tbody tr')].some(tr => tr.textContent.includes(%s) && tr.querySelector('td.mode').textContent === %s)`, jsString(name), jsString(label)))
		}
	}
	check("beside a reader", map[string]lockqueue.Mode{writer: lockqueue.Exclusive, reader: lockqueue.Read})
	if err := admin.Delete(path+"/"+reader, -1); err != nil {
		t.Fatal(err)
	}
	tb.until("one node", nodeCount(1))
	check("alone", map[string]lockqueue.Mode{writer: lockqueue.Exclusive})
	tb.until("the caption counts no other node", `/: 1 holding, 0 other nodes/.test(document.getElementById('table').textContent)`)

	// A single foreign child and a single waiter: singular nouns.
	create(hex + "__lock__")
	foreign := path + "/not-a-lock"
	if _, err := admin.Create(foreign, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	tb.until("three nodes", nodeCount(3))
	tb.until("the caption counts one other node", `/: 1 holding, 2 other nodes/.test(document.getElementById('table').textContent)`)
	alerts := get(t, srv.URL+"/api/v1/lock?path="+path)
	if !strings.Contains(alerts, "1 child matches no lock recipe") {
		t.Errorf("foreign alert %q: want the singular", alerts)
	}
	if err := admin.Delete(foreign, -1); err != nil {
		t.Fatal(err)
	}
	tb.until("two nodes again", nodeCount(2))
	tb.until("the caption says one other node", `/: 1 holding, 1 other node\b(?!s)/.test(document.getElementById('table').textContent)`)
}

// get is the body of a GET.
func get(t testing.TB, url string) string {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("read %s: %v", url, err)
	}
	return string(b)
}

// The page's running clocks (queue.js tick) count on in the server's
// format (views.Duration), so a clock the server painted does not change
// its shape when the page takes it over.
func TestClockFormatMatchesServer(t *testing.T) {
	need(t)
	srv := startServer(t)
	tb := newTab(t)
	tb.open(srv.URL + "/")
	durations := []time.Duration{0, 4200 * time.Millisecond, 9950 * time.Millisecond, 37 * time.Second, 3*time.Minute + 4*time.Second,
		59*time.Minute + 59*time.Second, 2*time.Hour + 5*time.Minute, 47*time.Hour + 59*time.Minute, 3*24*time.Hour + 4*time.Hour}
	var ms []string
	for _, d := range durations {
		ms = append(ms, fmt.Sprint(d.Milliseconds()))
	}
	got := evalAwait[[]string](tb, `import('/static/queue.js').then(m => [`+strings.Join(ms, ",")+`].map(d => {
		const root = document.createElement('div');
		const t = Object.assign(document.createElement('span'), { textContent: '' });
		t.dataset.since = String(1e12);
		t.dataset.verb = '';
		root.append(t);
		m.tick(root, 1e12 + d);
		return t.textContent;
	}))`)
	for i, d := range durations {
		if want := views.Duration(d); i >= len(got) || got[i] != want {
			t.Errorf("%v: the page counts %q, the server %q", d, got[min(i, len(got)-1)], want)
		}
	}
}

// The time bar words moments in the page (timeline.js when: a drag moves
// between moments the server never worded) as the server does (views.When),
// so the status line and the bar quote a moment alike.
func TestWhenMatchesServer(t *testing.T) {
	need(t)
	srv := startServer(t)
	tb := newTab(t)
	tb.open(srv.URL + "/")
	moments := []time.Time{
		time.UnixMilli(0), time.UnixMilli(999), time.Date(2024, 2, 29, 23, 59, 59, 999_000_000, time.UTC),
		time.Date(2026, 11, 26, 14, 5, 7, 120_000_000, time.FixedZone("CET", 3600)), time.Date(2099, 12, 31, 0, 0, 0, 0, time.UTC),
	}
	var ms []string
	for _, m := range moments {
		ms = append(ms, fmt.Sprint(m.UnixMilli()))
	}
	got := evalAwait[[]string](tb, `import('/static/timeline.js').then(m => [`+strings.Join(ms, ",")+`].map(m.when))`)
	for i, m := range moments {
		if want := views.When(m); i >= len(got) || got[i] != want {
			t.Errorf("%v: the page says %q, the server %q", m, got[min(i, len(got)-1)], want)
		}
	}
}

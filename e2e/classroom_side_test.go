package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp/kb"
	"github.com/zklockviz/zklockviz/postgres/pglocal"
)

// needServers skips (or fails under CI=true) when a server scenario 12
// runs on is not installed.
func needServers(t *testing.T, bins ...string) {
	t.Helper()
	var missing error
	for _, b := range bins {
		if _, err := exec.LookPath(b); err != nil {
			missing = fmt.Errorf("%s is not installed: %w", b, err)
		}
	}
	if err := pglocal.Installed(); err != nil {
		missing = err
	}
	if missing == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(missing)
	}
	t.Skip(missing)
}

// Scenario 12 in the browser: five panes, one per service run, step in
// lockstep with the one set of controls to the story's end, and each pane
// shows the verdict its service earns on real servers.
func TestClassroomSideBySide(t *testing.T) {
	need(t)
	needServers(t, "redis-server", "etcd")
	srv := startServer(t, "--sim")
	tb := newTab(t)
	tb.open(srv.URL + "/sim?scenario=side-by-side")

	panes := `[...document.querySelectorAll('.run.side-pane')]`
	atStep := func(k int) string {
		return fmt.Sprintf(`%s.length === 5 && %s.every(p => p.dataset.step === '%d' && p.dataset.busy === 'false') && document.body.dataset.busy === 'false'`, panes, panes, k)
	}
	tb.until("five panes, ready", atStep(0)+` && `+panes+`.every(p => p.dataset.socket === 'open')`)
	if got := eval[[]string](tb, panes+`.map(p => p.dataset.service)`); fmt.Sprint(got) != "[zookeeper redis redis etcd postgres]" {
		t.Fatalf("panes' services %v, want ZooKeeper, Redis twice, etcd and PostgreSQL", got)
	}
	// Each pane has its own service's legend; the page's one legend, one
	// service's, is hidden.
	legends := eval[map[string]string](tb, `Object.fromEntries(`+panes+`.map(p => [p.dataset.service, [...p.querySelectorAll('.pane-legend:not([hidden]) li')].map(li => li.dataset.legend).join(' ')]))`)
	if legends["zookeeper"] == "" || legends["redis"] == "" || legends["zookeeper"] == legends["redis"] || legends["zookeeper"] == legends["postgres"] {
		t.Errorf("panes' legends %q: want each pane its own service's", legends)
	}
	if eval[bool](tb, `!document.getElementById('legend').hidden`) {
		t.Error("the page's one legend shows over five services' panes")
	}
	total := eval[int](tb, `Number(document.getElementById('scrub').max)`)
	// Note every pane's step at every change, as a person sees them (a
	// MutationObserver runs once the page has finished a change): the
	// panes never show different steps.
	tb.run(`window.__steps = [];
new MutationObserver(() => window.__steps.push([...document.querySelectorAll('.run.side-pane')].map(p => p.dataset.step)))
  .observe(document.getElementById('runs'), {subtree: true, attributes: true, attributeFilter: ['data-step']});`)
	together := func(when string) {
		t.Helper()
		for _, seen := range eval[[][]string](tb, `window.__steps`) {
			for _, k := range seen {
				if k != seen[0] {
					t.Fatalf("%s: the panes showed steps %v at once", when, seen)
				}
			}
		}
	}
	for k := 1; k <= total; k++ {
		tb.key(kb.ArrowRight)
		tb.until(fmt.Sprintf("every pane at step %d", k), atStep(k))
	}
	together("stepping with →")
	if got := eval[string](tb, `document.getElementById('step-info').textContent`); got != fmt.Sprintf("step %d of %d · done", total, total) {
		t.Errorf("step info %q, want the story done", got)
	}
	verdicts := eval[map[string]string](tb, `Object.fromEntries(`+panes+`.map(p => {
  const v = p.querySelector('.side-verdict');
  return [p.dataset.scenario, v.dataset.exclusion + '/' + v.dataset.stale];
}))`)
	want := map[string]string{
		"zk-side-by-side":          "held/fenced",
		"redis-side-by-side":       "broken/accepted",
		"redis-token-side-by-side": "held/fenced",
		"etcd-side-by-side":        "held/fenced",
		// Fencing is off there: the server refused the stale write.
		"pg-side-by-side": "held/server-refused",
	}
	for sc, w := range want {
		if verdicts[sc] != w {
			t.Errorf("%s: verdict %q, want %q (all: %v)", sc, verdicts[sc], w, verdicts)
		}
	}
	// One play control plays all five runs, still in lockstep.
	tb.key(kb.Home)
	tb.until("every pane back at step 0", atStep(0))
	tb.run(`window.__steps = []`)
	tb.key(" ")
	tb.until("played to the end", atStep(total)+` && document.body.dataset.playing === 'false'`)
	together("playing")
	if n := len(eval[[][]string](tb, `window.__steps`)); n < total {
		t.Errorf("playing showed %d changes, want every one of the %d steps", n, total)
	}
	meters := eval[[]string](tb, panes+`.map(p => p.querySelector('[data-meter="server requests/s"]').title)`)
	for i, m := range meters {
		if m == "" {
			t.Errorf("pane %d's requests meter says nothing of who counted", i)
		}
	}
}

// pathWithout is a PATH with every command of this one but names.
func pathWithout(t *testing.T, names ...string) string {
	t.Helper()
	bin := t.TempDir()
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if !slices.Contains(names, e.Name()) {
				// The first directory on PATH wins, as for the shell.
				os.Symlink(filepath.Join(dir, e.Name()), filepath.Join(bin, e.Name()))
			}
		}
	}
	return bin
}

// A server that is not installed: its panes say which package provides
// it, and the others still step together, with nothing in the console.
func TestClassroomSideBySideMissingServer(t *testing.T) {
	need(t)
	needServers(t)
	// serve inherits the test's environment.
	t.Setenv("PATH", pathWithout(t, "redis-server", "etcd"))
	srv := startServer(t, "--sim")
	tb := newTab(t)
	tb.open(srv.URL + "/sim?scenario=side-by-side")
	running := `[...document.querySelectorAll('.run.side-pane:not([data-unavailable])')]`
	atStep := func(k int) string {
		return fmt.Sprintf(`%s.length === 2 && %s.every(p => p.dataset.step === '%d' && p.dataset.busy === 'false') && document.body.dataset.busy === 'false'`, running, running, k)
	}
	tb.until("two panes running, three unavailable", atStep(0)+` && document.querySelectorAll('.run.side-pane[data-unavailable]').length === 3`)
	why := eval[map[string]string](tb, `Object.fromEntries([...document.querySelectorAll('.run.side-pane[data-unavailable]')].map(p => [p.dataset.scenario, p.querySelector('.narration').textContent]))`)
	for sc, pkg := range map[string]string{"redis-side-by-side": "redis-server", "redis-token-side-by-side": "redis-server", "etcd-side-by-side": "etcd-server"} {
		if !strings.Contains(why[sc], "apt-get install "+pkg) {
			t.Errorf("%s says %q, want the package to install (%s)", sc, why[sc], pkg)
		}
	}
	for k := 1; k <= 3; k++ {
		tb.key(kb.ArrowRight)
		tb.until(fmt.Sprintf("both running panes at step %d", k), atStep(k))
	}
}

// A side-by-side link shared at a step opens every pane at that step, each
// showing what the original showed: its clients, its holders and its
// verdict so far.
func TestClassroomSideBySideShareLink(t *testing.T) {
	need(t)
	needServers(t, "redis-server", "etcd")
	srv := startServer(t, "--sim")
	panes := `[...document.querySelectorAll('.run.side-pane')]`
	atStep := func(k int) string {
		return fmt.Sprintf(`%s.length === 5 && %s.every(p => p.dataset.step === '%d' && p.dataset.busy === 'false') && document.body.dataset.busy === 'false'`, panes, panes, k)
	}
	// What each pane shows, by scenario: its clients' states, its holders
	// and its verdict.
	shows := `Object.fromEntries(` + panes + `.map(p => {
  const clients = [...p.querySelectorAll('.client')].map(c => c.dataset.client + '=' + c.dataset.state).sort().join(' ');
  const v = p.querySelector('.side-verdict');
  return [p.dataset.scenario, clients + ' | ' + (v ? v.dataset.exclusion + '/' + v.dataset.stale : '')];
}))`
	tb := newTab(t)
	tb.open(srv.URL + "/sim?scenario=side-by-side")
	tb.until("five panes, ready", atStep(0))
	// The story's end: the verdicts differ by then (Redis without a token
	// broken, the others held).
	k := eval[int](tb, `Number(document.getElementById('scrub').max)`)
	for i := 1; i <= k; i++ {
		tb.key(kb.ArrowRight)
		tb.until(fmt.Sprintf("every pane at step %d", i), atStep(i))
	}
	tb.until("the URL carries the step", fmt.Sprintf(`new URLSearchParams(location.search).get('step') === '%d'`, k))
	url := eval[string](tb, `location.href`)
	want := eval[map[string]string](tb, shows)
	if len(want) != 5 {
		t.Fatalf("the original shows %d panes: %v", len(want), want)
	}
	for sc, w := range want {
		if strings.HasPrefix(w, " |") || strings.HasSuffix(w, "| ") {
			t.Fatalf("%s shows no clients or no verdict at step %d: %q", sc, k, w)
		}
	}
	t.Logf("at step %d: %v", k, want)

	tb2 := newTab(t)
	tb2.open(url)
	tb2.until(fmt.Sprintf("the shared link opens every pane at step %d", k), atStep(k))
	got := eval[map[string]string](tb2, shows)
	for sc, w := range want {
		if got[sc] != w {
			t.Errorf("%s from the shared link shows %q; the original showed %q", sc, got[sc], w)
		}
	}
	if msg := eval[string](tb2, `document.getElementById('sim-error').textContent`); msg != "" {
		t.Errorf("shared link: error %q", msg)
	}
}

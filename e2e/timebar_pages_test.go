package e2e

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp/kb"
)

// → and ← step across the pages the server lists the window's moments in
// (GET /api/v1/lock/history/moments?around=): from a page's last moment →
// reaches the first after it, on the next page, and from a page's first ←
// the last before it, each counted as the window's k of N by the page's
// count of the moments before it.
func TestTimeBarStepsAcrossPages(t *testing.T) {
	need(t)
	const path, every = "/e2e/timebar/pages", 2 * time.Second
	r := recordQueue(t, path, 6000, every, 2)
	srv := startServer(t, "--data-dir", r.dir)
	tb := newTab(t)
	tb.open(fmt.Sprintf("%s/lock?path=%s", srv.URL, url.QueryEscape(path)))
	tb.until("the time bar's window loaded", `Number(document.getElementById('timebar').dataset.moments) > 0`)
	tb.run(`(() => { const w = document.getElementById('tb-window'); w.value = '86400000'; w.dispatchEvent(new Event('change')); })()`)
	tb.until("the 24-hour window", `document.getElementById('timebar').dataset.span === '86400000' && Number(document.getElementById('timebar').dataset.moments) >= `+strconv.Itoa(r.changes))
	total := eval[string](tb, `document.getElementById('timebar').dataset.moments`)

	// The recorded changes are r.first + i*every: the k-th of the window is
	// i = k-1.
	first := r.first.UnixMilli()
	step := every.Milliseconds()
	page := func() (from, to int64) {
		t.Helper()
		f, l, ok := strings.Cut(eval[string](tb, `document.getElementById('timebar').dataset.page`), "-")
		from, err1 := strconv.ParseInt(f, 10, 64)
		to, err2 := strconv.ParseInt(l, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			t.Fatalf("data-page %q: want from-to in ms", f+"-"+l)
		}
		return from, to
	}
	at := func(what string, i int64) {
		t.Helper()
		ms := first + i*step
		tb.until(what, fmt.Sprintf(`document.getElementById('timebar').dataset.at === '%d' && document.getElementById('tb-info').textContent.includes(' %d of %s changes')`, ms, i+1, total))
	}
	seek := func(i int64) {
		t.Helper()
		tb.run(fmt.Sprintf(`(() => { const s = document.getElementById('tb-scrub'); s.value = '%d'; s.dispatchEvent(new Event('change')); })()`, first+i*step))
		at("the moment sought", i)
	}

	tb.key(kb.Home)
	tb.until("Home: the first sight, on the first page", fmt.Sprintf(`document.getElementById('timebar').dataset.at === '%[1]d' && Number(document.getElementById('timebar').dataset.page.split('-')[0]) <= %[1]d`, r.start.UnixMilli()))
	from, to := page()
	if to-from >= int64(r.changes)*step {
		t.Fatalf("the first page [%d, %d) spans every change: the test needs more than a page", from, to)
	}
	last := (to-first+step-1)/step - 1 // the page's last change
	seek(last)
	tb.key(kb.ArrowRight)
	at("→ from the page's last change: the first on the next page", last+1)
	tb.until("the next page listed", fmt.Sprintf(`Number(document.getElementById('timebar').dataset.page.split('-')[0]) > %d`, from))

	from, _ = page()
	firstOn := (from - first + step - 1) / step // the page's first change
	seek(firstOn)
	tb.key(kb.ArrowLeft)
	at("← from the page's first change: the last on the page before", firstOn-1)
	tb.until("the page before listed", fmt.Sprintf(`Number(document.getElementById('timebar').dataset.page.split('-')[0]) < %d`, from))
}

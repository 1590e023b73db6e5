package e2e

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
)

// The time bar has a time axis: round times, each where its time is along
// the bar and labelled with it (in UTC, then in the browser's zone once the
// reader picks it), the strip a light line at each; the pointer over the
// bar or the strip shows the time under it.
func TestTimeBarAxisAndHoverTime(t *testing.T) {
	need(t)
	const path, zone = "/e2e/timebar/axis", "Asia/Kolkata"
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Skipf("no zone data for %s: %v", zone, err)
	}
	r := recordQueue(t, path, 5, 10*time.Second, 2)
	srv := startServer(t, "--data-dir", r.dir)
	tb := inZone(t, zone)
	tb.open(fmt.Sprintf("%s/lock?path=%s", srv.URL, path))
	tb.until("the axis", `document.querySelectorAll('#tb-axis .tick').length >= 2 && document.querySelectorAll('#strip-chart line.grid').length >= 2`)

	// The pointer is moved over what is on the screen.
	tb.run(`document.getElementById('timebar').scrollIntoView({ block: 'center' })`)
	type tick struct {
		T            int64
		Label, Title string
		X, Y         float64
	}
	ticks := func() []tick {
		return eval[[]tick](tb, `[...document.querySelectorAll('#tb-axis .tick')].map((s) => { const b = s.getBoundingClientRect(); return {t: Number(s.dataset.t), label: s.textContent, title: s.title, x: b.x + b.width / 2, y: b.y}; })`)
	}
	type bar struct{ Min, Max, Left, Width, Y float64 }
	b := eval[bar](tb, `(() => { const s = document.getElementById('tb-scrub'), r = document.getElementById('tb-ticks').getBoundingClientRect(), i = s.getBoundingClientRect(); return {min: Number(s.min), max: Number(s.max), left: r.x, width: r.width, y: i.y + i.height / 2}; })()`)
	msPerPx := (b.Max - b.Min) / b.Width
	labelIn := func(ms int64, l *time.Location, secs bool) string {
		if secs {
			return time.UnixMilli(ms).In(l).Format("15:04:05")
		}
		return time.UnixMilli(ms).In(l).Format("15:04")
	}
	utcTicks := ticks()
	for _, k := range utcTicks {
		if float64(k.T) < b.Min || float64(k.T) > b.Max {
			t.Errorf("tick %q at %d is outside the bar [%.0f, %.0f]", k.Label, k.T, b.Min, b.Max)
		}
		if want := b.Left + b.Width*(float64(k.T)-b.Min)/(b.Max-b.Min); math.Abs(k.X-want) > 2 {
			t.Errorf("tick %q is drawn at x %.1f, want %.1f", k.Label, k.X, want)
		}
		secs := len(k.Label) == 8
		if want := labelIn(k.T, time.UTC, secs); k.Label != want || !secs && k.T%60_000 != 0 || k.T%1000 != 0 {
			t.Errorf("tick at %d says %q, want the round time %q in UTC", k.T, k.Label, want)
		}
		if want := time.UnixMilli(k.T).UTC().Format("2006-01-02 15:04:05") + " UTC"; k.Title != want {
			t.Errorf("tick %q's title %q, want %q", k.Label, k.Title, want)
		}
	}

	// The pointer over the bar at a tick shows that tick's time.
	hover := func(sel string, x, y float64) (int64, string) {
		tb.do("the pointer at "+fmt.Sprint(x), chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, x, y))
		tb.until("the time under the pointer", `!document.getElementById('`+sel+`').hidden`)
		return int64(eval[float64](tb, `Number(document.getElementById('`+sel+`').dataset.t)`)), eval[string](tb, `document.getElementById('`+sel+`').textContent`)
	}
	k := utcTicks[len(utcTicks)/2]
	got, text := hover("tb-hover", k.X, b.Y)
	if math.Abs(float64(got-k.T)) > 2*msPerPx {
		t.Errorf("over the tick %q the bar says %s, %v from it (a pixel is %.0f ms)", k.Label, text, time.Duration(got-k.T)*time.Millisecond, msPerPx)
	}
	if want := time.UnixMilli(got).UTC().Format("2006-01-02 15:04:05") + " UTC"; text != want {
		t.Errorf("the hover time says %q, want %q", text, want)
	}

	// Over the strip: the time under the pointer, on the strip's own scale.
	type chart struct{ From, To, Left, Width, Y float64 }
	c := eval[chart](tb, `(() => { const s = document.getElementById('strip-chart'), r = s.getBoundingClientRect(); return {from: Number(s.dataset.from), to: Number(s.dataset.to), left: r.x, width: r.width, y: r.y + r.height / 2}; })()`)
	x := c.Left + c.Width/3
	got, text = hover("strip-hover", x, c.Y)
	if want := c.From + (c.To-c.From)/3; math.Abs(float64(got)-want) > 2*(c.To-c.From)/c.Width {
		t.Errorf("a third along the strip it says %s, want about %s", text, time.UnixMilli(int64(want)).UTC().Format(time.TimeOnly))
	}
	for _, g := range eval[[]float64](tb, `[...document.querySelectorAll('#strip-chart line.grid')].map((l) => Number(l.dataset.t))`) {
		if g < c.From || g > c.To || int64(g)%1000 != 0 {
			t.Errorf("a strip line at %.0f: want a round time in [%.0f, %.0f]", g, c.From, c.To)
		}
	}

	// The browser's zone: the axis is round and labelled there (Kolkata is
	// UTC+5:30), and the hover time is written there too.
	tb.run(`document.getElementById('tz-toggle').click()`)
	tb.until("the axis in "+zone, `document.documentElement.dataset.timezone === 'local' && document.querySelector('#tb-axis .tick').title.indexOf('UTC') < 0`)
	for _, k := range ticks() {
		if want := labelIn(k.T, loc, len(k.Label) == 8); k.Label != want {
			t.Errorf("in %s the tick at %d says %q, want %q", zone, k.T, k.Label, want)
		}
	}
	if _, text := hover("tb-hover", k.X+3, b.Y); text == "" || len(text) < 19 || text[len(text)-3:] == "UTC" {
		t.Errorf("in %s the hover time says %q, want the zone's time", zone, text)
	}
}

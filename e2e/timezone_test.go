package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/zklockviz/zklockviz/redis/redislocal/redistest"
)

// inZone is a tab whose browser's time zone is zone.
func inZone(t *testing.T, zone string) *tab {
	tb := newTab(t)
	call(t, tb.ctx, "time zone "+zone, func(ctx context.Context) error {
		_, err := chromedp.Call(ctx, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: zone})
		return err
	})
	return tb
}

// The pages show times in UTC until the reader picks the browser's zone:
// then every time, the server's (the moment shown, the figures' window) and
// the scripts' (the time bar's label, a mark's tooltip), is in that zone,
// on every page of the server and after a reload; UTC again puts back the
// server's words. An incident file offers the same.
func TestTimesInTheBrowsersZone(t *testing.T) {
	need(t)
	const path, zone = "/e2e/timezone/orders", "Asia/Kolkata"
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Skipf("no zone data for %s: %v", zone, err)
	}
	r := recordQueue(t, path, 5, 10*time.Second, 2)
	srv := startServer(t, "--data-dir", r.dir)
	utc := r.last.UTC().Format("2006-01-02 15:04:05") + " UTC"
	local := r.last.In(loc).Format("2006-01-02 15:04:05")

	tb := inZone(t, zone)
	page := fmt.Sprintf("%s/lock?path=%s&at=%d", srv.URL, url.QueryEscape(path), r.last.UnixMilli())
	tb.open(page)
	const status = `document.getElementById('replay-status').textContent`
	const info = `document.getElementById('tb-info').textContent`
	mark := fmt.Sprintf(`document.querySelector('#tb-ticks button[data-at="%d"]')?.title || ''`, r.last.UnixMilli())
	tb.until("the moment, in UTC", status+`.includes(`+jsString(utc)+`) && `+info+`.includes(`+jsString(utc)+`) && `+mark+`.includes(`+jsString(utc)+`)`)
	if got := eval[string](tb, `document.getElementById('tz-toggle').textContent`); got != "times: UTC" {
		t.Errorf("the toggle says %q, want times: UTC", got)
	}

	tb.run(`document.getElementById('tz-toggle').click()`)
	inLocal := func(what, expr string) {
		tb.until(what+" in "+zone, expr+`.includes(`+jsString(local)+`) && !`+expr+`.includes(' UTC')`)
	}
	inLocal("the moment shown", status)
	inLocal("the time bar's label", info)
	inLocal("the mark's tooltip", mark)
	tb.until("the figures' window", `/ \d\d:\d\d:\d\d GMT\+5:30/.test(document.querySelector('#figures h2').textContent) && !document.querySelector('#figures h2').textContent.includes('UTC')`)
	if got := eval[string](tb, `document.getElementById('tz-toggle').getAttribute('aria-pressed')`); got != "true" {
		t.Errorf("the toggle is pressed %q, want true", got)
	}
	// A step of the time bar words the new moment in the zone too.
	tb.run(`document.getElementById('tb-back').click()`)
	before := r.last.Add(-10 * time.Second).In(loc).Format("2006-01-02 15:04:05")
	tb.until("the step back's moment in "+zone, info+`.includes(`+jsString(before)+`) && !`+info+`.includes('UTC')`)

	// Remembered: another page of the server, and this one again.
	tb.open(srv.URL + "/")
	tb.until("the dashboard's toggle says the zone", `document.getElementById('tz-toggle').getAttribute('aria-pressed') === 'true' && document.getElementById('tz-toggle').textContent.includes('GMT+5:30')`)
	tb.open(page)
	inLocal("the moment shown, after a reload", status)

	// UTC again: the server's words, as they were.
	tb.run(`document.getElementById('tz-toggle').click()`)
	tb.until("the moment in UTC again", status+`.includes(`+jsString(utc)+`) && `+info+`.includes(`+jsString(utc)+`)`)

	// An incident file, opened from disk, offers the same.
	res, err := http.Get(fmt.Sprintf("%s/api/v1/lock/export?path=%s&from=%d&to=%d", srv.URL, url.QueryEscape(path), r.start.UnixMilli(), r.last.Add(time.Second).UnixMilli()))
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("export: %s, %v", res.Status, err)
	}
	file := filepath.Join(t.TempDir(), "incident.html")
	if err := os.WriteFile(file, body, 0o644); err != nil {
		t.Fatal(err)
	}
	tb.open("file://" + file)
	const heading = `document.querySelector('#changes .change:not([hidden]) h2').textContent`
	tb.until("the incident's change in UTC", heading+`.endsWith(' UTC')`)
	first := eval[string](tb, heading)
	tb.run(`document.getElementById('tz-toggle').click()`)
	tb.until("the incident's change in "+zone, `!`+heading+`.includes('UTC') && / GMT\+5:30$/.test(`+heading+`)`)
	if sub := eval[string](tb, `document.querySelector('main > p.dim').textContent`); strings.Contains(sub, " UTC") {
		t.Errorf("the incident's window still says UTC: %q", sub)
	}
	tb.run(`document.getElementById('tz-toggle').click()`)
	tb.until("the incident's change in UTC again", heading+` === `+jsString(first))
}

// The NOT LIVE banner words its times (the server's "unknown since", the
// page's "last seen live at") the one way the page does: in UTC, then both
// in the browser's zone once the reader picks it, and in UTC again; never
// a clock of the browser's own ("10:10:25 PM").
func TestNotLiveBannerInTheBrowsersZone(t *testing.T) {
	need(t)
	const zone = "Asia/Kolkata"
	if _, err := time.LoadLocation(zone); err != nil {
		t.Skipf("no zone data for %s: %v", zone, err)
	}
	m := redistest.ForTest(t)
	redisCLI(t, m.Addr(), "SET", "orders-lock", "tok-A", "NX")
	srv := startServer(t, "--poll", "200ms", "--redis", m.Addr(), "--watch", "redis:orders-lock")
	tb := inZone(t, zone)
	tb.open(srv.URL + "/lock?service=redis&path=orders-lock")
	tb.until("tok-A holds, live", node("tok-A", "holding")+` && document.body.dataset.live === 'true'`)
	if err := m.Kill(); err != nil {
		t.Fatal(err)
	}
	const banner = `document.getElementById('banner').textContent`
	// Two times, each the page's wording in the zone shown.
	words := func(zoneRE string) string {
		return `(() => { const b = ` + banner + `; return !document.getElementById('banner').hidden && b.startsWith('NOT LIVE') && ` +
			`b.includes('unknown since') && b.includes('last seen live at') && ` +
			`(b.match(/\d{4}-\d\d-\d\d \d\d:\d\d:\d\d ` + zoneRE + `/g) || []).length === 2 && !/\d\d? ?[AP]M\b/.test(b); })()`
	}
	tb.until("the banner's times in UTC", words(`UTC`))
	tb.run(`document.getElementById('tz-toggle').click()`)
	tb.until("the banner's times in "+zone, words(`GMT\+5:30`)+` && !`+banner+`.includes('UTC')`)
	tb.run(`document.getElementById('tz-toggle').click()`)
	tb.until("the banner's times in UTC again", words(`UTC`))
}

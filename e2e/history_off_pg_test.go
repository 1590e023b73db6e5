package e2e

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/postgres/pglocal/pgtest"
)

// A PostgreSQL history database that goes away under an open lock page
// and dashboard: both say "history off", the page stops asking the history
// (whose reads answer 503 with the database's reason, never 500) and its
// console stays quiet; when the database is back both stop saying it, the
// page asks again and the stretch without it is a gap on the time bar.
func TestHistoryOffWhilePostgresIsGoneInTheBrowser(t *testing.T) {
	need(t)
	pg := pgtest.ForTest(t)
	const path = "/e2e/history-off-pg"
	ensurePath(t, connect(t), path)
	srv := startServer(t, "--watch", path, "--history-db", pg.DSN())
	lockURL := srv.URL + "/lock?path=" + url.QueryEscape(path)

	dash := newTab(t)
	dash.open(srv.URL + "/")
	dash.until("the dashboard lists the lock", `document.getElementById('ensemble')`)
	lock := newTab(t)
	lock.open(lockURL)
	lock.until("the time bar loaded", `(document.getElementById('timebar') || {dataset: {}}).dataset.moments !== undefined && document.getElementById('figures')`)
	const lockOff = `(document.querySelector('#summary [data-stat="history-off"]') || {}).textContent || ''`
	const dashOff = `(document.getElementById('history-off') || {}).textContent || ''`
	if eval[string](lock, lockOff) != "" || eval[string](dash, dashOff) != "" {
		t.Fatal("history off before the database went")
	}

	// The page asks the time bar again every 15 s: the database goes and
	// the change comes well inside that, so only the page's own asking
	// after the change can meet the database gone.
	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	holder := takeLock(t, path, "while-pg-is-gone")
	if err := <-holder.got; err != nil {
		t.Fatalf("lock: %v", err)
	}
	lock.until("the lock page says the history is off, and why", lockOff+`.includes('history off since')`)
	dash.until("the dashboard says the history is off", dashOff+`.includes('history off')`)

	// Every history read says the database is unavailable, with its reason.
	q := "path=" + url.QueryEscape(path)
	at := time.Now().Add(-time.Second).UnixMilli()
	for _, u := range []string{
		"/api/v1/lock/history?" + q,
		"/api/v1/lock/strip?" + q,
		"/api/v1/lock/history/density?" + q,
		"/api/v1/lock/history/moments?" + q,
		"/api/v1/lock/export?" + q,
		"/api/v1/lock?" + q + "&at=" + strconv.FormatInt(at, 10),
		"/parts/lock-at?" + q + "&at=" + strconv.FormatInt(at, 10),
	} {
		code, body := status(t, srv.URL+u)
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "history database cannot be read") {
			t.Errorf("GET %s with the database gone: %d %s, want 503 saying the database cannot be read", u, code, body)
		}
	}

	// The figures are a part of the page: it says the history is off, and
	// why, in place of the figures (a 503 would be a console error when
	// the page asks before its summary says history off).
	if code, body := status(t, srv.URL+"/parts/lock-figures?"+q); code != http.StatusOK ||
		!strings.Contains(body, `data-off="`) || !strings.Contains(body, "history database cannot be read") {
		t.Errorf("GET /parts/lock-figures with the database gone: %d %s, want the figures saying the history database cannot be read", code, body)
	}

	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := pg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	lock.until("the lock page no longer says the history is off", `!document.querySelector('#summary [data-stat="history-off"]') && document.querySelector('#summary')`)
	lock.until("the time bar, asked again, shows the gap", `Number(document.getElementById('timebar').dataset.gaps) >= 1`)
	dash.until("the dashboard no longer says the history is off", `document.getElementById('ensemble') && !document.getElementById('history-off')`)
	// The stretch without the database is a gap, and a change after it is
	// recorded.
	if err := holder.lock.Unlock(); err != nil {
		t.Fatalf("unlock: %v", err)
	}
	deadline := time.Now().Add(waitFor)
	for {
		code, body := status(t, srv.URL+"/api/v1/lock/history?"+q)
		if code == http.StatusOK && strings.Contains(body, "not recording: ") && strings.Contains(body, `"kind":"left"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the history after the database came back: %d %s, want the gap and the release after it", code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// status is a GET's status and body.
func status(t *testing.T, u string) (int, string) {
	t.Helper()
	res, err := http.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("read %s: %v", u, err)
	}
	return res.StatusCode, string(b)
}

// A lock page opened while the PostgreSQL history database is gone: live,
// it has no figures until the database is back, and then shows them
// without a reload; at a past moment (?at=), it is still the lock's page (no
// 503), says the history is off and why where the moment would be, does not
// ask for the moment (a 503 in its console), and shows it once it is back.
func TestLockPageOpenedWhilePostgresIsGone(t *testing.T) {
	need(t)
	pg := pgtest.ForTest(t)
	const path = "/e2e/history-off-pg-open"
	ensurePath(t, connect(t), path)
	srv := startServer(t, "--watch", path, "--history-db", pg.DSN())
	lockURL := srv.URL + "/lock?path=" + url.QueryEscape(path)
	q := "path=" + url.QueryEscape(path)
	first := takeLock(t, path, "before")
	if err := <-first.got; err != nil {
		t.Fatalf("lock: %v", err)
	}
	waitUntil(t, "the lock recorded", func() bool {
		// Held: a node there when the reader first read the lock is
		// restated, not queued, so the moment is asked for, not the events.
		code, body := status(t, srv.URL+"/api/v1/lock?at="+strconv.FormatInt(time.Now().UnixMilli(), 10)+"&"+q)
		return code == http.StatusOK && strings.Contains(body, `"holding":true`)
	})
	at := time.Now().UnixMilli()

	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := first.lock.Unlock(); err != nil {
		t.Fatalf("unlock: %v", err)
	}
	waitUntil(t, "the lock page saying the history is off", func() bool {
		return strings.Contains(get(t, lockURL), `data-stat="history-off"`)
	})

	const lockOff = `(document.querySelector('#summary [data-stat="history-off"]') || {}).textContent || ''`
	live := newTab(t)
	live.open(lockURL)
	live.until("the lock page says the history is off", lockOff+`.includes('history off since')`)
	if eval[bool](live, `!!document.getElementById('figures')`) {
		t.Fatal("figures shown while the history database is gone")
	}
	past := newTab(t)
	past.open(lockURL + "&at=" + strconv.FormatInt(at, 10))
	const info = `((document.getElementById('tb-info') || {}).textContent || '')`
	const replay = `((document.getElementById('replay-status') || {}).textContent || '')`
	past.until("the moment says the history is off, and why", info+`.includes('history off') && `+replay+`.includes('History off') && `+replay+`.includes('history database cannot be read')`)

	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := pg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	live.until("the figures shown once the database is back", `document.getElementById('figures') && !document.querySelector('#summary [data-stat="history-off"]')`)
	past.until("the moment shown once the database is back", `!`+info+`.includes('history off') && `+replay+`.includes('Showing the queue as it was') && document.getElementById('timebar').dataset.at === `+jsString(strconv.FormatInt(at, 10))+` && document.getElementById('timebar').dataset.moments !== undefined`)
}

package e2e

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A second zklockviz on the same data directory serves without a history
// and says so on the dashboard and the lock page, with why; when the first
// stops, it records by itself, and the stretch it did not record shows on
// the time bar as a gap.
func TestHistoryOffIsSaid(t *testing.T) {
	need(t)
	const path = "/e2e/history-off"
	ensurePath(t, connect(t), path)
	dir := t.TempDir()
	first := startServer(t, "--watch", path, "--data-dir", dir)
	second := startServer(t, "--watch", path, "--data-dir", dir)

	tb := newTab(t)
	const why = "another zklockviz records into"
	tb.open(second.URL + "/")
	dashOff := `(document.getElementById('history-off') || {}).textContent || ''`
	tb.until("the dashboard says the history is off, and why", dashOff+`.includes('history off') && `+dashOff+`.includes(`+jsString(why)+`)`)
	tb.open(second.URL + "/lock?path=" + url.QueryEscape(path))
	lockOff := `(document.querySelector('#summary [data-stat="history-off"]') || {}).textContent || ''`
	tb.until("the lock page says the history is off, and why", lockOff+`.includes(`+jsString(why)+`)`)

	if err := first.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	// A change repaints the lock page's summary.
	holder := takeLock(t, path, "after")
	if err := <-holder.got; err != nil {
		t.Fatalf("lock: %v", err)
	}
	tb.until("the lock page no longer says the history is off", `!document.querySelector('#summary [data-stat="history-off"]') && document.querySelector('#summary')`)
	tb.open(second.URL + "/")
	tb.until("the dashboard no longer says the history is off", `document.getElementById('ensemble') && !document.getElementById('history-off')`)

	// The time bar shows the stretch the second did not record.
	tb.open(second.URL + "/lock?path=" + url.QueryEscape(path))
	tb.until("the time bar shows the gap", `Number((document.getElementById('timebar') || {dataset: {}}).dataset.gaps) >= 1`)
	gaps := get(t, second.URL+"/api/v1/lock/history?path="+url.QueryEscape(path))
	if !strings.Contains(gaps, "not recording: "+why) {
		t.Errorf("the history's gaps do not say why it did not record: %s", gaps)
	}
}

// A data directory that cannot be used (a file where it should be) is said
// in the browser too, naming the path and the flag, and the pages stop
// saying it once the cause is gone and recording resumes.
func TestHistoryOffForAnUnusableDirectory(t *testing.T) {
	need(t)
	const path = "/e2e/history-off-dir"
	ensurePath(t, connect(t), path)
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, "--watch", path, "--data-dir", file)

	tb := newTab(t)
	tb.open(srv.URL + "/")
	dashOff := `(document.getElementById('history-off') || {}).textContent || ''`
	tb.until("the dashboard says the history is off, naming the directory and the flag",
		dashOff+`.includes('history off') && `+dashOff+`.includes(`+jsString(file)+`) && `+dashOff+`.includes('--data-dir')`)
	tb.open(srv.URL + "/lock?path=" + url.QueryEscape(path))
	lockOff := `(document.querySelector('#summary [data-stat="history-off"]') || {}).textContent || ''`
	tb.until("the lock page says the history is off, naming the directory", lockOff+`.includes(`+jsString(file)+`)`)

	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	tb.until("the lock page no longer says the history is off", `!document.querySelector('#summary [data-stat="history-off"]') && document.querySelector('#summary')`)
}

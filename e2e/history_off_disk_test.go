package e2e

import (
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/localproc/proctest"
	"github.com/zklockviz/zklockviz/third_party/zk"
)

// A full disk under the data directory, with the lock page and the
// dashboard open: both say "history off" with the disk's error and the
// page's console stays quiet; once space is freed both stop saying it by
// themselves, and the stretch not recorded is a gap on the time bar.
func TestHistoryOffWhileTheDiskIsFullInTheBrowser(t *testing.T) {
	need(t)
	disk := proctest.SmallDisk(t, 1<<20)
	const path = "/e2e/history-off-disk"
	c := connect(t)
	ensurePath(t, c, path)
	srv := startServer(t, "--watch", path, "--data-dir", filepath.Join(disk, "history"))
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
		t.Fatal("history off before the disk filled")
	}

	// Fill the disk.
	free := proctest.FillDisk(t, disk)
	// Contenders come and go (their data recorded with them) until a
	// write fails: the segment's last page may still hold a few frames.
	const why = "no space left on device"
	data := []byte(strings.Repeat("x", 200))
	off := func() bool { return strings.Contains(get(t, srv.URL+"/"), why) }
	for i := 0; !off(); i++ {
		if i == 500 {
			t.Fatal("500 contenders on a full disk, and the dashboard does not say the history is off")
		}
		name, err := c.Create(path+"/lock-", data, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
		if err != nil {
			t.Fatal(err)
		}
		lock.until("the contender shown", `document.querySelector('#lane [data-node=`+jsString(name[len(path)+1:])+`]')`)
		if err := c.Delete(name, -1); err != nil {
			t.Fatal(err)
		}
	}
	// One more change repaints the lock page's summary.
	holder := takeLock(t, path, "while-the-disk-is-full")
	if err := <-holder.got; err != nil {
		t.Fatalf("lock: %v", err)
	}
	lock.until("the lock page says the history is off, and why", lockOff+`.includes('history off') && `+lockOff+`.includes(`+jsString(why)+`)`)
	dash.until("the dashboard says the history is off, and why", dashOff+`.includes('history off') && `+dashOff+`.includes(`+jsString(why)+`)`)

	free()
	lock.until("the lock page no longer says the history is off", `!document.querySelector('#summary [data-stat="history-off"]') && document.querySelector('#summary')`)
	lock.until("the time bar, asked again, shows the gap", `Number(document.getElementById('timebar').dataset.gaps) >= 1`)
	dash.until("the dashboard no longer says the history is off", `document.getElementById('ensemble') && !document.getElementById('history-off')`)
	gaps := get(t, srv.URL+"/api/v1/lock/history?path="+url.QueryEscape(path))
	if !strings.Contains(gaps, why) {
		t.Errorf("the history's gaps do not say the disk was full: %s", gaps)
	}
}

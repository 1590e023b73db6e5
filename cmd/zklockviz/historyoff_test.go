package main

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/localproc/proctest"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/postgres/pglocal/pgtest"
	"github.com/zklockviz/zklockviz/redis/redislocal/redistest"
)

// A PostgreSQL history database that goes away (its server stopped) is said
// on the dashboard and the lock page as "history off" with the database's
// error; when it is back, recording resumes by itself and the stretch it
// missed is a gap in the lock's history.
func TestHistoryOffWhilePostgresIsGone(t *testing.T) {
	r := redistest.ForTest(t)
	pg := pgtest.ForTest(t)
	const key = "pg-gone"
	srv := startServe(t, "--redis", r.Addr(), "--addr", "127.0.0.1:0", "--watch", "redis:"+key,
		"--history-db", pg.DSN(), "--poll", "100ms", "--log-level", "warn")
	api := historyAPI{t: t, base: srv.url, service: "redis"}
	api.waitLive(key, "the lock read", func(s lockqueue.Snapshot) bool { return s.Live() })
	lockPage := "/lock?service=redis&path=" + url.QueryEscape(key)
	off := func(page string) bool { return strings.Contains(httpText(t, srv.url+page), "history off") }
	if off("/") || off(lockPage) {
		t.Fatal("history off before the database went")
	}

	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	redisCLI(t, r.Addr(), "SET", key, "tok-A", "NX", "PX", "600000")
	api.waitLive(key, "tok-A holding", holding("tok-A"))
	waitFor(t, "the dashboard saying the history is off", func() bool { return off("/") })
	waitFor(t, "the lock page saying the history is off", func() bool { return off(lockPage) })

	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := pg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "recording to resume", func() bool { return !off("/") && !off(lockPage) })
	var resp struct {
		Gaps   []history.Span
		Events []history.Event
	}
	api.get("/api/v1/lock/history", key, nil, &resp)
	if len(resp.Gaps) == 0 || !strings.HasPrefix(resp.Gaps[len(resp.Gaps)-1].Why, "not recording: ") {
		t.Errorf("gaps %+v, want the stretch without the database", resp.Gaps)
	}
	if _, ok := findEvent(resp.Events, history.Queued, "tok-A"); !ok {
		t.Errorf("tok-A, there when recording resumed, is not in the history: %+v", resp.Events)
	}
}

// A full disk under the data directory is said as "history off" with the
// disk's error; once space is freed, recording resumes by itself, the
// stretch in between a gap.
func TestHistoryOffWhileTheDiskIsFull(t *testing.T) {
	disk := proctest.SmallDisk(t, 1<<20)
	r := redistest.ForTest(t)
	const key = "disk-full"
	dataDir := filepath.Join(disk, "history")
	srv := startServe(t, "--redis", r.Addr(), "--addr", "127.0.0.1:0", "--watch", "redis:"+key,
		"--data-dir", dataDir, "--poll", "100ms", "--log-level", "warn")
	api := historyAPI{t: t, base: srv.url, service: "redis"}
	api.waitLive(key, "the lock read", func(s lockqueue.Snapshot) bool { return s.Live() })
	lockPage := "/lock?service=redis&path=" + url.QueryEscape(key)
	off := func(page string) bool {
		body := httpText(t, srv.url+page)
		return strings.Contains(body, "history off") && strings.Contains(body, "no space left on device")
	}

	// Fill the disk.
	free := proctest.FillDisk(t, disk)
	// Hand-offs to record until a write fails: the segment's last page
	// may still hold a few frames.
	for i := 0; !off("/"); i++ {
		if i == 500 {
			t.Fatal("500 hand-offs on a full disk, and the dashboard does not say the history is off")
		}
		tok := fmt.Sprintf("tok-%04d-%s", i, strings.Repeat("x", 40))
		redisCLI(t, r.Addr(), "SET", key, tok, "NX")
		api.waitLive(key, tok+" holding", holding(tok))
		redisCLI(t, r.Addr(), "DEL", key)
	}
	redisCLI(t, r.Addr(), "SET", key, "tok-A", "NX", "PX", "600000")
	api.waitLive(key, "tok-A holding", holding("tok-A"))
	waitFor(t, "the lock page saying the history is off", func() bool { return off(lockPage) })

	free()
	waitFor(t, "recording to resume", func() bool {
		body := httpText(t, srv.url+"/") + httpText(t, srv.url+lockPage)
		return !strings.Contains(body, "history off")
	})
	var resp struct{ Gaps []history.Span }
	recorded := func() bool {
		api.get("/api/v1/lock/history", key, nil, &resp)
		return slices.ContainsFunc(resp.Gaps, func(g history.Span) bool {
			return strings.Contains(g.Why, "no space left on device")
		})
	}
	for deadline := time.Now().Add(waitTimeout); !recorded(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no gap for the full disk: gaps %+v", resp.Gaps)
		}
	}
	if snap := api.live(key); !slices.Equal(snap.Holders(), []string{"tok-A"}) {
		t.Errorf("live holders %q", snap.Holders())
	}
	// tok-A came while nothing could be written: the keyframe after the
	// gap has it.
	if snap := api.at(key, time.Now()); !slices.Equal(snap.Holders(), []string{"tok-A"}) {
		t.Errorf("the history now: holders %q, want tok-A", snap.Holders())
	}
}

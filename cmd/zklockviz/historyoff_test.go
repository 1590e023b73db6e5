package main

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/history"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/pglocal"
	"github.com/zklockviz/zklockviz/redislocal"
)

// A PostgreSQL history database that goes away (its server stopped) is said
// on the dashboard and the lock page as "history off" with the database's
// error; when it is back, recording resumes by itself and the stretch it
// missed is a gap in the lock's history.
func TestHistoryOffWhilePostgresIsGone(t *testing.T) {
	r := redislocal.ForTest(t)
	pg := pglocal.ForTest(t)
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

package web

import (
	"context"
	"github.com/zklockviz/zklockviz/lockservice"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/hub"
	"github.com/zklockviz/zklockviz/lockqueue"
)

// watchList is a watcher's list of paths, for the pages: what it follows,
// and what POST /api/v1/watch adds.
type watchList []string

func (w *watchList) Watch(p string) error             { *w = append(*w, p); return nil }
func (w *watchList) Unwatch(string) error             { return lockservice.ErrUnsupported }
func (w *watchList) Err() error                       { return nil }
func (w *watchList) Watched() []string                { return slices.Clone(*w) }
func (w *watchList) Run(ctx context.Context) error    { <-ctx.Done(); return nil }
func (w *watchList) Close()                           {}
func (w *watchList) Connection() lockqueue.Connection { return lockqueue.Connected }

// The lock view's first paint tells an unwatched path (offer to watch it,
// when the server can) from a watched one not read yet (NOT LIVE until the
// first snapshot); only a watched path gets a socket (data-watched).
func TestLockPageWatched(t *testing.T) {
	const path = "/locks/orders"
	banner := regexp.MustCompile(`<div id="banner"[^>]*>`)
	for _, tc := range []struct {
		name    string
		watcher *watchList // nil: a server without a watcher
		snap    bool
		want    []string
		notWant []string
		shown   bool // the NOT LIVE banner
	}{
		{name: "not watched, can add", watcher: &watchList{"/locks/other"},
			want:    []string{`data-watched="false"`, `Not watched.`, `id="watch-this"`},
			notWant: []string{`cannot add watches`}},
		{name: "not watched, cannot add",
			want:    []string{`data-watched="false"`, `Not watched.`, `cannot add watches`, `--watch ` + path},
			notWant: []string{`id="watch-this"`}},
		{name: "watched, not read yet", watcher: &watchList{path},
			want:    []string{`data-watched="true"`, `NOT LIVE — waiting for the first read of ` + path},
			notWant: []string{`Not watched.`, `id="watch-this"`}, shown: true},
		{name: "published without a watcher", snap: true,
			want:    []string{`data-watched="true"`},
			notWant: []string{`Not watched.`, `id="watch-this"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := hub.New()
			if tc.snap {
				h.Publish(pageSnapshot(path, lockqueue.Connected, "R_0000000001"))
			}
			var reader lockservice.Reader // nil, not a nil *watchList
			if tc.watcher != nil {
				reader = tc.watcher
			}
			cfg := Config{Hub: h, Logger: testLogger(t), Services: zkRegistry(reader, nil)}
			cfg.Pages = true
			srv, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ts := httptest.NewServer(srv)
			defer ts.Close()
			_, body := pageGet(t, ts.URL+"/lock?path="+path, nil)
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("page lacks %q", w)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(body, w) {
					t.Errorf("page has %q", w)
				}
			}
			if tag := banner.FindString(body); strings.Contains(tag, " hidden") == tc.shown {
				t.Errorf("banner %s: shown should be %v", tag, tc.shown)
			}
		})
	}
}

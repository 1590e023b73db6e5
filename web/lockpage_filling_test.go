package web

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/hub"
	"github.com/zklockviz/zklockviz/lockqueue"
)

// While the reader is still reading a queue's nodes' data, the lock page
// says how far it is, in its first paint and in the parts it fetches after
// every change, and stops saying it once every node is read.
func TestLockPageSaysFilling(t *testing.T) {
	const path = "/locks/orders"
	h := hub.New()
	cfg := Config{Hub: h, Logger: testLogger(t), Services: zkRegistry(nil, nil)}
	cfg.Pages = true
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	for _, tc := range []struct {
		name    string
		filling *lockqueue.Filling
		want    string // "" : the page must not say it is reading
	}{
		{"reading", &lockqueue.Filling{Read: 12_000, Of: 100_000}, "reading nodes' data:</b> 12,000 of 100,000"},
		{"all read", nil, ""},
	} {
		s := pageSnapshot(path, lockqueue.Connected, "R_0000000001")
		s.Filling = tc.filling
		h.Publish(s)
		for _, url := range []string{"/lock?path=" + path, "/parts/lock?path=" + path} {
			_, body := pageGet(t, ts.URL+url, nil)
			if tc.want != "" && !strings.Contains(body, tc.want) {
				t.Errorf("%s: %s lacks %q", tc.name, url, tc.want)
			}
			if tc.want == "" && strings.Contains(body, `data-stat="filling"`) {
				t.Errorf("%s: %s says the nodes are still being read", tc.name, url)
			}
		}
	}
}

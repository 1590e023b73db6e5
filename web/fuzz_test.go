package web

import (
	"encoding/json"
	"github.com/zklockviz/zklockviz/zookeeper"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/hub"
	"github.com/zklockviz/zklockviz/zkwatch"
)

// FuzzAPI drives the real handler with arbitrary ?path= queries (for
// /api/v1/lock and /ws) and POST /api/v1/watch bodies. It must never panic,
// and must answer 200 (101 for a websocket) or a JSON error with the
// documented status: 400 malformed, 404 not watched, 503 watched but not
// read yet, 413 too large. A /ws request for a served path passes the query
// checks and reaches the websocket upgrade, which refuses this plain GET
// with 426: that only happens for a valid, known path.
//
//	go test ./web -run '^$' -fuzz FuzzAPI -fuzztime 60s
func FuzzAPI(f *testing.F) {
	for _, seed := range []struct{ query, body string }{
		{"path=/l", `{"path":"/x"}`},
		{"path=/watched", `{"path":"/watched"}`},
		{"", ``},
		{"path=", `{}`},
		{"path=%2Fl", `{"path":"/a//b"}`},
		{"path=/l&path=/x", `{"path":"/x"} {}`},
		{"path=/a/../b", `{"path":"x/"}`},
		{"path=%zz", `{"path":"/\u0000"}`},
		{"path=/a%00b", `{"path":`},
		{"path=/zookeeper", `{"paths":"/x"}`},
		{"path=/" + strings.Repeat("a", 2000), `{"path":"/` + strings.Repeat("a", maxBody) + `"}`},
		{";path=/l", `[]`},
		{"path=/l;x", `null`},
		{"path=/%E2%80%AE", `{"path":"/\ud800"}`},
	} {
		f.Add(seed.query, seed.body)
	}
	h := hub.New()
	h.Publish(gozkFolder("/l", 3).snapshot())
	w, err := zkwatch.New(zkwatch.Config{Servers: []string{"127.0.0.1:1"}, Paths: []string{"/watched"}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		f.Fatal(err)
	}
	defer w.Close()
	srv, err := New(Config{Hub: h, Services: zkRegistry(zookeeper.NewReader(w), nil), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		f.Fatal(err)
	}

	f.Fuzz(func(t *testing.T, query, body string) {
		serve := func(method, target, body string) *httptest.ResponseRecorder {
			r := httptest.NewRequest(method, "/", strings.NewReader(body))
			r.URL.Path = target
			r.URL.RawQuery = query
			r.RequestURI = target + "?" + query
			r.Host = "127.0.0.1:8080"
			if method == http.MethodPost {
				r.Header.Set("Content-Type", "application/json")
			}
			rec := httptest.NewRecorder()
			srv.ServeHTTP(rec, r)
			return rec
		}
		check := func(what string, rec *httptest.ResponseRecorder, allowed ...int) {
			t.Helper()
			ok := false
			for _, c := range allowed {
				ok = ok || rec.Code == c
			}
			if !ok {
				t.Fatalf("%s: status %d %s, want one of %v", what, rec.Code, rec.Body, allowed)
			}
			if rec.Code == http.StatusUpgradeRequired {
				return
			}
			if !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
				t.Fatalf("%s: %d with Content-Type %q", what, rec.Code, rec.Header().Get("Content-Type"))
			}
			var v map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
				t.Fatalf("%s: body is not a JSON object: %v\n%s", what, err, rec.Body)
			}
			if _, has := v["error"]; has != (rec.Code != 200) {
				t.Fatalf("%s: %d with body %s", what, rec.Code, rec.Body)
			}
		}

		check("GET /api/v1/lock", serve("GET", "/api/v1/lock", ""), 200, 400, 404, 503)
		rec := serve("GET", "/ws", "")
		check("GET /ws", rec, 400, 404, http.StatusUpgradeRequired)
		if rec.Code == http.StatusUpgradeRequired {
			r := httptest.NewRequest("GET", "/", nil)
			r.URL.RawQuery = query
			svc, id, err := srv.lockRef(r)
			if _, served := h.Latest(id.Key()); err != nil || !served && !watchedBy(svc, id.Name) {
				t.Fatalf("GET /ws?%s reached the upgrade with path %q (%v)", query, id.Name, err)
			}
		}
		check("POST /api/v1/watch", serve("POST", "/api/v1/watch", body), 200, 400, 413, 503)
	})
}

package web

import (
	"encoding/json"
	"github.com/zklockviz/zklockviz/zookeeper"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/lockqueue"
)

func TestHealthz(t *testing.T) {
	e := newEnv(t, Config{AuthToken: "s3cret"})
	code, _, body := do(t, "GET", e.ts.URL+"/healthz", "", nil)
	if code != 200 || string(body) != "ok" {
		t.Fatalf("GET /healthz = %d %q, want 200 ok (and no token needed)", code, body)
	}
}

func TestAPI(t *testing.T) {
	w := unstartedWatcher(t, "/watched/not-read")
	e := newEnv(t, Config{Services: zkRegistry(zookeeper.NewReader(w), nil)})
	seed := lockqueue.Build("/seed", []lockqueue.Child{
		{Name: "R_0000000001", Czxid: 1, EphemeralOwner: 11, Ctime: epoch},
		{Name: "W_0000000002", Czxid: 2, EphemeralOwner: 12, Ctime: epoch.Add(1)},
		{Name: "R_0000000003", Czxid: 3, EphemeralOwner: 13, Ctime: epoch.Add(2)},
	}, lockqueue.Options{})
	seed.Connection = lockqueue.Connected
	e.hub.Publish(seed)
	e.hub.Publish(gozkFolder("/gozk", 3).snapshot())

	jsonHdr := http.Header{"Content-Type": {"application/json"}}
	tests := []struct {
		name   string
		method string
		target string
		body   string
		header http.Header
		code   int
		want   []string // substrings of the body
	}{
		{"lock", "GET", "/api/v1/lock?path=/seed", "", nil, 200,
			[]string{`"path":"/seed"`, `"recipe":"seed-rw"`, `"name":"R_0000000001","seq":1,"mode":"read","recipe":"seed-rw","holding":true`, `"waitsFor":"W_0000000002"`}},
		{"lock missing path", "GET", "/api/v1/lock", "", nil, 400, []string{`"error":"missing ?path=`}},
		{"lock relative path", "GET", "/api/v1/lock?path=seed", "", nil, 400, []string{`must start with /`}},
		{"lock empty segment", "GET", "/api/v1/lock?path=/a//b", "", nil, 400, []string{`empty segment`}},
		{"lock control char", "GET", "/api/v1/lock?path=" + url.QueryEscape("/a\x00b"), "", nil, 400, []string{`not allowed`}},
		{"lock unknown", "GET", "/api/v1/lock?path=/nope", "", nil, 404, []string{`"error":"/nope is not watched`}},
		{"lock watched, not read yet", "GET", "/api/v1/lock?path=/watched/not-read", "", nil, 503, []string{`not read yet`}},
		{"watch bad json", "POST", "/api/v1/watch", `{"path":`, jsonHdr, 400, []string{`bad JSON body`}},
		{"watch empty body", "POST", "/api/v1/watch", "", jsonHdr, 400, []string{`"error":"missing path: want {`}},
		{"watch path not a string", "POST", "/api/v1/watch", `{"path":5}`, jsonHdr, 400, []string{`"error":"bad JSON body: path: want a string, got number"`}},
		{"watch not an object", "POST", "/api/v1/watch", `"/x"`, jsonHdr, 400, []string{`"error":"bad JSON body: want a JSON object, got string"`}},
		{"watch unknown field", "POST", "/api/v1/watch", `{"paths":"/x"}`, jsonHdr, 400, []string{`unknown field`}},
		{"watch two values", "POST", "/api/v1/watch", `{"path":"/x"} {}`, jsonHdr, 400, []string{`more than one value`}},
		{"watch bad path", "POST", "/api/v1/watch", `{"path":"x/"}`, jsonHdr, 400, []string{`invalid znode path`}},
		{"watch too big", "POST", "/api/v1/watch", `{"path":"/` + strings.Repeat("a", maxBody) + `"}`, jsonHdr, 413, []string{`body larger than`}},
		{"watch cross-origin", "POST", "/api/v1/watch", `{"path":"/x"}`, http.Header{"Origin": {"https://evil.example"}}, 403, []string{`cross-origin POST`}},
		{"watch cross-site without origin", "POST", "/api/v1/watch", `{"path":"/x"}`, http.Header{"Sec-Fetch-Site": {"cross-site"}}, 403, []string{`cross-origin`}},
		{"watch", "POST", "/api/v1/watch", `{"path":"/added/by/api"}`, jsonHdr, 200, []string{`{"path":"/added/by/api","watching":true}`}},
		{"watch again", "POST", "/api/v1/watch", `{"path":"/added/by/api"}`, jsonHdr, 200, []string{`"watching":true`}},
		{"unknown endpoint", "GET", "/api/v1/nope", "", nil, 404, []string{`"error":"no such endpoint: /api/v1/nope"`}},
		{"wrong method", "DELETE", "/api/v1/locks", "", nil, 405, []string{`"error":"DELETE is not allowed`}},
		{"metrics", "GET", "/metrics", "", nil, 200, []string{"zklockviz_locks 2\n", "zklockviz_snapshots_published_total 2\n"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, hdr, body := do(t, tc.method, e.ts.URL+tc.target, tc.body, tc.header)
			if code != tc.code {
				t.Fatalf("%s %s = %d %s, want %d", tc.method, tc.target, code, body, tc.code)
			}
			if code != 200 && !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") {
				t.Errorf("error Content-Type %q, want JSON", hdr.Get("Content-Type"))
			}
			for _, s := range tc.want {
				if !strings.Contains(string(body), s) {
					t.Errorf("body lacks %s:\n%s", s, body)
				}
			}
		})
	}

	if !slices.Contains(w.Paths(), "/added/by/api") {
		t.Errorf("watcher paths %v lack the path POSTed", w.Paths())
	}

	// The list shows published locks, and watched ones not read yet.
	code, _, body := do(t, "GET", e.ts.URL+"/api/v1/locks", "", nil)
	if code != 200 {
		t.Fatalf("GET /api/v1/locks = %d %s", code, body)
	}
	var got LocksResponse
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		path             string
		holders, waiters []string
		pending          bool
	}{
		{"/added/by/api", []string{}, []string{}, true},
		{"/gozk", []string{gozk(0, 0)}, []string{gozk(1, 1), gozk(2, 2)}, false},
		{"/seed", []string{"R_0000000001"}, []string{"W_0000000002", "R_0000000003"}, false},
		{"/watched/not-read", []string{}, []string{}, true},
	}
	if len(got.Locks) != len(want) {
		t.Fatalf("locks %s, want %d entries", body, len(want))
	}
	for i, w := range want {
		l := got.Locks[i]
		if l.Path != w.path || !slices.Equal(l.Holders, w.holders) || !slices.Equal(l.Waiters, w.waiters) || l.Pending != w.pending {
			t.Errorf("locks[%d] = %+v, want %+v", i, l, w)
		}
		if l.QueueLength != len(w.holders)+len(w.waiters) {
			t.Errorf("%s queueLength %d, want %d", l.Path, l.QueueLength, len(w.holders)+len(w.waiters))
		}
	}
	if got.Locks[2].OldestWaitMs <= 0 || got.Locks[2].Connection != lockqueue.Connected {
		t.Errorf("/seed oldestWaitMs %d connection %q, want > 0 and connected", got.Locks[2].OldestWaitMs, got.Locks[2].Connection)
	}
	for _, s := range []string{`"holders":[]`, `"alerts":[]`} {
		if !strings.Contains(string(body), s) {
			t.Errorf("empty lists must be [] not null; body lacks %s", s)
		}
	}
}

// Without a watcher, adding a path is unavailable, but bad input is still
// bad input.
func TestWatchWithoutWatcher(t *testing.T) {
	e := newEnv(t, Config{})
	for _, tc := range []struct {
		body string
		code int
	}{
		{`{"path":"/x"}`, 503},
		{`{"path":"/x/"}`, 400},
		{`[]`, 400},
	} {
		code, _, body := do(t, "POST", e.ts.URL+"/api/v1/watch", tc.body, nil)
		if code != tc.code {
			t.Errorf("POST %s = %d %s, want %d", tc.body, code, body, tc.code)
		}
	}
}

func TestAuth(t *testing.T) {
	e := newEnv(t, Config{AuthToken: "s3cret"})
	e.hub.Publish(gozkFolder("/l", 2).snapshot())
	basic := func(user, pass string) http.Header {
		r, _ := http.NewRequest("GET", "/", nil)
		r.SetBasicAuth(user, pass)
		return r.Header
	}
	for _, tc := range []struct {
		name   string
		header http.Header
		code   int
	}{
		{"none", nil, 401},
		{"bearer", http.Header{"Authorization": {"Bearer s3cret"}}, 200},
		{"wrong bearer", http.Header{"Authorization": {"Bearer s3cre"}}, 401},
		{"basic", basic("anyone", "s3cret"), 200},
		{"wrong basic", basic("s3cret", "x"), 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, hdr, body := do(t, "GET", e.ts.URL+"/api/v1/lock?path=/l", "", tc.header)
			if code != tc.code {
				t.Fatalf("= %d %s, want %d", code, body, tc.code)
			}
			if code == 401 && !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Basic") {
				t.Errorf("401 without a Basic challenge; browsers would not prompt")
			}
		})
	}
}

// Without pages plugged in, / still tells a visitor where to go.
func TestIndexFallback(t *testing.T) {
	e := newEnv(t, Config{})
	e.hub.Publish(gozkFolder("/a b", 1).snapshot())
	code, _, body := do(t, "GET", e.ts.URL+"/", "", nil)
	if code != 200 || !strings.Contains(string(body), `href="/api/v1/lock?path=%2fa%20b"`) {
		t.Fatalf("GET / = %d\n%s", code, body)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Error("New without a hub succeeded")
	}
	if _, err := New(Config{Hub: newEnv(t, Config{}).hub, AllowedOrigins: []string{"[bad"}}); err == nil {
		t.Error("New with a malformed origin pattern succeeded")
	}
}

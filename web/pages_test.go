package web

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/hub"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/static"
)

// pageSnapshot builds a seed read/write lock (R_/W_) the way the watcher does:
// through lockqueue, so the pages see real holders, waits and alerts.
func pageSnapshot(path string, conn lockqueue.Connection, names ...string) lockqueue.Snapshot {
	var kids []lockqueue.Child
	for i, n := range names {
		kids = append(kids, lockqueue.Child{
			Name: n, Data: []byte(fmt.Sprintf("LOCK%d", i+1)), Czxid: int64(100 + i),
			Ctime: time.Now().Add(-time.Minute), EphemeralOwner: int64(0x1000 + i),
		})
	}
	s := lockqueue.Build(path, kids, lockqueue.Options{})
	s.Connection = conn
	s.Revision = 7
	s.UpdatedAt = time.Now()
	return s
}

func pageServer(t *testing.T, sim bool, snaps ...lockqueue.Snapshot) *httptest.Server {
	t.Helper()
	h := hub.New()
	for _, s := range snaps {
		h.Publish(s)
	}
	reg := zkRegistry(nil, nil)
	srv, err := New(Config{Hub: h, Services: reg, Pages: true, Classroom: sim, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return ts
}

func pageGet(t *testing.T, u string, header http.Header) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("GET %s: read body: %v", u, err)
	}
	return res, string(b)
}

func TestPages(t *testing.T) {
	seed := pageSnapshot("/seeds/share", lockqueue.Connected, "R_0000000001", "W_0000000002", "W_0000000003", "R_0000000004", "R_0000000005")
	down := pageSnapshot("/down/lock", lockqueue.Reconnecting, "W_0000000001")
	ts := pageServer(t, true, seed, down)

	tests := []struct {
		name   string
		url    string
		status int
		want   []string
		absent []string
	}{
		{name: "dashboard lists every lock", url: "/", status: 200, want: []string{
			`data-lock="/seeds/share"`, `data-lock="/down/lock"`, `href="/lock?path=%2Fseeds%2Fshare"`,
			`title="R_0000000001 (LOCK1)">LOCK1<`, `>4<`, `conn-reconnecting`, `data-state="mixed"`, `id="watch-form"`, `href="/sim"`,
			`/static/dashboard.js?v=`,
		}},
		{name: "lock view paints the queue table", url: "/lock?path=/seeds/share", status: 200, want: []string{
			`data-path="/seeds/share"`, `data-row="R_0000000001" data-state="holding"`,
			`data-row="W_0000000002" data-state="waiting"`, `<td class="waits"><abbr title="R_0000000001">R_0000000001</abbr></td>`, `<td class="name"><button type="button" class="linkish">R_<wbr>0000000001</button></td>`, `id="lane"`, `id="copy"`,
			`id="banner" class="banner" role="alert" hidden`, `<b>1</b> holding`, `<b>4</b> waiting`, `/static/lock.js?v=`,
		}},
		{name: "not live lock shows the banner", url: "/lock?path=/down/lock", status: 200, want: []string{
			`NOT LIVE — ZooKeeper is unreachable`,
		}, absent: []string{`role="alert" hidden`}},
		{name: "unwatched path says so", url: "/lock?path=/not/watched", status: 200, want: []string{
			`data-watched="false"`, `Not watched.`, `cannot add watches`, // this server has no watcher: TestLockPageWatched
		}, absent: []string{`id="watch-this"`, `NOT LIVE`}},
		{name: "lock view needs a path", url: "/lock", status: 400, want: []string{`/lock?path=/locks/orders`}},
		{name: "relative path", url: "/lock?path=locks/a", status: 400, want: []string{`must start with /`}},
		{name: "trailing slash", url: "/lock?path=/locks/a/", status: 400, want: []string{`must not end with /`}},
		{name: "empty segment", url: "/lock?path=/locks//a", status: 400, want: []string{`empty segment`}},
		{name: "control character", url: "/lock?path=" + url.QueryEscape("/a\x00b"), status: 400, want: []string{`is not allowed`}},
		{name: "classroom", url: "/sim?scenario=lock1-5&strategy=predecessor&step=6", status: 200, want: []string{
			`id="scenario" data-initial="lock1-5"`, `id="strategy" data-initial="predecessor"`, `data-step="6"`,
			`/static/sim.js?v=`, `aria-current="page">Classroom`,
		}},
		{name: "classroom side by side", url: "/sim?strategy=compare", status: 200, want: []string{`data-initial="compare"`}},
		{name: "classroom both, as the page words it", url: "/sim?strategy=both", status: 200, want: []string{`id="strategy" data-initial="compare"`}},
		{name: "classroom presentation mode", url: "/sim?present=1", status: 200, want: []string{`data-present="true"`, `id="present"`}},
		{name: "classroom everyday mode", url: "/sim?present=0", status: 200, want: []string{`id="present"`}, absent: []string{`data-present`}},
		{name: "classroom bad strategy", url: "/sim?strategy=stampede", status: 400, want: []string{`unknown strategy &#34;stampede&#34;`}},
		{name: "classroom bad step", url: "/sim?step=six", status: 400, want: []string{`step &#34;six&#34; is not a step number`}},
		{name: "classroom negative step", url: "/sim?step=-1", status: 400, want: []string{`is not a step number`}},
		{name: "html is escaped", url: "/lock?path=" + url.QueryEscape("/<script>alert(1)</script>"), status: 200,
			want: []string{`&lt;script&gt;alert(1)&lt;/script&gt;`}, absent: []string{`<script>alert(1)`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, body := pageGet(t, ts.URL+tc.url, nil)
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d; body:\n%s", res.StatusCode, tc.status, body)
			}
			if ct := res.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
				t.Errorf("Content-Type %q", ct)
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("body lacks %q:\n%s", w, body)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(body, a) {
					t.Errorf("body has %q", a)
				}
			}
		})
	}
}

// The dashboard's first paint shows the ZooKeeper reader's own session state,
// which is known with no lock watched; without a reader it is inferred from
// the locks.
func TestDashboardConnection(t *testing.T) {
	for _, tc := range []struct {
		name  string
		state lockqueue.Connection
		set   bool
		want  []string
	}{
		{"connected, nothing watched", lockqueue.Connected, true, []string{`data-state="connected"`, `ZooKeeper: connected · no lock watched yet`}},
		{"reconnecting", lockqueue.Reconnecting, true, []string{`data-state="reconnecting"`, `NOT live`}},
		{"no watcher", "", true, []string{`data-state="none"`, `this server has no watcher`}},
		{"not told", "", false, []string{`ZooKeeper: no lock watched yet`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := hub.New()
			cfg := Config{Hub: h, Pages: true, Logger: testLogger(t)}
			if tc.set {
				cfg.Services = zkRegistry(&stubWatcher{conn: tc.state}, nil)
			}
			srv, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ts := httptest.NewServer(srv)
			defer ts.Close()
			_, body := pageGet(t, ts.URL+"/", nil)
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("body lacks %q", w)
				}
			}
		})
	}
}

func TestClassroomOff(t *testing.T) {
	ts := pageServer(t, false)
	res, body := pageGet(t, ts.URL+"/sim", nil)
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("status %d, want 404", res.StatusCode)
	}
	if !strings.Contains(body, "serve --sim") || strings.Contains(body, `id="scenario"`) {
		t.Errorf("page does not say how to turn the simulator on:\n%s", body)
	}
	_, dash := pageGet(t, ts.URL+"/", nil)
	if strings.Contains(dash, `href="/sim"`) {
		t.Error("dashboard links to a classroom that is off")
	}
}

// A 10,000-node lock renders one page of rows; the browser pages the rest.
func TestLockPageLargeQueue(t *testing.T) {
	var kids []lockqueue.Child
	for i := range 10000 {
		kids = append(kids, lockqueue.Child{Name: fmt.Sprintf("_c_%032x-lock-%010d", i, i), Czxid: int64(i), EphemeralOwner: int64(i + 1)})
	}
	s := lockqueue.Build("/big", kids, lockqueue.Options{})
	s.Connection = lockqueue.Connected
	ts := pageServer(t, false, s)
	res, body := pageGet(t, ts.URL+"/lock?path=/big", nil)
	if res.StatusCode != 200 {
		t.Fatalf("status %d", res.StatusCode)
	}
	if n := strings.Count(body, "<tr data-row="); n != 100 {
		t.Errorf("%d rows rendered, want 100", n)
	}
	if !strings.Contains(body, "9900 more rows") {
		t.Error("page does not say how many rows are left")
	}
}

var assetRef = regexp.MustCompile(`(?:src|href)="(/static/[^"?]+)(?:\?v=([0-9a-f]+))?"`)

// Every asset a page names is served, with a version that makes it cacheable
// for good, and revalidates by ETag without one.
func TestStaticAssets(t *testing.T) {
	ts := pageServer(t, true, pageSnapshot("/a", lockqueue.Connected, "W_0000000001"))
	seen := map[string]bool{}
	for _, page := range []string{"/", "/lock?path=/a", "/sim"} {
		_, body := pageGet(t, ts.URL+page, nil)
		refs := assetRef.FindAllStringSubmatch(body, -1)
		if len(refs) < 3 {
			t.Errorf("%s names %d assets", page, len(refs))
		}
		for _, m := range refs {
			if seen[m[0]] {
				continue
			}
			seen[m[0]] = true
			if m[2] == "" {
				t.Errorf("%s: %s has no version", page, m[1])
			}
			res, _ := pageGet(t, ts.URL+m[1]+"?v="+m[2], nil)
			if res.StatusCode != 200 {
				t.Errorf("%s: status %d", m[0], res.StatusCode)
			}
			if cc := res.Header.Get("Cache-Control"); cc != "public, max-age=31536000, immutable" {
				t.Errorf("%s: Cache-Control %q", m[0], cc)
			}
		}
	}

	tests := []struct {
		name, path, ctype string
	}{
		{"module", "/static/queue.js", "text/javascript; charset=utf-8"},
		{"stylesheet", "/static/app.css", "text/css; charset=utf-8"},
		{"icon", "/static/favicon.svg", "image/svg+xml"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, body := pageGet(t, ts.URL+tc.path, nil)
			if res.StatusCode != 200 || body == "" {
				t.Fatalf("status %d, %d bytes", res.StatusCode, len(body))
			}
			if got := res.Header.Get("Content-Type"); got != tc.ctype {
				t.Errorf("Content-Type %q, want %q", got, tc.ctype)
			}
			if got := res.Header.Get("Cache-Control"); got != "no-cache" {
				t.Errorf("unversioned Cache-Control %q, want no-cache", got)
			}
			etag := res.Header.Get("ETag")
			if etag == "" {
				t.Fatal("no ETag")
			}
			res, body = pageGet(t, ts.URL+tc.path, http.Header{"If-None-Match": {etag}})
			if res.StatusCode != http.StatusNotModified || body != "" {
				t.Errorf("revalidation: status %d, %d bytes; want 304 and none", res.StatusCode, len(body))
			}
		})
	}

	for _, p := range []string{"/static/nope.js", "/static/static.go", "/static/", "/static/../go.mod"} {
		if res, _ := pageGet(t, ts.URL+p, nil); res.StatusCode != http.StatusNotFound {
			t.Errorf("%s: status %d, want 404", p, res.StatusCode)
		}
	}
}

var jsImport = regexp.MustCompile(`(?m)^import .* from '\./([^'?]+)(?:\?v=([0-9a-f]*))?';`)

// The modules import each other by relative URL; each import must name a
// file that is embedded, with the assets' version as a page names them (so
// that an import is cached for good, and is the module a page preloads).
func TestModuleImportsResolve(t *testing.T) {
	a, err := loadAssets(static.FS)
	if err != nil {
		t.Fatal(err)
	}
	modules := 0
	for name, f := range a.files {
		if !strings.HasSuffix(name, ".js") {
			continue
		}
		modules++
		for _, m := range jsImport.FindAllStringSubmatch(string(f.body), -1) {
			if _, ok := a.files[m[1]]; !ok {
				t.Errorf("%s imports ./%s, which is not embedded", name, m[1])
			}
			if m[2] != a.version {
				t.Errorf("%s imports ./%s with version %q, want %q", name, m[1], m[2], a.version)
			}
		}
	}
	if modules < 5 {
		t.Errorf("only %d modules embedded", modules)
	}
}

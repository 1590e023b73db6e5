package web

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/hub"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/lockservice"
)

// brokenReader is a reader that cannot reach its server: it follows one
// lock it never reads, and says why in Err as a service would.
type brokenReader struct{ watchList }

func (b *brokenReader) Err() error {
	return errors.New("broken 10.0.0.5:6379: WRONGPASS: check --broken-password")
}
func (b *brokenReader) Connection() lockqueue.Connection { return lockqueue.Reconnecting }

// servicePages serves ZooKeeper (a reader following /locks/orders), the
// fixture of seam_test.go with its lock "orders" watched, and a broken
// service, all through the real server with its pages.
func servicePages(t *testing.T) (*hub.Hub, *httptest.Server) {
	t.Helper()
	reg := zkRegistry(&watchList{"/locks/orders"}, nil)
	h := hub.New()
	srv, err := New(Config{Hub: h, Services: reg, Pages: true, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	fix, r := fixtureService(h)
	broken := lockservice.Service{Name: "broken", Title: "Broken", Reader: &brokenReader{watchList{"stuck"}}, CheckName: fix.CheckName}
	for _, s := range []lockservice.Service{fix, broken} {
		if err := reg.Register(s); err != nil {
			t.Fatal(err)
		}
	}
	h.Publish(gozkFolder("/locks/orders", 2).snapshot())
	if err := r.Watch("orders"); err != nil {
		t.Fatal(err)
	}
	return h, ts
}

// The dashboard lists every service's locks with a badge, each reader's
// status and error, a filter by service, and links that name the service.
func TestDashboardEveryService(t *testing.T) {
	_, ts := servicePages(t)
	for _, tc := range []struct {
		name, url    string
		code         int
		want, absent []string
	}{
		{name: "every service", url: "/", code: 200, want: []string{
			`<tr data-lock="/locks/orders" data-service="zookeeper"`, `data-service="zookeeper">ZooKeeper</span>`,
			`href="/lock?path=%2Flocks%2Forders"`,
			`<tr data-lock="orders" data-service="fixture"`, `data-service="fixture">Fixture (fixed test data)</span>`,
			`href="/lock?service=fixture&amp;path=orders"`, `title="a (client-a)">client-a</td>`,
			`<li data-service="fixture"><span class="ensemble" data-state="connected" role="status">Fixture (fixed test data): connected</span>`,
			`data-state="reconnecting" role="status">Broken: unreachable, reconnecting`,
			`<span class="service-err" role="alert">broken 10.0.0.5:6379: WRONGPASS: check --broken-password</span>`,
			`<tr data-lock="stuck" data-service="broken" data-connection="">`, `not read yet`,
			`<select id="filter-service" name="service">`, `<option value="fixture">`,
			`<select id="watch-service" name="service"`,
		}, absent: []string{"goroutine", ".go:"}},
		{name: "filtered", url: "/?service=fixture", code: 200,
			want:   []string{`data-lock="orders"`, `<option value="fixture" selected>`},
			absent: []string{`data-lock="/locks/orders"`, `data-lock="stuck"`}},
		{name: "the live part alone", url: "/parts/dashboard?service=zookeeper", code: 200,
			want:   []string{`<ul id="services"`, `data-lock="/locks/orders"`, `id="locks-body"`},
			absent: []string{`<html`, `data-lock="orders"`, `id="watch-form"`}},
		{name: "unknown service", url: "/?service=nope", code: 404, want: []string{`unknown service &#34;nope&#34;`, `zookeeper, fixture, broken`}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkPage(t, ts.URL+tc.url, tc.code, tc.want, tc.absent) })
	}
}

// The lock view of another service draws that service's lock, and its
// table shows the service-neutral fields; a ZooKeeper lock's table keeps
// its columns.
func TestLockPageOtherService(t *testing.T) {
	h, ts := servicePages(t)
	// A lock whose waiter the server itself reports blocked, as PostgreSQL
	// does, beside the rule's edge.
	blocked := (&fixtureReader{}).queue("blocked", 0)
	blocked.Nodes[2].SetBlockedBy([]string{"a", "b"})
	blocked.Nodes[2].SetWaitsForSource(lockqueue.ByServer)
	h.Publish(blocked)

	until := fixtureEpoch.Add(8 * time.Second).UnixMilli()
	for _, tc := range []struct {
		name, url    string
		want, absent []string
	}{
		{name: "fixture", url: "/lock?service=fixture&path=orders", want: []string{
			`data-service="fixture"`, `data-service-title="Fixture (fixed test data)"`, `data-path="orders"`,
			`<span class="svc svc-fixture" data-service="fixture">Fixture (fixed test data)</span>`,
			`<th scope="col">order</th><th scope="col">client</th><th scope="col">lease</th><th scope="col">blocked by</th>`,
			`data-row="a" data-state="holding"`, `<td class="mono client">client-a</td>`,
			`data-lease="lease-a" data-ttl="10s"`, fmt.Sprintf(`data-until="%d"`, until), `data-expired="expired">expired</span>`,
			`data-to="a" data-provenance="inferred">a <small>(inferred)</small>`,
			`<a id="json" href="/api/v1/lock?service=fixture&amp;path=orders">JSON</a>`,
		}},
		{name: "confirmed edges", url: "/lock?service=fixture&path=blocked", want: []string{
			`data-to="b" data-provenance="confirmed">b <small>(confirmed)</small></span>`,
			`data-to="a" data-provenance="confirmed">a <small>(confirmed)</small></span>`,
			`<td class="mono blocked">a, b</td>`,
		}},
		{name: "not watched", url: "/lock?service=fixture&path=other", want: []string{
			`data-watched="false"`, `id="watch-this"`, `never writes to Fixture (fixed test data)`,
		}, absent: []string{"sets one persistent recursive watch"}},
		{name: "zookeeper unchanged", url: "/lock?path=/locks/orders", want: []string{
			`data-service="zookeeper"`, `<th scope="col">session</th><th scope="col">data</th>`,
			`<a id="json" href="/api/v1/lock?path=%2Flocks%2Forders">JSON</a>`,
		}, absent: []string{`data-provenance`, `class="svc`, `>order<`}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkPage(t, ts.URL+tc.url, http.StatusOK, tc.want, tc.absent) })
	}
}

// checkPage GETs u and wants its status, every string of want in the body
// and none of absent.
func checkPage(t *testing.T, u string, code int, want, absent []string) {
	t.Helper()
	res, body := pageGet(t, u, nil)
	if res.StatusCode != code {
		t.Fatalf("GET %s = %d, want %d:\n%s", u, res.StatusCode, code, body)
	}
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Errorf("GET %s lacks %s:\n%s", u, w, body)
		}
	}
	for _, a := range absent {
		if strings.Contains(body, a) {
			t.Errorf("GET %s has %s", u, a)
		}
	}
}

// The table's pages are rendered by the server for the lock page (GET
// /parts/lock, the hub's newest snapshot, with its summary and alerts) and
// the classroom (POST, the step it shows).
func TestTableParts(t *testing.T) {
	var kids []lockqueue.Child
	for i := range 250 {
		kids = append(kids, lockqueue.Child{Name: fmt.Sprintf("W_%010d", i), Czxid: int64(i), EphemeralOwner: int64(i + 1)})
	}
	big := lockqueue.Build("/big", kids, lockqueue.Options{})
	big.Connection = lockqueue.Connected
	ts := pageServer(t, false, big)
	for _, tc := range []struct {
		name, url    string
		code         int
		want, absent []string
	}{
		{name: "second page", url: "/parts/lock?path=/big&page=1&size=100", code: 200, want: []string{
			`data-info="rows 101–200 of 250 · page 2/3"`, `data-page="1"`, `data-pages="3"`, `<td class="num">101</td>`,
			`<caption>/big: 1 holding, 249 other nodes</caption>`,
			// The summary and the alerts of the same snapshot come with it.
			`<div id="summary" class="stats" data-title="/big · 1 holding · 249 waiting — zklockviz">`,
			`<b>249</b> waiting`, `<ul id="alerts"`,
		}, absent: []string{`<html`, `<td class="num">100</td>`, `<td class="num">201</td>`}},
		{name: "the page of a node", url: "/parts/lock?path=/big&size=100&show=W_0000000222&selected=W_0000000222", code: 200, want: []string{
			`data-page="2"`, `<tr data-row="W_0000000222" data-state="waiting" class="selected">`,
		}},
		{name: "filtered", url: "/parts/lock?path=/big&q=W_0000000222", code: 200, want: []string{
			`(1 match the filter)`, `data-row="W_0000000222"`, `data-info="rows 1–1 of 1 · page 1/1"`,
		}, absent: []string{`data-row="W_0000000001"`}},
		{name: "not watched", url: "/parts/lock?path=/none", code: 200, want: []string{`data-info="no rows"`, `/none: 0 holding, 0 other nodes`}},
		{name: "bad path", url: "/parts/lock?path=none", code: 400, want: []string{`must start with /`}},
		{name: "a node's details", url: "/parts/lock?path=/big&selected=W_0000000002", code: 200, want: []string{
			`<div class="node-details" data-node="W_0000000002">`, `<dd class="mono">/big/W_0000000002</dd>`,
			`<dt class="">recipe says it waits for</dt><dd class="mono">W_0000000001</dd>`, `<dt class="time">waiting for</dt>`,
		}},
		{name: "as text", url: "/parts/lock-text?path=/big", code: 200, want: []string{"lock /big\n", "250  W_0000000249  "}},
		{name: "as text, not watched", url: "/parts/lock-text?path=/none", code: 404, want: []string{"/none is not watched"}},
		{name: "unknown service", url: "/parts/lock?service=nope&path=/big", code: 404, want: []string{`unknown service`}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkPage(t, ts.URL+tc.url, tc.code, tc.want, tc.absent) })
	}
}

package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/hub"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/lockservice"
	"github.com/zklockviz/zklockviz/web"
	"github.com/zklockviz/zklockviz/zookeeper"
)

// Another lock service's locks in the browser. No reader of Redis, etcd
// or PostgreSQL exists in this package's binary yet, so the pages are
// served in-process (the real web server, its real pages and scripts)
// beside a service named "neutral": no lock service at all, a reader over
// snapshots this test publishes, filled with the service-neutral fields
// (order, client, lease, waits-for by rule or by the server).

// neutralReader follows the names it is told and says what is wrong with
// its made-up server.
type neutralReader struct {
	mu      sync.Mutex
	watched []string
}

func (r *neutralReader) Watch(name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !slices.Contains(r.watched, name) {
		r.watched = append(r.watched, name)
	}
	return nil
}

func (r *neutralReader) Watched() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.watched)
}

func (r *neutralReader) Unwatch(string) error             { return lockservice.ErrUnsupported }
func (r *neutralReader) Connection() lockqueue.Connection { return lockqueue.Connected }
func (r *neutralReader) Run(ctx context.Context) error    { <-ctx.Done(); return nil }
func (r *neutralReader) Close()                           {}
func (r *neutralReader) Err() error {
	return errors.New("neutral 10.0.0.9:1234: one replica refuses reads: check --neutral-user")
}

// neutralQueue is the lock "orders" with clients from the first on:
// the first holds with a lease of a minute, the second waits for it by the
// recipe's rule, the third waits for the second as the server reports,
// and the server says it is blocked by the holder too.
func neutralQueue(first int, at time.Time) lockqueue.Snapshot {
	s := lockqueue.Snapshot{
		Service: "neutral", Path: "orders", Recipe: "neutral", Revision: int64(first + 1),
		Connection: lockqueue.Connected, WatchSource: "none", Exists: true, UpdatedAt: at,
	}
	for i := first; i < 3; i++ {
		n := lockqueue.Node{
			Name: fmt.Sprintf("k%d", i), Seq: -1, Mode: lockqueue.Exclusive,
			Rare: &lockqueue.Rare{
				Order: int64(100 + i), Client: fmt.Sprintf("pid-%d", 4000+i),
				LeaseID: fmt.Sprintf("lease-%d", i), LeaseTTLMs: 60_000, LeaseLeftMs: 60_000,
			},
			Ctime: at.Add(-time.Minute),
		}
		switch {
		case i == first:
			n.Holding = true
		case i == 1:
			n.WaitsFor = "k0"
			n.SetWaitsForSource(lockqueue.ByRule)
		default:
			n.WaitsFor = fmt.Sprintf("k%d", i-1)
			n.SetWaitsForSource(lockqueue.ByServer)
			n.SetBlockedBy([]string{fmt.Sprintf("k%d", i-1), "k0"})
		}
		s.Nodes = append(s.Nodes, n)
	}
	return s
}

// neutralServer serves ZooKeeper (no reader) and the neutral service.
func neutralServer(t *testing.T) (*hub.Hub, string) {
	t.Helper()
	var reg lockservice.Registry
	for _, s := range []lockservice.Service{
		zookeeper.Service(nil, nil),
		{Name: "neutral", Title: "Neutral", Reader: &neutralReader{watched: []string{"orders"}}, CheckName: func(string) error { return nil }},
	} {
		if err := reg.Register(s); err != nil {
			t.Fatal(err)
		}
	}
	h := hub.New()
	srv, err := web.New(web.Config{Hub: h, Services: &reg, Pages: true})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		ts.Close()
	})
	return h, ts.URL
}

func TestNeutralServiceLockView(t *testing.T) {
	need(t)
	h, url := neutralServer(t)
	at := time.Now()
	h.Publish(neutralQueue(0, at))
	tb := newTab(t)
	tb.open(url + "/lock?service=neutral&path=orders")
	tb.until("three nodes, live", nodeCount(3)+` && document.body.dataset.live === 'true'`)
	tb.until("k0 holds", node("k0", "holding"))

	// Who vouches for each waits-for edge, in the lane and in the table.
	tb.until("k1 → k0 inferred", arrow("k1", "k0", "rule")+`.dataset.provenance === 'inferred'`)
	tb.until("k2 → k1 confirmed", arrow("k2", "k1", "rule")+`.dataset.provenance === 'confirmed'`)
	tb.until("k2 blocked by k0", arrow("k2", "k0", "blocked")+`.dataset.provenance === 'confirmed'`)
	heads := eval[string](tb, `[...document.querySelectorAll('#table thead th')].map(th => th.textContent).join(',')`)
	if want := "#,node,mode,state,waits for,order,client,lease,blocked by,data,time,alerts"; heads != want {
		t.Errorf("table columns %s, want %s", heads, want)
	}
	row := func(name string) string {
		return fmt.Sprintf(`document.querySelector('#table tr[data-row=%s]')`, jsString(name))
	}
	tb.until("k2's row", row("k2")+` && `+row("k2")+`.querySelector('td.blocked').textContent === 'k1, k0'`)
	if got := eval[string](tb, row("k2")+`.querySelector('td.waits').textContent`); got != "k1 (confirmed), k0 (confirmed)" {
		t.Errorf("k2 waits for %q, want k1 and k0, confirmed", got)
	}
	if got := eval[string](tb, row("k1")+`.querySelector('td.waits').textContent`); got != "k0 (inferred)" {
		t.Errorf("k1 waits for %q, want k0 (inferred)", got)
	}
	if got := eval[string](tb, row("k0")+`.querySelector('td.client').textContent + ' ' + `+row("k0")+`.querySelector('td.order').textContent`); got != "pid-4000 100" {
		t.Errorf("k0's client and order %q", got)
	}
	// The lease counts down from the snapshot's updatedAt.
	until := eval[float64](tb, `Number(`+row("k0")+`.querySelector('td.lease .lease-left').dataset.until)`)
	if want := at.Add(time.Minute).UnixMilli(); int64(until) != want {
		t.Errorf("k0's lease runs out at %v, want updatedAt + 60s = %v", int64(until), want)
	}
	tb.until("the lease's time left", `/^lease-0 \d+s left$/.test(`+row("k0")+`.querySelector('td.lease').textContent)`)
	tb.until("the lane counts it down too", `/^lease · \d+s left$/.test(document.querySelector('#lane [data-node=k0] .time').textContent)`)

	// The bug report's text has them too.
	text := evalAwait[string](tb, `fetch('/parts/lock-text?service=neutral&path=orders').then(r => r.text())`)
	for _, want := range []string{"blocked-by", "k1(confirmed),k0(confirmed)", "k0(inferred)", "pid-4001", "lease-2 "} {
		if !strings.Contains(text, want) {
			t.Errorf("copied text lacks %q:\n%s", want, text)
		}
	}

	// The copy button copies that text, or shows it to copy by hand.
	tb.click("copy as text", `#copy`)
	tb.until("copied", `document.getElementById('copy').textContent === 'copied ✓' || `+
		`(!document.getElementById('copy-out').hidden && document.getElementById('copy-out').value.startsWith('lock orders\n'))`)

	// The socket is the service's: a hand-off reaches the page.
	h.Publish(neutralQueue(1, at.Add(time.Second)))
	tb.until("k1 holds after the hand-off", nodeCount(2)+` && `+node("k1", "holding"))
	tb.click("click k2", `#lane [data-node="k2"]`)
	tb.until("k2's details", `document.getElementById('details').textContent.includes('pid-4002') && document.getElementById('details').textContent.includes('blocked by (server)')`)
}

func TestNeutralServiceDashboard(t *testing.T) {
	need(t)
	h, url := neutralServer(t)
	h.Publish(neutralQueue(0, time.Now()))
	tb := newTab(t)
	tb.open(url + "/")
	row := `document.querySelector('tr[data-lock="orders"][data-service="neutral"]')`
	tb.until("the neutral lock, with its badge", row+` && `+row+`.querySelector('.svc').textContent === 'Neutral'`)
	if href := eval[string](tb, row+`.querySelector('a').getAttribute('href')`); href != "/lock?service=neutral&path=orders" {
		t.Errorf("the lock's link %q does not name its service", href)
	}
	tb.until("the reader's error", `[...document.querySelectorAll('#services li[data-service=neutral] .service-err')].some(e => e.textContent.includes('check --neutral-user'))`)

	// Filter to ZooKeeper: the neutral lock goes; back to every service, it
	// is there again, refreshed.
	tb.run(`{ const s = document.getElementById('filter-service'); s.value = 'zookeeper'; s.dispatchEvent(new Event('change')); }`)
	tb.until("filtered", `!`+row+` && location.search === '?service=zookeeper' && document.querySelector('#locks-body td.dim')`)
	h.Publish(neutralQueue(1, time.Now()))
	tb.run(`{ const s = document.getElementById('filter-service'); s.value = ''; s.dispatchEvent(new Event('change')); }`)
	tb.until("every service again", row+` && `+row+`.cells[3].textContent.trim() === '1'`)
	if strings.Contains(eval[string](tb, `document.body.innerText`), "goroutine") {
		t.Error("the dashboard shows a stack trace")
	}
}

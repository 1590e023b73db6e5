package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/zklockviz/zklockviz/postgres/pglocal/pgtest"
)

// A server started for PostgreSQL alone speaks PostgreSQL: no ZooKeeper
// line on the dashboard, no watches on the lock page, and a session shown
// as pg_activity shows a backend (pid, application, client, state, query,
// transaction and wait), with the statement that would end it to copy.
func TestPostgresOnlyWords(t *testing.T) {
	need(t)
	pg := pgtest.ForTest(t)
	const lock = "advisory/42"
	psql(t, pg.DSN(), "orders-worker", "BEGIN; SELECT pg_advisory_lock(42), 'a query long enough to be shortened in the pane, as a real one would be';")
	holder := pgNode(t, pg.DSN(), "orders-worker", false)
	psql(t, pg.DSN(), "orders-waiter", "SELECT pg_advisory_lock(42);")
	waiter := pgNode(t, pg.DSN(), "orders-waiter", true)
	pid := strings.TrimPrefix(holder, "pid-")

	srv := startServerOn(t, nil, "--postgres", pg.DSN(), "--poll", "200ms", "--watch", "postgres:"+lock)
	tb := newTab(t)

	tb.open(srv.URL + "/")
	tb.until("PostgreSQL's line, connected", `document.querySelector('#services li[data-service=postgres] .ensemble')?.dataset.state === 'connected'`)
	tb.until("the lock's row", dashRow("postgres", lock))
	if got := eval[string](tb, `document.getElementById('services').textContent`); strings.Contains(got, "ZooKeeper") {
		t.Errorf("the services line of a server without --zk: %q, names ZooKeeper", got)
	}
	if live := eval[string](tb, `document.body.dataset.live`); live != "true" {
		t.Errorf("the dashboard of a PostgreSQL-only server reads live=%q", live)
	}

	tb.open(lockPage(srv.URL, "postgres", lock) + "&node=" + holder)
	tb.until("the holder and its waiter", fmt.Sprintf(`document.querySelector('#lane [data-node=%s]') && document.querySelector('#lane [data-node=%s]')`, jsString(holder), jsString(waiter)))
	tb.until("the holder's details", `document.querySelector('#details .node-details[data-node=`+jsString(holder)+`] dl')`)
	summary := eval[string](tb, `document.getElementById('summary').textContent`)
	if strings.Contains(summary, "watches from") || !strings.Contains(summary, "pg_locks, polled") {
		t.Errorf("summary %q: want how PostgreSQL is read (pg_locks, polled), not ZooKeeper's watch table", summary)
	}
	terms := eval[map[string]string](tb, `Object.fromEntries([...document.querySelectorAll('#details dt')].map(dt => [dt.textContent, dt.nextElementSibling.textContent.trim() + (dt.nextElementSibling.title ? ' | ' + dt.nextElementSibling.title : '')]))`)
	for term := range terms {
		if strings.Contains(term, "watches") || term == "data" || term == "edge" {
			t.Errorf("details of a PostgreSQL session: %q, a ZooKeeper term or the raw record", term)
		}
	}
	query := terms["query"]
	shown, full, _ := strings.Cut(query, " | ")
	for term, want := range map[string]string{
		"pid": pid, "application": "orders-worker", "backend state": "idle in transaction",
		"to end it": "SELECT pg_terminate_backend(" + pid + ");",
	} {
		if !strings.HasPrefix(terms[term], want) {
			t.Errorf("details %s: %q, want %q", term, terms[term], want)
		}
	}
	if !strings.HasSuffix(shown, "…") || len([]rune(shown)) > 61 || !strings.Contains(full, "as a real one would be") {
		t.Errorf("query shown %q, full %q: want it shortened, the whole on hover", shown, full)
	}
	for _, term := range []string{"client address", "transaction"} {
		if terms[term] == "" {
			t.Errorf("details: no %s: %v", term, terms)
		}
	}
	if !strings.Contains(terms["transaction"], "since") {
		t.Errorf("transaction %q: want its duration and start", terms["transaction"])
	}
	if sel := eval[string](tb, `getComputedStyle(document.querySelector('#details dd.copyable')).userSelect`); sel != "all" {
		t.Errorf("the terminate statement selects %q on a click, want all of it", sel)
	}
	if over := eval[bool](tb, `(() => { const p = document.getElementById('details'); return [...p.querySelectorAll('dd')].some(d => d.getBoundingClientRect().right > p.getBoundingClientRect().right + 1); })()`); over {
		t.Error("a detail runs past the pane's right edge")
	}

	// The waiter's wait, as the server reports it.
	tb.open(lockPage(srv.URL, "postgres", lock) + "&node=" + waiter)
	tb.until("the waiter's details", `document.querySelector('#details .node-details[data-node=`+jsString(waiter)+`] dl')`)
	wait := eval[string](tb, `[...document.querySelectorAll('#details dt')].find(dt => dt.textContent === 'waiting')?.nextElementSibling.textContent ?? ''`)
	if !strings.Contains(wait, "since") {
		t.Errorf("the waiter's wait: %q, want its duration and start", wait)
	}
}

// The classroom speaks the service of the scenario it runs: its legend
// has none of ZooKeeper's watch words, the strategy control (a ZooKeeper
// choice) is not shown, and while a step works the status line names the
// service it works on. A PostgreSQL client's pane shows its backend as the
// lock page does, not the reader's record.
func TestClassroomSpeaksEachService(t *testing.T) {
	need(t)
	srv := startServer(t, "--sim")
	tb := newTab(t)
	for _, c := range []struct {
		scenario, title, shot string
		notInLegend           []string
	}{
		{"redis-setnx-crash", "Redis", "classroom-redis.png", []string{"herd", "watch", "reader", "writer", "stalled"}},
		{"etcd-mutex-queue", "etcd", "classroom-etcd.png", []string{"herd", "watch", "reader", "writer", "stalled"}},
		{"pg-advisory-fifo", "PostgreSQL", "", []string{"herd", "watch", "reader", "writer", "stalled"}},
	} {
		{
			tb.open(srv.URL + "/sim?scenario=" + c.scenario)
			tb.until(c.scenario+"'s run", settled(serviceRun, 0)+` && document.getElementById('scenario').value === `+jsString(c.scenario))
			tb.run(`window.__infos = []; new MutationObserver(() => window.__infos.push(document.getElementById('step-info').textContent)).observe(document.getElementById('step-info'), {childList: true, characterData: true, subtree: true})`)
			legend := eval[string](tb, `document.getElementById('legend').textContent`)
			for _, w := range c.notInLegend {
				if strings.Contains(legend, w) {
					t.Errorf("%s: legend %q has %q", c.scenario, legend, w)
				}
			}
			if !strings.Contains(legend, "waits for") {
				t.Errorf("%s: legend %q: no waits-for edge", c.scenario, legend)
			}
			if shown := eval[bool](tb, `document.getElementById('strategy').closest('label').offsetParent !== null`); shown {
				t.Errorf("%s: the strategy control is shown for a scenario with no strategy to choose", c.scenario)
			}
			for k := 1; k <= 3; k++ {
				tb.key(kb.ArrowRight)
				tb.until(fmt.Sprintf("step %d", k), settled(serviceRun, k))
			}
			infos := eval[[]string](tb, `window.__infos`)
			working := false
			for _, info := range infos {
				if strings.Contains(info, "ZooKeeper") {
					t.Errorf("status %q during a %s scenario", info, c.title)
				}
				working = working || strings.Contains(info, "working on "+c.title+"…")
			}
			if !working {
				t.Errorf("no status said 'working on %s…' while a step ran: %q", c.title, infos)
			}
			if c.title == "Redis" {
				// A Redis client's pane: a key and its token, no session, and
				// the key's time to live in Redis's words, not a lease.
				tb.click("select a Redis client", `.run .client[data-state=holding], .run .client`)
				tb.until("the Redis client's pane, with its key's details", `document.querySelector('.run .client-pane .server-details .node-details dl dt')`)
				terms := eval[[]string](tb, `[...document.querySelectorAll('.run .client-pane dt')].map(dt => dt.textContent)`)
				for _, term := range terms {
					if term == "session" || term == "lease" {
						t.Errorf("the Redis client's pane: %q, has %q", terms, term)
					}
				}
				if all := "|" + strings.Join(terms, "|") + "|"; !strings.Contains(all, "|token|") || !strings.Contains(all, "|TTL left|") {
					t.Errorf("the Redis client's pane: %q, want its token and its TTL left in Redis's words", terms)
				}
			}
			if c.shot != "" {
				tb.screenshot(c.shot)
			}
		}
	}

	// The holder's client pane, on PostgreSQL: its backend, and no record.
	tb.click("select the holder", `.run .client[data-state=holding]`)
	tb.until("the backend's details", `document.querySelector('.run .client-pane .server-details .node-details dl')`)
	terms := eval[[]string](tb, `[...document.querySelectorAll('.run .client-pane dt')].map(dt => dt.textContent)`)
	all := strings.Join(terms, "|")
	for _, want := range []string{"pid", "application", "backend state", "query", "to end it"} {
		if !strings.Contains(all, want) {
			t.Errorf("the PostgreSQL client's pane: %q, no %q", terms, want)
		}
	}
	for _, not := range []string{"|data|", "watches"} {
		if strings.Contains("|"+all+"|", not) {
			t.Errorf("the PostgreSQL client's pane: %q, has %q", terms, not)
		}
	}
	tb.screenshot("classroom-postgres.png")
}

// A side-by-side pane is narrow: its recipe's pseudocode wraps inside the
// pane instead of running past its edge (clipped behind a scrollbar).
func TestClassroomPseudocodeFitsNarrowPanes(t *testing.T) {
	need(t)
	needServers(t, "redis-server", "etcd")
	srv := startServer(t, "--sim")
	tb := newTab(t)
	tb.open(srv.URL + "/sim?scenario=side-by-side")
	panes := `[...document.querySelectorAll('.run.side-pane')]`
	tb.until("five panes, ready", panes+`.length === 5 && `+panes+`.every(p => p.dataset.step === '0' && p.dataset.busy === 'false' && p.querySelector('.pseudo li'))`)
	for _, width := range []int{1440, 1150, 800} {
		tb.do(fmt.Sprintf("viewport %d", width), chromedp.EmulateViewport(int64(width), 900))
		clipped := eval[[]string](tb, panes+`.flatMap(p => [...p.querySelectorAll('.pseudo li')].filter(li => li.scrollWidth > li.clientWidth + 1 || li.getBoundingClientRect().right > p.querySelector('.pseudo').getBoundingClientRect().right + 1).map(li => p.dataset.service + ': ' + li.textContent))`)
		if len(clipped) > 0 {
			t.Errorf("at %d px, pseudocode lines run past their pane: %q", width, clipped)
		}
	}
}

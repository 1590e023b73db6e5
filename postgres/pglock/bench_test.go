package pglock

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
)

// BenchmarkPoll times one poll (the query, its decoding and the build of
// every watched lock's snapshot) while 100 sessions hold or wait: five
// advisory locks and five rows of one table, each with one holder and nine
// waiters, all six locks watched. The time includes the loopback round
// trip: it is what one poll costs, once per --poll whatever the number of
// viewers.
func BenchmarkPoll(b *testing.B) {
	srv := server(b, map[string]string{"max_connections": "150"})
	su := superuser(b, srv)
	exec1(b, su, "CREATE TABLE orders (id int PRIMARY KEY)")
	exec1(b, su, "INSERT INTO orders SELECT generate_series(1, 5)")
	ctx := context.Background()

	var wg sync.WaitGroup
	open := func(name string) *pgx.Conn {
		cc, err := pgx.ParseConfig(srv.DSN())
		if err != nil {
			b.Fatal(err)
		}
		cc.RuntimeParams["application_name"] = name
		c, err := pgx.ConnectConfig(ctx, cc)
		if err != nil {
			b.Fatalf("session %s: %v", name, err)
		}
		return c
	}
	// block runs sql in its own goroutine until the benchmark ends.
	runCtx, stop := context.WithCancel(ctx)
	var conns []*pgx.Conn
	block := func(c *pgx.Conn, sql string, args ...any) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.Exec(runCtx, sql, args...) // returns when cancelled
		}()
	}
	b.Cleanup(func() {
		stop()
		wg.Wait()
		for _, c := range conns {
			c.Close(ctx)
		}
	})
	watch := []string{"table/public.orders"}
	for k := 1; k <= 5; k++ {
		watch = append(watch, fmt.Sprintf("advisory/%d", k))
		for i := range 10 {
			c := open(fmt.Sprintf("adv-%d-%d", k, i))
			conns = append(conns, c)
			if i == 0 {
				if _, err := c.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(k)); err != nil {
					b.Fatal(err)
				}
				continue
			}
			block(c, "SELECT pg_advisory_lock($1)", int64(k))
		}
		for i := range 10 {
			c := open(fmt.Sprintf("row-%d-%d", k, i))
			conns = append(conns, c)
			if i == 0 {
				if _, err := c.Exec(ctx, "BEGIN"); err != nil {
					b.Fatal(err)
				}
				if _, err := c.Exec(ctx, "SELECT 1 FROM orders WHERE id = $1 FOR UPDATE", k); err != nil {
					b.Fatal(err)
				}
				continue
			}
			block(c, "UPDATE orders SET id = id WHERE id = $1", k)
		}
	}
	waitQuery(b, su, "90 sessions to wait", `SELECT count(DISTINCT pid) = 90 FROM pg_locks WHERE NOT granted`)

	col := newCollector()
	r, err := New(Config{DSN: srv.DSN(), Publish: col.publish, Watch: watch})
	if err != nil {
		b.Fatal(err)
	}
	defer r.disconnect()
	r.poll(ctx)
	if err := r.Err(); err != nil {
		b.Fatal(err)
	}
	total := 0
	for _, name := range watch {
		s, _ := col.get(name)
		total += len(s.Nodes)
	}
	if total != 100 {
		b.Fatalf("the snapshots show %d sessions, want 100", total)
	}
	for _, name := range watch {
		want := 9
		if name == "table/public.orders" {
			want = 45 // five rows, one lock
		}
		if s, _ := col.get(name); len(s.Waiters()) != want {
			b.Fatalf("%s: %d waiters, want %d", name, len(s.Waiters()), want)
		}
	}

	args := queryArgs(r.namesOf(watch), false, false)
	// The query alone (server time and the round trip), beside the
	// whole poll.
	b.Run("query-only", func(b *testing.B) {
		var raw []byte
		for b.Loop() {
			if err := r.db.QueryRow(ctx, r.query, args...).Scan(&raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("100-sessions", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r.poll(ctx)
		}
		if err := r.Err(); err != nil {
			b.Fatal(err)
		}
	})

	// The same six locks found by --watch-under postgres:advisory and
	// postgres:rows instead of named: the same one query, widened.
	dcol := newCollector()
	d, err := New(Config{DSN: srv.DSN(), Publish: dcol.publish, Discover: []string{DiscoverAdvisory, DiscoverRows}})
	if err != nil {
		b.Fatal(err)
	}
	defer d.disconnect()
	d.poll(ctx)
	if got := d.Watched(); !slices.Equal(got, []string{"advisory/1", "advisory/2", "advisory/3", "advisory/4", "advisory/5", "table/public.orders"}) {
		b.Fatalf("discovery found %v, want the six locks", got)
	}
	for _, name := range watch {
		s, _ := col.get(name)
		if ds, _ := dcol.get(name); len(ds.Nodes) != len(s.Nodes) || len(ds.Waiters()) != len(s.Waiters()) {
			b.Fatalf("%s found: %d nodes, %d waiters; named: %d, %d", name, len(ds.Nodes), len(ds.Waiters()), len(s.Nodes), len(s.Waiters()))
		}
	}
	b.Run("100-sessions-discovered", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			d.poll(ctx)
		}
		if err := d.Err(); err != nil {
			b.Fatal(err)
		}
	})
}

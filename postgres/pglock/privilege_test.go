package pglock

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/postgres/pglocal"
)

// dsnAs is srv's DSN for role with password (none when empty).
func dsnAs(t testing.TB, srv *pglocal.Server, role, password string) string {
	t.Helper()
	u, err := url.Parse(srv.DSNFor(role, "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	if password != "" {
		u.User = url.UserPassword(role, password)
	}
	return u.String()
}

// A role with only pg_monitor sees everything the view needs, and the
// reader writes nothing: no transaction id is assigned anywhere while it
// reads (any write needs one), and its session is read-only by default,
// so even a write it tried would fail.
func TestLeastPrivilege(t *testing.T) {
	srv := server(t, nil)
	su := superuser(t, srv)
	exec1(t, su, "CREATE ROLE viz LOGIN PASSWORD 'viz-pw' IN ROLE pg_monitor")
	exec1(t, su, "CREATE TABLE orders (id int PRIMARY KEY)")

	a, b := startPsql(t, srv, "lp-holder"), startPsql(t, srv, "lp-waiter")
	pa, pb := pidOf(t, su, "lp-holder"), pidOf(t, su, "lp-waiter")
	a.send(t, "SELECT pg_advisory_lock(7);")
	holdsAdvisory(t, su, pa, 1)

	xmax := func() int64 {
		var x int64
		if err := su.QueryRow(context.Background(), "SELECT pg_snapshot_xmax(pg_current_snapshot())::text::int8").Scan(&x); err != nil {
			t.Fatal(err)
		}
		return x
	}
	before := xmax()

	// The password comes apart from the DSN, as --postgres-password gives it.
	_, col := startReader(t, Config{DSN: dsnAs(t, srv, "viz", ""), Password: "viz-pw",
		Watch: []string{"advisory/7", "table/public.orders"}})
	col.await(t, "advisory/7", "the holder", func(s lockqueue.Snapshot) bool { return len(s.Nodes) == 1 })
	b.send(t, "SELECT pg_advisory_lock(7);")
	waitingOn(t, su, pb)
	s := col.await(t, "advisory/7", "the waiter too", func(s lockqueue.Snapshot) bool { return len(s.Nodes) == 2 })
	for _, n := range s.Nodes {
		if !strings.Contains(n.Data, `"application":"lp-`) || !strings.Contains(n.Data, `"query":"SELECT pg_advisory_lock(7);"`) {
			t.Errorf("pg_monitor should see %s's application and query: %s", n.Name, n.Data)
		}
	}
	if after := xmax(); after != before {
		t.Errorf("transaction ids were assigned while the reader read (xmax %d → %d): something wrote", before, after)
	}
	var readers int
	if err := su.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
		WHERE usename = 'viz' AND application_name = 'zklockviz' AND backend_xid IS NULL`).Scan(&readers); err != nil || readers != 1 {
		t.Errorf("the reader's session as viz, without a transaction id: %d sessions (%v)", readers, err)
	}

	// The session the reader opens refuses writes.
	cc, err := ConnConfig(dsnAs(t, srv, "viz", "viz-pw"), "")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var ro string
	if err := c.QueryRow(ctx, "SHOW default_transaction_read_only").Scan(&ro); err != nil || ro != "on" {
		t.Errorf("default_transaction_read_only = %q (%v), want on", ro, err)
	}
	_, err = c.Exec(ctx, "CREATE TEMP TABLE scratch (i int)")
	var pg *pgconn.PgError
	if !errors.As(err, &pg) || pg.Code != "25006" {
		t.Errorf("a write in the reader's session: %v, want read_only_sql_transaction (25006)", err)
	}
}

// Each connection problem is an error naming postgres, the address and
// what to check, in Err and in the watched lock's snapshot, and the
// reader recovers once the problem is fixed.
func TestBadInput(t *testing.T) {
	srv := server(t, nil)
	su := superuser(t, srv)
	exec1(t, su, "CREATE ROLE viz LOGIN PASSWORD 'viz-pw' IN ROLE pg_monitor")
	exec1(t, su, "CREATE ROLE nomon LOGIN PASSWORD 'nomon-pw'")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()

	for _, tc := range []struct {
		name, dsn, addr string
		want            []string
		fix             string // a statement after which the reader must recover
	}{
		{"unreachable", "postgres://viz@" + closed + "/postgres?sslmode=disable", closed,
			[]string{"connection refused", "check the host and port in --postgres"}, ""},
		{"wrong password", dsnAs(t, srv, "viz", "nope"), srv.Addr(),
			[]string{"wrong password for role viz", "--postgres-password", "PGPASSWORD"}, ""},
		{"no such database", strings.Replace(dsnAs(t, srv, "viz", "viz-pw"), "/postgres?", "/nodb?", 1), srv.Addr(),
			[]string{"no such database", "check the database name"}, ""},
		{"role without pg_monitor", dsnAs(t, srv, "nomon", "nomon-pw"), srv.Addr(),
			[]string{"role nomon lacks pg_monitor", "GRANT pg_monitor TO nomon"}, "GRANT pg_monitor TO nomon"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, col := startReader(t, Config{DSN: tc.dsn, Watch: []string{"advisory/1"}})
			s := col.await(t, "advisory/1", "an error", func(s lockqueue.Snapshot) bool { return s.Error != "" })
			for _, want := range append([]string{"postgres " + tc.addr + ": "}, tc.want...) {
				if !strings.Contains(s.Error, want) {
					t.Errorf("snapshot error %q does not say %q", s.Error, want)
				}
			}
			if s.Connection == lockqueue.Connected || r.Connection() == lockqueue.Connected {
				t.Errorf("connection %s / %s while failing", s.Connection, r.Connection())
			}
			if err := r.Err(); err == nil || err.Error() != s.Error {
				t.Errorf("Err() = %v, want the snapshot's error", err)
			}
			if strings.Contains(s.Error, "nomon-pw") || strings.Contains(s.Error, "viz-pw") {
				t.Errorf("the error shows a password: %s", s.Error)
			}
			if tc.fix == "" {
				return
			}
			exec1(t, su, tc.fix)
			col.await(t, "advisory/1", "recovery", func(s lockqueue.Snapshot) bool { return s.Live() && s.Error == "" })
			if err := r.Err(); err != nil {
				t.Errorf("Err() = %v after recovery", err)
			}
		})
	}

	_, err = New(Config{DSN: "postgres://u:secret-pw@host:notaport/db", Publish: func(lockqueue.Snapshot) {}})
	if err == nil || strings.Contains(err.Error(), "secret-pw") || !strings.Contains(err.Error(), "--postgres") {
		t.Errorf("a bad DSN: %v, want an error naming --postgres without the password", err)
	}
	if _, err := New(Config{DSN: srv.DSN(), Publish: func(lockqueue.Snapshot) {}, Watch: []string{"advisory/x"}}); err == nil {
		t.Error("a bad lock name was accepted")
	}
}

package pglock

import (
	"context"
	"log/slog"
	"testing"

	"github.com/jackc/pgx/v5"
)

// A reader names its locks' cluster by the server's system identifier, and
// by its address only when its role may not read it. A connection that
// dies as the identifier is read (the server killed right after it took
// the connect, as a lab's nemesis does) fails the connect instead: named
// by the address for that moment, the lock was recorded as another
// cluster's, its history split in two, and a lab run read the part that
// had no gap over the outage (TestLabCI/postgres/server).
func TestClusterName(t *testing.T) {
	srv := server(t, nil)
	su := superuser(t, srv)
	ctx := context.Background()
	exec1(t, su, "CREATE ROLE viz LOGIN PASSWORD 'viz-pw' IN ROLE pg_monitor")
	var id string
	if err := su.QueryRow(ctx, "SELECT system_identifier::text FROM pg_control_system()").Scan(&id); err != nil || id == "" {
		t.Fatalf("system identifier %q: %v", id, err)
	}
	cc, err := ConnConfig(dsnAs(t, srv, "viz", "viz-pw"), "")
	if err != nil {
		t.Fatal(err)
	}
	r := &Reader{conn: cc, addr: "127.0.0.1:1", log: slog.New(slog.DiscardHandler)}
	connect := func() *pgx.Conn {
		t.Helper()
		db, err := pgx.ConnectConfig(ctx, cc)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close(context.Background()) })
		return db
	}

	db := connect()
	if got, err := r.clusterOf(ctx, db); err != nil || got != id {
		t.Errorf("cluster %q (%v), want the system identifier %q", got, err, id)
	}
	var pid uint32
	if err := db.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	// Waits until the backend is gone (PostgreSQL 14+).
	exec1(t, su, "SELECT pg_terminate_backend($1, 10000)", pid)
	if got, err := r.clusterOf(ctx, db); err == nil {
		t.Errorf("cluster %q read on a connection the server ended: want an error, not a cluster", got)
	}

	exec1(t, su, "REVOKE EXECUTE ON FUNCTION pg_control_system() FROM PUBLIC")
	exec1(t, su, "REVOKE EXECUTE ON FUNCTION pg_control_system() FROM pg_monitor")
	if got, err := r.clusterOf(ctx, connect()); err != nil || got != "127.0.0.1:1/postgres" {
		t.Errorf("cluster %q (%v) for a role that may not read the identifier, want 127.0.0.1:1/postgres", got, err)
	}
}

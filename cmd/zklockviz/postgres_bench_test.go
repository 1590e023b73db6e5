package main

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/zklockviz/zklockviz/postgres/pglocal"
	"github.com/zklockviz/zklockviz/postgres/pglocal/pgtest"
)

// BenchmarkPostgresViewers measures what the PostgreSQL reader costs the
// server with 1 and with 100 websocket viewers of one advisory lock whose
// holder comes and goes once per iteration (each change reaches every
// viewer before the next): pg_stat_statements counts the reader's poll
// queries and their execution time. The reader polls on its own clock
// (--poll 100ms), so queries/s and server-ms/s are the same for any
// number of viewers; per change they follow the time a change takes to
// reach every viewer.
//
//	go test ./cmd/zklockviz -run '^$' -bench BenchmarkPostgresViewers -benchtime 50x
func BenchmarkPostgresViewers(b *testing.B) {
	zks := sharedZK(b)
	pg := pgtest.ForTestWith(b, pglocal.Options{Settings: map[string]string{"shared_preload_libraries": "pg_stat_statements"}})
	ctx := context.Background()
	su, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { su.Close(ctx) })
	if _, err := su.Exec(ctx, "CREATE EXTENSION pg_stat_statements"); err != nil {
		b.Fatal(err)
	}
	holder, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { holder.Close(ctx) })

	m := startMain(b, "--zk", zks.Addr(), "--postgres", pg.DSN(), "--poll", "100ms")
	svc, err := m.services.Lookup("postgres")
	if err != nil || svc.Reader == nil {
		b.Fatalf("no postgres reader: %v", err)
	}
	if err := svc.Reader.Watch("advisory/42"); err != nil {
		b.Fatal(err)
	}
	url := "ws" + strings.TrimPrefix(m.URL(), "http") + "/ws?service=postgres&path=advisory/42"

	// polls is the reader's poll queries so far and their server time.
	polls := func() (calls int64, ms float64) {
		err := su.QueryRow(ctx, `SELECT coalesce(sum(calls), 0)::int8, coalesce(sum(total_exec_time), 0)
			FROM pg_stat_statements WHERE query LIKE 'WITH pl AS MATERIALIZED%'`).Scan(&calls, &ms)
		if err != nil {
			b.Fatal(err)
		}
		return calls, ms
	}
	held := false
	for _, viewers := range []int{1, 100} {
		b.Run("viewers="+strconv.Itoa(viewers), func(b *testing.B) {
			vs := dialViewers(b, viewers, func(wg *sync.WaitGroup) *benchViewer { return dialWS(b, url, naiveShows, nil, wg) })
			calls0, ms0 := polls()
			start := time.Now()
			changes := 0
			for b.Loop() {
				changes++
				changeReachesViewers(b, vs, changes, func() error {
					sql := "SELECT pg_advisory_lock(42)"
					if held {
						sql = "SELECT pg_advisory_unlock(42)"
					}
					held = !held
					_, err := holder.Exec(ctx, sql)
					return err
				})
			}
			secs := time.Since(start).Seconds()
			calls1, ms1 := polls()
			b.ReportMetric(float64(calls1-calls0)/secs, "queries/s")
			b.ReportMetric((ms1-ms0)/secs, "server-ms/s")
			b.ReportMetric(float64(calls1-calls0)/float64(changes), "queries/change")
			b.ReportMetric(0, "ns/op")
		})
	}
}

package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/zklockviz/zklockviz/postgres/pglock"
)

// pgFlags are serve's PostgreSQL flags.
type pgFlags struct {
	dsn, password       string
	longWait, idleGrace time.Duration
}

func (f *pgFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.dsn, "postgres", "", "")
	fs.StringVar(&f.password, "postgres-password", "", "")
	fs.DurationVar(&f.longWait, "postgres-long-wait", pglock.DefaultLongWait, "")
	fs.DurationVar(&f.idleGrace, "postgres-idle-alert", pglock.DefaultIdleGrace, "")
}

// pgConfig is the checked PostgreSQL part of serve's configuration; DSN
// empty: no PostgreSQL reader.
type pgConfig struct {
	DSN, Password       string
	LongWait, IdleGrace time.Duration
	// Watch are the PostgreSQL locks to read from the start.
	Watch []string
	// Discover are what --watch-under postgres:KIND finds (advisory,
	// rows).
	Discover []string
}

// config checks the flags; watch are the names of the --watch values
// that name postgres (postgres:NAME), under those of --watch-under
// (postgres:advisory, postgres:rows).
func (f *pgFlags) config(watch, under []string) (pgConfig, error) {
	c := pgConfig{DSN: f.dsn, Password: f.password, LongWait: f.longWait, IdleGrace: f.idleGrace, Watch: watch, Discover: under}
	for _, kind := range under {
		if err := pglock.CheckDiscover(kind); err != nil {
			return c, fmt.Errorf("--watch-under postgres:%s: %w", kind, err)
		}
	}
	if c.DSN == "" {
		if c.Password != "" {
			return c, fmt.Errorf("--postgres-password without --postgres")
		}
		return c, nil
	}
	for _, name := range watch {
		if err := pglock.CheckName(name); err != nil {
			return c, fmt.Errorf("--watch postgres:%s: %w", name, err)
		}
	}
	// The reader's own parse, so a DSN serve accepts is one it can use;
	// its error never repeats the DSN, which may hold a password.
	if _, err := pglock.ConnConfig(c.DSN, c.Password); err != nil {
		return c, err
	}
	for _, d := range []struct {
		flag string
		v    *time.Duration
	}{{"postgres-long-wait", &c.LongWait}, {"postgres-idle-alert", &c.IdleGrace}} {
		switch {
		case *d.v < 0:
			return c, fmt.Errorf("--%s %v: want a duration, or 0 to turn the alert off", d.flag, *d.v)
		case *d.v == 0:
			*d.v = -1 // pglock: negative is off, zero its default
		}
	}
	return c, nil
}

// registerPostgres registers the postgres service: with a reader when
// --postgres is given, without one otherwise, so that a request for a
// PostgreSQL lock says to serve with --postgres. The reader starts
// unconnected: a server that does not answer is reported on the dashboard
// and in the log, and the other services keep working.
func (m *Main) registerPostgres() error {
	c := m.Config.Postgres
	if c.DSN == "" {
		return m.registerService(pglock.Service(nil))
	}
	r, err := pglock.New(pglock.Config{
		DSN: c.DSN, Password: c.Password, Publish: m.readerSink(""), Forget: m.hub.Remove,
		Poll: m.Config.Poll, LongWait: c.LongWait, IdleGrace: c.IdleGrace, Logger: m.log, Watch: c.Watch,
		Discover: c.Discover,
	})
	if err != nil {
		return err
	}
	m.log.Info("postgres reader", "addr", r.Addr(), "poll", m.Config.Poll, "discover", c.Discover)
	return m.registerService(pglock.Service(r))
}

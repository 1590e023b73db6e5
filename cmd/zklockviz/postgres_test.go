package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/postgres/pglocal"
	"github.com/zklockviz/zklockviz/postgres/pglocal/pgtest"
)

// postWatch asks the server to watch a lock of a service and returns the
// status and body.
func postWatch(t *testing.T, base, service, name string) (int, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"service": service, "path": name})
	resp, err := http.Post(base+"/api/v1/watch", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// holdingPsql runs psql with statements on its standard input, kept open
// until the test ends (or kill).
func holdingPsql(t *testing.T, dsn, sql string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("psql", "-X", "-q", "-d", dsn)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("psql: %v", err)
	}
	if _, err := io.WriteString(in, sql+"\n"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd
}

// serve --postgres: a psql holder and waiter on advisory/42, read back
// through the binary's JSON API after POST /api/v1/watch; the queue moves
// when the holder's psql is killed; a bad name is refused.
func TestServePostgres(t *testing.T) {
	zks := sharedZK(t)
	pg := pgtest.ForTest(t)
	holder := holdingPsql(t, pg.DSN()+"&application_name=cli-holder", "SELECT pg_advisory_lock(42);")
	var lock lockqueue.Snapshot
	s := startServe(t, "--zk", zks.Addr(), "--addr", "127.0.0.1:0", "--postgres", pg.DSN(), "--poll", "100ms")
	if code, body := postWatch(t, s.url, "postgres", "advisory/42"); code != 200 {
		t.Fatalf("POST /api/v1/watch = %d %s", code, body)
	}
	url := s.url + "/api/v1/lock?service=postgres&path=advisory/42"
	waitFor(t, "the holder", func() bool {
		return getJSON(t, url, &lock) == 200 && len(lock.Holders()) == 1
	})
	holdingPsql(t, pg.DSN()+"&application_name=cli-waiter", "SELECT pg_advisory_lock(42);")
	waitFor(t, "the waiter", func() bool {
		return getJSON(t, url, &lock) == 200 && len(lock.Waiters()) == 1
	})
	if lock.Service != "postgres" || lock.Connection != lockqueue.Connected || lock.Error != "" {
		t.Errorf("lock %s %s %q", lock.Service, lock.Connection, lock.Error)
	}
	h, w := lock.Nodes[0], lock.Nodes[1]
	if !strings.Contains(h.Data, `"application":"cli-holder"`) || !strings.Contains(w.Data, `"application":"cli-waiter"`) {
		t.Errorf("nodes out of order or without their sessions: %s / %s", h.Data, w.Data)
	}
	if !slices.Equal(w.BlockedBy(), []string{h.Name}) || w.WaitsFor != h.Name || w.WaitsForSource() != lockqueue.ByServer {
		t.Errorf("waiter's edges: waitsFor %q (%s), blockedBy %v; want %s by the server", w.WaitsFor, w.WaitsForSource(), w.BlockedBy(), h.Name)
	}

	var list struct {
		Locks []struct {
			Service, Path string
		}
	}
	if getJSON(t, s.url+"/api/v1/locks", &list) != 200 || !slices.ContainsFunc(list.Locks, func(l struct{ Service, Path string }) bool {
		return l.Service == "postgres" && l.Path == "advisory/42"
	}) {
		t.Errorf("/api/v1/locks does not list postgres advisory/42: %+v", list)
	}

	holder.Process.Kill()
	waitFor(t, "the waiter to hold once the holder's psql is killed", func() bool {
		return getJSON(t, url, &lock) == 200 && len(lock.Nodes) == 1 && lock.Nodes[0].Name == w.Name && lock.Nodes[0].Holding
	})

	if code, body := postWatch(t, s.url, "postgres", "advisory/x"); code != 400 || !strings.Contains(body, "advisory/KEY") {
		t.Errorf("a bad name: %d %s, want 400 saying what a name looks like", code, body)
	}
}

// A PostgreSQL that does not answer does not stop serve: the error names
// postgres, the address and what to check, in the log and on the lock,
// and ZooKeeper's locks keep being served. Without --postgres, a request
// for a PostgreSQL lock says to serve with it. The DSN comes from
// ZKLOCKVIZ_POSTGRES here.
func TestServePostgresUnreachable(t *testing.T) {
	zks := sharedZK(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	t.Setenv("ZKLOCKVIZ_POSTGRES", "postgres://viz@"+addr+"/app?sslmode=disable")
	s := startServe(t, "--zk", zks.Addr(), "--addr", "127.0.0.1:0", "--poll", "100ms")
	want := "postgres " + addr + ": connection refused: check the host and port in --postgres"
	waitFor(t, "the error in the log", func() bool { return strings.Contains(s.output(), want) })
	if code, body := postWatch(t, s.url, "postgres", "advisory/1"); code != 200 {
		t.Fatalf("POST /api/v1/watch = %d %s", code, body)
	}
	var lock lockqueue.Snapshot
	waitFor(t, "the error on the lock", func() bool {
		return getJSON(t, s.url+"/api/v1/lock?service=postgres&path=advisory/1", &lock) == 200 && strings.Contains(lock.Error, want)
	})
	if lock.Connection == lockqueue.Connected {
		t.Errorf("connection %s", lock.Connection)
	}
	if code, body := postWatch(t, s.url, "", "/cli/pg-unreachable"); code != 200 {
		t.Errorf("ZooKeeper's watch beside a failing postgres: %d %s", code, body)
	}

	os.Unsetenv("ZKLOCKVIZ_POSTGRES")
	plain := startServe(t, "--zk", zks.Addr(), "--addr", "127.0.0.1:0")
	if code, body := postWatch(t, plain.url, "postgres", "advisory/1"); code == 200 || !strings.Contains(body, "--postgres") {
		t.Errorf("postgres without --postgres: %d %s, want an error naming --postgres", code, body)
	}
}

func TestPostgresFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--postgres", "postgres://u:secret-pw@h:x/"}, "--postgres: not a valid PostgreSQL connection string"},
		{[]string{"--postgres-password", "pw"}, "--postgres-password without --postgres"},
		{[]string{"--postgres", "postgres://u:secret-pw@h/db?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem"}, "unable to read CA file"},
		{[]string{"--postgres", "postgres://u@h/db", "--postgres-long-wait", "-1s"}, "--postgres-long-wait -1s"},
	} {
		code, _, stderr := runBinary(t, []string{"ZKLOCKVIZ_POSTGRES="}, append([]string{"serve", "--zk", "127.0.0.1:1"}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "secret-pw") {
			t.Errorf("serve %v: exit %d, %q; want 2 and %q without the password", tc.args, code, stderr, tc.want)
		}
	}
}

// The password from ZKLOCKVIZ_POSTGRES_PASSWORD reaches a server that asks
// for one, for a role with only pg_monitor; a wrong one is named on the
// lock.
func TestServePostgresPassword(t *testing.T) {
	zks := sharedZK(t)
	dir, err := os.MkdirTemp("", "zklockviz-hba-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	hba := filepath.Join(dir, "pg_hba.conf")
	// The server runs as postgres, which must read the file.
	if err := errors.Join(os.Chmod(dir, 0o755), os.WriteFile(hba, []byte("local all all trust\n"+
		"host all postgres 127.0.0.1/32 trust\nhost all all 127.0.0.1/32 scram-sha-256\n"), 0o644)); err != nil {
		t.Fatal(err)
	}
	pg := pgtest.ForTestWith(t, pglocal.Options{Settings: map[string]string{"hba_file": hba}})
	out, err := exec.Command("psql", "-X", "-q", "-d", pg.DSN(), "-c", "CREATE ROLE viz LOGIN PASSWORD 'viz-pw' IN ROLE pg_monitor").CombinedOutput()
	if err != nil {
		t.Fatalf("create role: %v\n%s", err, out)
	}
	dsn := pg.DSNFor("viz", "postgres")
	for _, tc := range []struct{ password, want string }{
		{"viz-pw", ""},
		{"not-viz-pw-731", "postgres " + pg.Addr() + ": wrong password for role viz"},
	} {
		t.Setenv("ZKLOCKVIZ_POSTGRES_PASSWORD", tc.password)
		s := startServe(t, "--zk", zks.Addr(), "--addr", "127.0.0.1:0", "--postgres", dsn, "--poll", "100ms")
		if code, body := postWatch(t, s.url, "postgres", "advisory/3"); code != 200 {
			t.Fatalf("POST /api/v1/watch = %d %s", code, body)
		}
		var lock lockqueue.Snapshot
		waitFor(t, "a read or an error", func() bool {
			return getJSON(t, s.url+"/api/v1/lock?service=postgres&path=advisory/3", &lock) == 200 && (lock.Live() || lock.Error != "")
		})
		if tc.want == "" && !lock.Live() || !strings.Contains(lock.Error, tc.want) {
			t.Errorf("password %q: live %v, error %q; want %q", tc.password, lock.Live(), lock.Error, tc.want)
		}
		if strings.Contains(s.output(), tc.password) {
			t.Errorf("the log shows the password %q", tc.password)
		}
	}
}

// The locks --watch gives postgres are checked with the flags, and reach
// the reader.
func TestPostgresWatchConfig(t *testing.T) {
	f := pgFlags{dsn: "postgres://viz@db1/app"}
	if _, err := f.config([]string{"advisory/42", "advisory/x"}, nil); err == nil || !strings.Contains(err.Error(), "--watch postgres:advisory/x") {
		t.Errorf("a bad postgres lock on the command line: %v", err)
	}
	c, err := f.config([]string{"advisory/42", "table/public.orders"}, nil)
	if err != nil || !slices.Equal(c.Watch, []string{"advisory/42", "table/public.orders"}) {
		t.Errorf("config: %+v, %v", c, err)
	}
}

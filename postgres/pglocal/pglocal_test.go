package pglocal_test

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/localproc/proctest"
	"github.com/zklockviz/zklockviz/postgres/pglocal"
	"github.com/zklockviz/zklockviz/postgres/pglocal/pgtest"
)

// psql runs one statement through the real client and returns its unaligned
// output.
func psql(t *testing.T, s *pglocal.Server, sql string) string {
	t.Helper()
	bin, err := exec.LookPath("psql")
	if err != nil {
		t.Fatalf("psql (postgresql-client, pulled in by postgresql): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", s.DSN(), "-c", sql).CombinedOutput()
	if err != nil {
		t.Fatalf("psql -c %q: %v\n%s", sql, err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestSelect(t *testing.T) {
	s := pgtest.ForTest(t)
	if got := psql(t, s, "select 1"); got != "1" {
		t.Errorf("select 1 = %q", got)
	}
	// The lock a classroom scenario takes, seen where a reader sees it.
	got := psql(t, s, "select pg_advisory_lock(42); select objid from pg_locks where locktype = 'advisory'")
	if !strings.HasSuffix(got, "42") {
		t.Errorf("advisory lock in pg_locks: %q, want objid 42", got)
	}
}

func TestSettings(t *testing.T) {
	s := pgtest.ForTestWith(t, pglocal.Options{Settings: map[string]string{"deadlock_timeout": "200ms"}})
	for _, tc := range []struct{ setting, want string }{
		{"deadlock_timeout", "200ms"},
		{"fsync", "off"},
		{"listen_addresses", "127.0.0.1"},
		{"dynamic_shared_memory_type", "mmap"},
	} {
		if got := psql(t, s, "show "+tc.setting); got != tc.want {
			t.Errorf("show %s = %q, want %q", tc.setting, got, tc.want)
		}
	}
}

// Two servers come from one template but are separate clusters.
func TestServersAreSeparate(t *testing.T) {
	a, b := pgtest.ForTest(t), pgtest.ForTest(t)
	psql(t, a, "create table only_in_a (x int)")
	if got := psql(t, b, "select count(*) from pg_tables where tablename = 'only_in_a'"); got != "0" {
		t.Errorf("table created on %s visible on %s", a.Addr(), b.Addr())
	}
}

func TestStopStartKeepsData(t *testing.T) {
	s := pgtest.ForTest(t)
	psql(t, s, "create table t (x int); insert into t values (7)")
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := pglocal.Ready(ctx, s.Addr()); err == nil {
		t.Error("a stopped server is ready")
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if got := psql(t, s, "select x from t"); got != "7" {
		t.Errorf("after restart select = %q, want 7", got)
	}
}

// shmSegments maps each System V shared memory id the postgres user owns
// to the pid that created it. Other packages' tests start PostgreSQL
// servers at the same time, so a leak check must look at its own
// server's segments only: those its postmaster created.
func shmSegments(t *testing.T) map[string]string {
	t.Helper()
	out, err := exec.Command("ipcs", "-m", "-p").Output()
	if err != nil {
		t.Fatalf("ipcs: %v", err)
	}
	ids := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[1] == pglocal.User {
			ids[f[0]] = f[2]
		}
	}
	return ids
}

func TestCloseLeavesNothing(t *testing.T) {
	for _, kill := range []bool{false, true} {
		t.Run(fmt.Sprintf("kill=%v", kill), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			s, err := pglocal.Start(ctx, pglocal.Options{})
			if err != nil {
				proctest.SkipIfNotInstalled(t, err, pglocal.ErrNotInstalled)
				t.Fatal(err)
			}
			pid := strconv.Itoa(s.Pid())
			var own []string
			for id, cpid := range shmSegments(t) {
				if cpid == pid {
					own = append(own, id)
				}
			}
			// Dynamic shared memory is mmap'ed files in the data
			// directory (TestSettings), which the check below sees go.
			if len(own) == 0 {
				t.Errorf("no System V segment created by the postmaster (pid %s) while running: the leak check below proves nothing", pid)
			}
			// A crash (kill) leaves postmaster.pid and the
			// interlock segment; Close must clean up after it too.
			proctest.CheckCloseLeavesNothing(t, s, kill)
			// A segment removed while a process still has it attached
			// stays listed (marked dest) until that process exits: a
			// leak is one still there seconds later, still the
			// postmaster's (an id the kernel gave again to another
			// test's server is not this one's).
			left := own
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
				after := shmSegments(t)
				left = slices.DeleteFunc(left, func(id string) bool { return after[id] != pid })
				if len(left) == 0 || time.Now().After(deadline) {
					break
				}
			}
			for _, id := range left {
				t.Errorf("System V segment %s left behind 10 s after Close", id)
			}
		})
	}
}

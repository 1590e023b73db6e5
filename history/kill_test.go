package history_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/history"
)

// childEnv makes the test binary a recording process (recordUntilKilled).
const childEnv = "ZKLOCKVIZ_HISTORY_TEST_CHILD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(childEnv); dir != "" {
		recordUntilKilled(dir)
		return
	}
	os.Exit(m.Run())
}

// recordUntilKilled records hand-offs of one lock as fast as a lock could
// change, and prints each recorded snapshot's time: what the store was
// given, so the parent knows what a kill may lose.
func recordUntilKilled(dir string) {
	s, err := history.Open(history.Options{Dir: dir})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	out := bufio.NewWriter(os.Stdout)
	for i := 0; ; i++ {
		now := time.Now()
		snap := queue("/locks/killed", now, fmt.Sprintf("n%d", i), fmt.Sprintf("n%d", i+1), fmt.Sprintf("n%d", i+2))
		if _, err := s.Record(snap); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Fprintf(out, "recorded %d\n", now.UnixMilli())
		out.Flush()
		time.Sleep(2 * time.Millisecond)
	}
}

// kill -9 a recording process again and again: each reopen finds a store
// that reads whole, keeps everything the killed process had recorded up to
// a second before it died (FlushEvery is 200ms), and records the time it
// was down as a gap.
func TestKill9LosesAtMostASecond(t *testing.T) {
	dir := t.TempDir()
	const rounds = 5
	for round := range rounds {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+dir)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		var last time.Time
		// Let it record for a while: enough lines for several flushes.
		for n := 0; n < 300+round*97 && sc.Scan(); n++ {
			f := strings.Fields(sc.Text())
			if len(f) != 2 || f[0] != "recorded" {
				t.Fatalf("child: %s", sc.Text())
			}
			ms, _ := strconv.ParseInt(f[1], 10, 64)
			last = time.UnixMilli(ms)
		}
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		if last.IsZero() {
			t.Fatalf("round %d: the child recorded nothing", round)
		}

		s, err := history.Open(history.Options{Dir: dir})
		if err != nil {
			t.Fatalf("round %d: reopen after kill -9: %v", round, err)
		}
		if err := s.Verify(); err != nil {
			t.Errorf("round %d: after reopening: %v", round, err)
		}
		evs, err := s.Events("/locks/killed", last.Add(-time.Minute), last.Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		var kept time.Time
		for _, e := range evs {
			if e.Kind == history.Acquired && e.Time.After(kept) {
				kept = e.Time
			}
		}
		if lost := last.Sub(kept); lost > time.Second {
			t.Errorf("round %d: the last hand-off kept is from %s, the child had recorded up to %s: lost %v, want at most 1s",
				round, kept.Format(time.StampMilli), last.Format(time.StampMilli), lost)
		}
		if st, err := s.At("/locks/killed", time.Now()); err != nil || len(st.Snapshot().Nodes) != 3 {
			t.Errorf("round %d: the queue after reopening: %v, %v; want 3 nodes", round, st.Snapshot().Nodes, err)
		}
		if round > 0 {
			gaps := history.Gaps(history.State{}, evs, time.Now())
			if len(gaps) == 0 {
				t.Errorf("round %d: no gap recorded for the time the recorder was down", round)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

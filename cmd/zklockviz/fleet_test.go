package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/zklockviz/zklockviz/third_party/zk"
)

// fleetLocks is what the fleet tests read of GET /api/v1/locks.
type fleetLocks struct {
	Locks []struct {
		Path    string   `json:"path"`
		Holders []string `json:"holders"`
		Waiters []string `json:"waiters"`
	} `json:"locks"`
	Unexplored []struct {
		Service string `json:"service"`
		Folders int    `json:"folders"`
		Limit   int    `json:"limit"`
		Flag    string `json:"flag"`
		Message string `json:"message"`
	} `json:"unexplored"`
	Next string `json:"next"`
}

// held lists, sorted, the locks with a holder and a waiter.
func (f fleetLocks) held() []string {
	var out []string
	for _, l := range f.Locks {
		if len(l.Holders) > 0 && len(l.Waiters) > 0 {
			out = append(out, l.Path)
		}
	}
	slices.Sort(out)
	return out
}

func (f fleetLocks) has(path string) bool {
	return slices.ContainsFunc(f.Locks, func(l struct {
		Path    string   `json:"path"`
		Holders []string `json:"holders"`
		Waiters []string `json:"waiters"`
	}) bool {
		return l.Path == path
	})
}

var fleetSeq atomic.Int32

// kazooHeld runs testdata/clients/<script> with args under kazoo: the
// script makes its nodes, prints a line per thing made, then "ready
// <seconds>", and keeps its session until its stdin closes when the test
// ends. line sees each line before "ready"; kazooHeld returns the seconds.
func kazooHeld(tb testing.TB, script string, line func(string), args ...string) string {
	tb.Helper()
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import kazoo").Run(); err != nil {
		msg := fmt.Sprintf("kazoo (apt-get install python3-kazoo): %v", err)
		if os.Getenv("CI") == "true" {
			tb.Fatal(msg)
		}
		tb.Skip(msg)
	}
	cmd := exec.Command(python, append([]string{filepath.Join("..", "..", "testdata", "clients", script)}, args...)...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start %s: %v", script, err)
	}
	tb.Cleanup(func() {
		stdin.Close() // the script ends its session (and its nodes) on EOF
		cmd.Wait()
	})
	var took string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if t, ok := strings.CutPrefix(sc.Text(), "ready "); ok {
			took = t
			break
		}
		line(sc.Text())
	}
	go io.Copy(io.Discard, stdout)
	return took
}

// kazooFleet has testdata/clients/kazoo_fleet.py make parents empty lock
// parents below a fresh prefix, held of them held with a waiter, and keep
// them held until the test ends. It returns the prefix and the held
// parents, sorted.
func kazooFleet(tb testing.TB, servers string, parents, held int) (string, []string) {
	tb.Helper()
	prefix := fmt.Sprintf("/fleet-%s-%d/locks", benchRun, fleetSeq.Add(1))
	var want []string
	took := kazooHeld(tb, "kazoo_fleet.py", func(line string) {
		if p, ok := strings.CutPrefix(line, "held "); ok {
			want = append(want, p)
		}
	}, servers, prefix, fmt.Sprint(parents), fmt.Sprint(held))
	tb.Logf("kazoo made %d parents, %d held, in %ss", parents, held, took)
	slices.Sort(want)
	if len(want) != held {
		tb.Fatalf("the fleet has %d held parents, want %d", len(want), held)
	}
	return prefix, want
}

// waitLocks polls GET /api/v1/locks until ok holds, and returns it.
func waitLocks(t *testing.T, s *server, what string, ok func(fleetLocks) bool) fleetLocks {
	t.Helper()
	var got fleetLocks
	waitFor(t, what, func() bool {
		var err error
		got, err = fetchLocks(s.url)
		return err == nil && ok(got)
	})
	return got
}

// holdWithWaiter makes a holder and a waiter in the lock parent path, as
// kazoo's Lock names them.
func holdWithWaiter(t *testing.T, c *zk.Conn, path string) {
	t.Helper()
	for range 2 {
		if _, err := c.Create(path+"/0123456789abcdef0123456789abcdef__lock__", nil, zk.FlagEphemeral|zk.FlagSequence,
			zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
}

// A fleet of lock parents below one --watch-under prefix, as lock-per-
// entity services leave them: serve finds every held lock, in both watch
// modes, and follows parents made and deleted after it started. The fleet
// is twice the old fixed bound of 2,000 folders.
func TestFleetDiscovery(t *testing.T) {
	zks := sharedZK(t)
	const parents, held = 4000, 400
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"persistent watch", nil},
		{"children watches", []string{"--zk-children-watches", "--discover-limit", "5000"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix, want := kazooFleet(t, zks.Addr(), parents, held)
			s := startServe(t, append([]string{"--zk", zks.Addr(), "--addr", "127.0.0.1:0", "--watch-under", prefix}, tc.args...)...)
			got := waitLocks(t, s, fmt.Sprintf("the %d held locks", held), func(f fleetLocks) bool { return len(f.held()) >= held })
			if !slices.Equal(got.held(), want) {
				t.Fatalf("held locks in the API differ from the fleet's: %d found, %d made", len(got.held()), len(want))
			}
			if len(got.Unexplored) > 0 {
				t.Errorf("unexplored %+v, want none", got.Unexplored)
			}

			// After the start: a new parent held at once, an empty parent
			// that becomes held, and a held parent deleted.
			c := connect(t, zks.Addr())
			fresh, later, gone := prefix+"/new-order", prefix+"/order-0000001", want[0]
			if slices.Contains(want, later) {
				t.Fatalf("%s is held already", later)
			}
			if _, err := c.Create(fresh, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
			holdWithWaiter(t, c, fresh)
			holdWithWaiter(t, c, later)
			kids, _, err := c.Children(gone)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range kids {
				if err := c.Delete(gone+"/"+k, -1); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.Delete(gone, -1); err != nil {
				t.Fatal(err)
			}
			want = append(slices.Clone(want[1:]), fresh, later)
			slices.Sort(want)
			waitLocks(t, s, "the new held locks in, the deleted one out", func(f fleetLocks) bool {
				return slices.Equal(f.held(), want) && !f.has(gone)
			})
		})
	}
}

// With children watches and a --discover-limit below the fleet's size,
// the folders not looked into are counted, named with the flag in
// /api/v1/locks, and shown on the dashboard: the bound hides no lock
// silently.
func TestFleetDiscoverLimit(t *testing.T) {
	zks := sharedZK(t)
	const parents, held, limit = 2000, 200, 100
	prefix, _ := kazooFleet(t, zks.Addr(), parents, held)
	s := startServe(t, "--zk", zks.Addr(), "--addr", "127.0.0.1:0", "--watch-under", prefix,
		"--zk-children-watches", "--discover-limit", fmt.Sprint(limit))
	got := waitLocks(t, s, "the unexplored note", func(f fleetLocks) bool { return len(f.Unexplored) > 0 })
	u := got.Unexplored[0]
	// The prefix and limit-1 of its children have a watch each; the rest
	// of its children are not looked into.
	if want := parents - (limit - 1); u.Folders != want || u.Limit != limit || u.Flag != "--discover-limit" || u.Service != "zookeeper" {
		t.Errorf("unexplored %+v, want %d folders of zookeeper, limit %d, flag --discover-limit", u, want, limit)
	}
	if !strings.Contains(u.Message, "--discover-limit") || !strings.Contains(u.Message, fmt.Sprint(u.Folders)) {
		t.Errorf("message %q names neither the flag nor the count", u.Message)
	}
	if n := len(got.held()); n >= held {
		t.Errorf("%d held locks found with %d folders unread, want fewer than %d", n, u.Folders, held)
	}

	resp, err := http.Get(s.url + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	page, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	banner := fmt.Sprintf("%d folders below the --watch-under prefixes not looked into", u.Folders)
	if !strings.Contains(string(page), banner) || !strings.Contains(string(page), "Raise --discover-limit") {
		t.Errorf("the dashboard lacks the banner %q", banner)
	}
}

// A fleet of lock parents, most of them empty as kazoo's Lock leaves them,
// is counted as a person reads it: every parent found, the ones listed (a
// lock taken there since), and those with lock nodes now, held and with
// waiters, in GET /api/v1/locks's totals and on the dashboard. A lock let
// go stays listed but no longer has lock nodes; the parents found stay.
func TestFleetCounts(t *testing.T) {
	zks := sharedZK(t)
	const parents, held = 300, 10
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"persistent watch", nil},
		{"children watches", []string{"--zk-children-watches"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix, want := kazooFleet(t, zks.Addr(), parents, held)
			s := startServe(t, append([]string{"--zk", zks.Addr(), "--addr", "127.0.0.1:0", "--watch-under", prefix}, tc.args...)...)
			var got discoveredLocks
			counts := func(found, listed, withNodes, heldNow int) func() bool {
				return func() bool {
					if !listLocks(t, s.url+"/api/v1/locks", &got) {
						return false
					}
					tot := got.Totals
					return tot.Found == found && tot.Locks == listed && tot.WithNodes == withNodes && tot.Held == heldNow && tot.Contended == heldNow && tot.Pending == 0
				}
			}
			waitFor(t, fmt.Sprintf("%d parents found, %d listed, all held with a waiter", parents, held), counts(parents, held, held, held))
			// says checks the dashboard's totals say, in words, the counts.
			says := func(when string, withNodes int) string {
				page := dashboard(t, s.url)
				for _, w := range []string{
					fmt.Sprintf(`<b>%d</b> lock parents found`, parents), fmt.Sprintf(`<b>%d</b> listed`, held),
					fmt.Sprintf(`<b>%d</b> with lock nodes now`, withNodes), fmt.Sprintf(`<b>%d</b> held`, withNodes),
				} {
					if !strings.Contains(page, w) {
						t.Errorf("%s the dashboard does not say %q", when, w)
					}
				}
				return page
			}
			if page := says("with every lock held", held); strings.Contains(page, "</b> locks watched") {
				t.Errorf("the dashboard says locks watched beside the parents found")
			}
			// The log sums discovery up, a line a pass, not one a parent.
			lines, found := 0, 0
			for _, l := range strings.Split(s.output(), "\n") {
				if !strings.Contains(l, `msg="discovery: lock parents below the --watch-under prefixes"`) {
					continue
				}
				lines++
				if m := regexp.MustCompile(` found=(\d+) `).FindStringSubmatch(l); m != nil {
					n, _ := strconv.Atoi(m[1])
					found += n
				}
			}
			if found != held || lines == 0 || lines > held/2 {
				t.Errorf("the log says %d lock parents found in %d lines, want %d in a line or two", found, lines, held)
			}

			// One lock let go: listed still, with no lock nodes.
			c := connect(t, zks.Addr())
			kids, _, err := c.Children(want[0])
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range kids {
				if err := c.Delete(want[0]+"/"+k, -1); err != nil {
					t.Fatal(err)
				}
			}
			waitFor(t, "one lock let go", counts(parents, held, held-1, held-1))
			says("after a lock was let go", held-1)
		})
	}
}

// Package imagecheck runs the container image that scripts/image-check.sh
// built: its entrypoint with compose.yaml's command, against a throwaway
// ZooKeeper. It skips unless that script runs it.
package imagecheck

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/third_party/zk"
	"github.com/zklockviz/zklockviz/zookeeper/zklocal/zktest"
)

// waitTimeout bounds every wait: a liveness bound for a loaded box, not a
// speed assertion.
const waitTimeout = 90 * time.Second

// jsonEnv reads a JSON array of strings from the environment.
func jsonEnv(t *testing.T, name string) []string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		t.Skipf("%s is not set: scripts/image-check.sh builds the image and runs this test", name)
	}
	var out []string
	if err := json.Unmarshal([]byte(v), &out); err != nil || len(out) == 0 {
		t.Fatalf("%s=%q: want a JSON array of strings (%v)", name, v, err)
	}
	return out
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

// The image's entrypoint, run with compose.yaml's command (its --zk pointed
// at a throwaway ZooKeeper instead of compose's service): /healthz answers,
// a lock queue under --watch-under shows live, and the simulator (--sim)
// runs a step with real sessions.
func TestImage(t *testing.T) {
	entrypoint := jsonEnv(t, "ZKLOCKVIZ_IMAGE_RUN")
	command := jsonEnv(t, "ZKLOCKVIZ_IMAGE_COMMAND")
	zks := zktest.ForTest(t)
	i := slices.Index(command, "--zk")
	if i < 0 || i+1 >= len(command) {
		t.Fatalf("compose's command %q has no --zk ADDRESS", command)
	}
	command = slices.Clone(command)
	command[i+1] = zks.Addr()

	const path = "/locks/orders"
	var conns []*zk.Conn
	for range 2 {
		c, _, err := zk.Connect([]string{zks.Addr()}, 10*time.Second, zk.WithLogger(quiet{}), zk.WithLogInfo(false))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		conns = append(conns, c)
	}
	holder := zk.NewLock(conns[0], path, zk.WorldACL(zk.PermAll))
	if err := holder.Lock(); err != nil {
		t.Fatalf("lock %s: %v", path, err)
	}
	go zk.NewLock(conns[1], path, zk.WorldACL(zk.PermAll)).Lock() // waits; ends with its session

	url, pgid, out := start(t, append(entrypoint, command...))
	// The Dockerfile's USER: the server must not run as root.
	uids := serverUIDs(t, pgid)
	if len(uids) == 0 || slices.Contains(uids, 0) {
		t.Errorf("zklockviz runs with uids %v, want one non-root uid", uids)
	}
	var lastBody []byte // of the last GET, for failure messages
	get := func(p string, v any) int {
		t.Helper()
		resp, err := http.Get(url + p)
		if err != nil {
			t.Fatalf("GET %s: %v\n%s", p, err, out())
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		lastBody = b
		if resp.StatusCode == http.StatusOK && v != nil {
			if err := json.Unmarshal(b, v); err != nil {
				t.Fatalf("GET %s: %v\n%s", p, err, b)
			}
		}
		return resp.StatusCode
	}
	if code := get("/healthz", nil); code != http.StatusOK {
		t.Fatalf("GET /healthz = %d, want 200\n%s", code, out())
	}
	waitFor(t, "a live queue of 2 at "+path+" (found by --watch-under /locks)", func() string { return fmt.Sprintf("last answer: %s\n%s", lastBody, out()) }, func() bool {
		var snap lockqueue.Snapshot
		return get("/api/v1/lock?path="+path, &snap) == http.StatusOK && snap.Live() &&
			len(snap.Nodes) == 2 && snap.Nodes[0].Holding && snap.Recipe == lockqueue.GoZookeeper
	})

	resp, err := http.Post(url+"/api/v1/sim/runs", "application/json", strings.NewReader(`{"scenario":"lock1-5"}`))
	if err != nil {
		t.Fatal(err)
	}
	var run struct {
		ID string `json:"id"`
	}
	err = json.NewDecoder(resp.Body).Decode(&run)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || err != nil || run.ID == "" {
		t.Fatalf("POST /api/v1/sim/runs = %d (%v): want 201 and a run\n%s", resp.StatusCode, err, out())
	}
	// Only a run's starter steps it: its owner secret goes back.
	req, _ := http.NewRequest(http.MethodPost, url+"/api/v1/sim/runs/"+run.ID+"/step", nil)
	req.Header.Set("X-Zklockviz-Run-Owner", resp.Header.Get("X-Zklockviz-Run-Owner"))
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST step = %d, want 200\n%s", resp.StatusCode, out())
	}
	var state struct {
		Step    int `json:"step"`
		Clients []struct {
			Name string `json:"name"`
		} `json:"clients"`
	}
	if code := get("/api/v1/sim/runs/"+run.ID+"/", &state); code != http.StatusOK || state.Step != 1 || len(state.Clients) != 1 {
		t.Errorf("run after one step: %d, step %d, %d clients; want step 1 with one client\n%s", code, state.Step, len(state.Clients), out())
	}
}

// start runs argv in its own process group and waits for its "listening on"
// line; the process group is killed when the test ends (buildah run starts
// the server as a child of its own).
func start(t *testing.T, argv []string) (url string, pgid int, output func() string) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu  sync.Mutex
		buf bytes.Buffer
	)
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %q: %v", argv, err)
	}
	output = func() string {
		mu.Lock()
		defer mu.Unlock()
		return buf.String()
	}
	listening := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			mu.Lock()
			fmt.Fprintln(&buf, sc.Text())
			mu.Unlock()
			if u, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
				listening <- u
			}
		}
		cmd.Wait()
	}()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(waitTimeout):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		if t.Failed() {
			t.Logf("image output:\n%s", output())
		}
	})
	select {
	case u := <-listening:
		// The image listens on all interfaces (ZKLOCKVIZ_ADDR=0.0.0.0:…,
		// printed as [::]); ask on loopback, a host it serves without a
		// token, as a browser on the machine publishing the port would.
		pu, err := neturl.Parse(u)
		if err != nil {
			t.Fatalf("listening on %q: %v", u, err)
		}
		if ip := net.ParseIP(pu.Hostname()); ip != nil && ip.IsUnspecified() {
			pu.Host = net.JoinHostPort("127.0.0.1", pu.Port())
		}
		return pu.String(), cmd.Process.Pid, output
	case <-done:
		t.Fatalf("%q exited before listening:\n%s", argv, output())
	case <-time.After(waitTimeout):
		t.Fatalf("%q did not say where it listens:\n%s", argv, output())
	}
	return "", 0, output
}

// serverUIDs are the real uids of the zklockviz processes in a process
// group (buildah run's children stay in its group).
func serverUIDs(t *testing.T, pgid int) []int {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var uids []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue // gone
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces.
		i := bytes.LastIndexByte(stat, ')')
		j := bytes.IndexByte(stat, '(')
		fields := strings.Fields(string(stat[i+1:]))
		if i < 0 || j < 0 || len(fields) < 3 || string(stat[j+1:i]) != "zklockviz" || fields[2] != strconv.Itoa(pgid) {
			continue
		}
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			continue
		}
		for line := range strings.SplitSeq(string(status), "\n") {
			if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
				if f := strings.Fields(rest); len(f) > 0 {
					uid, _ := strconv.Atoi(f[0])
					uids = append(uids, uid)
				}
			}
		}
	}
	return uids
}

func waitFor(t *testing.T, what string, output func() string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s\n%s", what, output())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

package zklocal

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

func TestStandalone(t *testing.T) {
	start := time.Now()
	s := ForTest(t)
	t.Logf("standalone server ready in %v", time.Since(start))

	conn := Connect(t, s.Addr())

	t.Run("create and read", func(t *testing.T) {
		if _, err := conn.Create("/hello", []byte("world"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("create: %v", err)
		}
		data, _, err := conn.Get("/hello")
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		if string(data) != "world" {
			t.Errorf("get /hello = %q, want %q", data, "world")
		}
	})

	t.Run("four letter words", func(t *testing.T) {
		// A data watch so wchp has something to report.
		if _, _, _, err := conn.GetW("/hello"); err != nil {
			t.Fatalf("getw: %v", err)
		}
		tests := []struct {
			cmd  string
			want string
		}{
			{"ruok", "imok"},
			{"srvr", "Mode: standalone"},
			{"mntr", "zk_server_state\tstandalone"},
			{"wchp", "/hello"},
		}
		for _, tt := range tests {
			t.Run(tt.cmd, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				got, err := FourLetter(ctx, s.Addr(), tt.cmd)
				if err != nil {
					t.Fatalf("FourLetter(%s): %v", tt.cmd, err)
				}
				if !strings.Contains(got, tt.want) {
					t.Errorf("FourLetter(%s) = %q, want it to contain %q", tt.cmd, got, tt.want)
				}
			})
		}
	})

	t.Run("bad four letter word", func(t *testing.T) {
		if _, err := FourLetter(context.Background(), s.Addr(), "ruokay"); err == nil {
			t.Error("FourLetter accepted a 6 letter word")
		}
	})

	t.Run("admin server", func(t *testing.T) {
		resp, err := http.Get(s.AdminURL() + "/commands/ruok")
		if err != nil {
			t.Fatalf("GET ruok: %v", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET ruok: status %s", resp.Status)
		}
		var body struct {
			Command string  `json:"command"`
			Error   *string `json:"error"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatalf("decode ruok: %v", err)
		}
		if body.Command != "ruok" || body.Error != nil {
			t.Errorf("ruok = %+v, want command ruok without error", body)
		}
	})
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestRestartKeepsDataAndPort(t *testing.T) {
	var log lockedBuffer
	s := ForTestWith(t, Options{Log: &log, LogLevel: "INFO"})
	addr, admin := s.Addr(), s.AdminURL()

	conn := Connect(t, addr)
	if _, err := conn.Create("/survivor", []byte("still here"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create: %v", err)
	}
	conn.Close()

	if err := s.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if s.Running() {
		t.Fatal("Running after Stop")
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("second stop: %v", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	if err := s.Start(ctx); err != nil {
		t.Fatalf("restart: %v", err)
	}
	t.Logf("restart took %v", time.Since(start))
	if s.Addr() != addr || s.AdminURL() != admin {
		t.Errorf("after restart addr %s admin %s, want %s %s", s.Addr(), s.AdminURL(), addr, admin)
	}

	data, _, err := Connect(t, addr).Get("/survivor")
	if err != nil {
		t.Fatalf("get after restart: %v", err)
	}
	if string(data) != "still here" {
		t.Errorf("get /survivor = %q after restart", data)
	}
	if !strings.Contains(log.String(), "INFO") {
		t.Errorf("Log writer got no INFO lines; got:\n%s", log.String())
	}
}

func TestEnsembleFailover(t *testing.T) {
	start := time.Now()
	e := EnsembleForTest(t, 3)
	t.Logf("3-member ensemble ready in %v", time.Since(start))

	if got, want := len(strings.Split(e.ConnectString(), ",")), 3; got != want {
		t.Fatalf("ConnectString %q has %d members, want %d", e.ConnectString(), got, want)
	}
	old, err := e.Leader()
	if err != nil {
		t.Fatalf("leader: %v", err)
	}

	conn := Connect(t, e.Addrs()...)
	if _, err := conn.Create("/before", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create before failover: %v", err)
	}

	if err := e.Members()[old].Stop(); err != nil {
		t.Fatalf("stop leader: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start = time.Now()
	leader, err := e.WaitLeader(ctx)
	if err != nil {
		t.Fatalf("no new leader: %v", err)
	}
	t.Logf("new leader %d (was %d) after %v", leader, old, time.Since(start))
	if leader == old {
		t.Fatalf("leader is still the stopped member %d", old)
	}

	// The client has to notice the dead server and reconnect; until then
	// writes fail with connection errors.
	for {
		_, err := conn.Create("/after", nil, 0, zk.WorldACL(zk.PermAll))
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("create after failover: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, _, err := conn.Get("/before"); err != nil {
		t.Errorf("get /before after failover: %v", err)
	}
}

func TestNotInstalled(t *testing.T) {
	empty := t.TempDir()
	withJunk := t.TempDir()
	if err := os.MkdirAll(filepath.Join(withJunk, "lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(withJunk, "lib", "slf4j-api.jar"), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	old := debianJarDir
	debianJarDir = t.TempDir()
	t.Cleanup(func() { debianJarDir = old })

	tests := []struct {
		name string
		home string
	}{
		{"unset", ""},
		{"empty dir", empty},
		{"no zookeeper jar", withJunk},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("ZOOKEEPER_HOME", tt.home)
			_, err := Start(context.Background(), Options{})
			if !errors.Is(err, ErrNotInstalled) {
				t.Fatalf("Start error = %v, want ErrNotInstalled", err)
			}
			for _, want := range []string{"apt-get install zookeeper", "ZOOKEEPER_HOME"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
			if _, err := StartEnsemble(context.Background(), 3, Options{}); !errors.Is(err, ErrNotInstalled) {
				t.Errorf("StartEnsemble error = %v, want ErrNotInstalled", err)
			}
		})
	}
}

func TestConfig(t *testing.T) {
	opts, err := Options{
		TickTime:    100 * time.Millisecond,
		ExtraConfig: map[string]string{"snapCount": "50", "globalOutstandingLimit": "10"},
	}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{clientPort: 1, adminPort: 2, opts: opts}
	if err := s.writeFiles(t.TempDir(), nil); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(s.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(b)
	for _, want := range []string{
		"tickTime=100\n",
		"minSessionTimeout=200\n",
		"maxSessionTimeout=60000\n",
		"snapCount=50\n",
		"globalOutstandingLimit=10\n",
		"admin.serverPort=2\n",
		"4lw.commands.whitelist=*\n",
	} {
		if !strings.Contains(cfg, want) {
			t.Errorf("zoo.cfg lacks %q:\n%s", want, cfg)
		}
	}
	if strings.Contains(cfg, "snapCount=1000") || strings.Contains(cfg, "server.") {
		t.Errorf("zoo.cfg has stale or ensemble entries:\n%s", cfg)
	}

	if _, err := (Options{MaxSessionTimeout: time.Millisecond}).withDefaults(); err == nil {
		t.Error("MaxSessionTimeout below the minimum accepted")
	}
}

// TestJVMDiesWithParent checks that nothing is left when the Go process dies
// without running any cleanup (SIGKILL): Pdeathsig takes the JVM down and
// the reaper removes its directory.
func TestJVMDiesWithParent(t *testing.T) {
	if os.Getenv("ZKLOCAL_ORPHAN_CHILD") == "1" {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		s, err := Start(ctx, Options{})
		if err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString(s.Addr() + " " + s.Dir() + "\n")
		select {} // wait to be SIGKILLed
	}
	if _, err := findDistribution(); err != nil {
		t.Skipf("no ZooKeeper: %v", err)
	}

	cmd := exec.Command(os.Args[0], "-test.run=^TestJVMDiesWithParent$")
	cmd.Env = append(os.Environ(), "ZKLOCAL_ORPHAN_CHILD=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child did not report an address: %v", err)
	}
	addr, dir, _ := strings.Cut(strings.TrimSpace(line), " ")
	// Only for a failed run: the reaper is what must remove it.
	t.Cleanup(func() { os.RemoveAll(dir) })
	if reply, err := FourLetter(context.Background(), addr, "ruok"); reply != "imok" {
		t.Fatalf("child's server not answering: %q %v", reply, err)
	}
	cmd.Process.Kill()
	cmd.Wait()

	// A bound on "eventually" for a loaded box, not a speed assertion.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := FourLetter(ctx, addr, "ruok")
		cancel()
		_, statErr := os.Stat(dir)
		if err != nil && errors.Is(statErr, os.ErrNotExist) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("30s after its parent was killed: ruok error %v, directory %s: %v", err, dir, statErr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

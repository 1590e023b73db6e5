package zklocal

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

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

package main

import (
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/internal/buildinfo"
)

// versionFacts reads `zklockviz version`'s lines: the first one's
// version, then "key: value" a line.
func versionFacts(t *testing.T, out string) map[string]string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	v, ok := strings.CutPrefix(lines[0], "zklockviz ")
	if !ok || v == "" {
		t.Fatalf("first line %q: want zklockviz VERSION", lines[0])
	}
	facts := map[string]string{"version": v}
	for _, l := range lines[1:] {
		k, val, ok := strings.Cut(l, ":")
		if !ok {
			t.Fatalf("line %q: want key: value", l)
		}
		facts[k] = strings.TrimSpace(val)
	}
	for _, k := range []string{"revision", "time", "modified", "go"} {
		if facts[k] == "" {
			t.Errorf("no %s line in\n%s", k, out)
		}
	}
	return facts
}

// git runs git in the repository and returns its trimmed output; the test
// skips where there is no git checkout.
func gitOut(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("git %s: %v (not a git checkout?)", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out))
}

// `zklockviz version` and `--version` say the same: the version, the commit,
// its time, whether the tree was modified, and the Go version; `make build`
// stamps what git says, so a binary built in a worktree or with
// -buildvcs=false still names its commit.
func TestVersion(t *testing.T) {
	code, plain, stderr := runBinary(t, nil, "version")
	if code != 0 {
		t.Fatalf("version: exit %d\n%s", code, stderr)
	}
	for _, flag := range []string{"--version", "-version"} {
		if code, out, _ := runBinary(t, nil, flag); code != 0 || out != plain {
			t.Errorf("%s: exit %d\n%s\nwant what version says:\n%s", flag, code, out, plain)
		}
	}
	facts := versionFacts(t, plain)
	if want := runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH; facts["go"] != want {
		t.Errorf("go: %q, want %q (the toolchain that built it)", facts["go"], want)
	}

	t.Run("make build", func(t *testing.T) {
		if _, err := exec.LookPath("make"); err != nil {
			t.Skip("no make")
		}
		head := gitOut(t, "rev-parse", "HEAD")
		committed, err := time.Parse(time.RFC3339, gitOut(t, "log", "-1", "--format=%cI"))
		if err != nil {
			t.Fatal(err)
		}
		modified := fmt.Sprint(gitOut(t, "status", "--porcelain") != "")
		bin := filepath.Join(t.TempDir(), "zklockviz")
		mk := exec.Command("make", "-s", "build", "BIN="+bin, "VERSION=v9.8.7-test")
		mk.Dir = "../.."
		if out, err := mk.CombinedOutput(); err != nil {
			t.Fatalf("make build: %v\n%s", err, out)
		}
		out, err := exec.Command(bin, "version").Output()
		if err != nil {
			t.Fatalf("version: %v", err)
		}
		got := versionFacts(t, string(out))
		want := map[string]string{
			"version":  "v9.8.7-test",
			"revision": head,
			"time":     committed.UTC().Format(time.RFC3339),
			"modified": modified,
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %q, want %q\n%s", k, got[k], v, out)
			}
		}
	})
}

// GET /api/v1/version and /metrics's zklockviz_build_info say what
// `zklockviz version` says.
func TestVersionOverHTTPAndMetrics(t *testing.T) {
	zks := sharedZK(t)
	_, plain, _ := runBinary(t, nil, "version")
	facts := versionFacts(t, plain)
	s := startServe(t, "--zk", zks.Addr(), "--addr", "127.0.0.1:0", "--history", "off")

	var info buildinfo.Info
	if code := getJSON(t, s.url+"/api/v1/version", &info); code != http.StatusOK {
		t.Fatalf("GET /api/v1/version: %d", code)
	}
	when := "unknown"
	if !info.Time.IsZero() {
		when = info.Time.Format(time.RFC3339)
	}
	modified := "unknown"
	if info.Modified != nil {
		modified = fmt.Sprint(*info.Modified)
	}
	revision := info.Revision
	if revision == "" {
		revision = "unknown"
	}
	got := map[string]string{"version": info.Version, "revision": revision, "time": when, "modified": modified, "go": info.GoVersion + " " + info.Platform}
	for k, v := range got {
		if facts[k] != v {
			t.Errorf("/api/v1/version's %s: %q; zklockviz version says %q", k, v, facts[k])
		}
	}

	body := getText(t, s.url+"/metrics")
	want := fmt.Sprintf(`zklockviz_build_info{goversion=%q,revision=%q,version=%q} 1`, info.GoVersion, info.Revision, info.Version)
	if !strings.Contains(body, want+"\n") {
		t.Errorf("/metrics lacks %s; its build_info lines:\n%s", want, grepLines(body, "zklockviz_build_info"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

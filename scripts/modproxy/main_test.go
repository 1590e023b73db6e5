package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

// gitRepo makes a small module in a fresh git repository: a committed
// package, an ignored file, an untracked one and a nested module.
func gitRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	for name, body := range map[string]string{
		"go.mod":             "module example.com/m\n\ngo 1.26\n",
		".gitignore":         "/bin/\n",
		"cmd/m/main.go":      "package main\n\nfunc main() {}\n",
		"bin/m":              "a build",
		"nested/go.mod":      "module example.com/m/nested\n",
		"nested/nested.go":   "package nested\n",
		"notes/untracked.md": "not committed yet\n",
	} {
		full := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"init", "-q"},
		{"add", "go.mod", ".gitignore", "cmd", "nested"},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "m"},
	} {
		if _, err := git(dir, args...); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestPublish(t *testing.T) {
	repo := gitRepo(t)
	for _, tc := range []struct {
		name, version string
		pseudo        bool
	}{
		{name: "head's pseudo-version", pseudo: true},
		{name: "a given version", version: "v1.2.3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			v, err := publish(repo, dir, tc.version)
			if err != nil {
				t.Fatal(err)
			}
			if got := module.IsPseudoVersion(v); got != tc.pseudo || (!tc.pseudo && v != tc.version) {
				t.Fatalf("published as %s; want %q (pseudo-version: %v)", v, tc.version, tc.pseudo)
			}
			at := filepath.Join(dir, "example.com", "m", "@v")
			cf, err := modzip.CheckZip(module.Version{Path: "example.com/m", Version: v}, filepath.Join(at, v+".zip"))
			if err != nil {
				t.Fatalf("the zip is not one the go command accepts: %v", err)
			}
			var want []string
			for _, name := range []string{".gitignore", "cmd/m/main.go", "go.mod", "notes/untracked.md"} {
				want = append(want, "example.com/m@"+v+"/"+name)
			}
			if got := slices.Sorted(slices.Values(cf.Valid)); !slices.Equal(got, want) {
				t.Errorf("zip holds %q; want %q (tracked and untracked, not ignored, no nested module)", got, want)
			}
			if mod, err := os.ReadFile(filepath.Join(at, v+".mod")); err != nil || !strings.HasPrefix(string(mod), "module example.com/m\n") {
				t.Errorf(".mod: %q, %v", mod, err)
			}
			list, err := os.ReadFile(filepath.Join(at, "list"))
			if err != nil || strings.TrimSpace(string(list)) != v {
				t.Errorf("list: %q, %v; want %s", list, err, v)
			}
			for _, name := range []string{filepath.Join(at, v+".info"), filepath.Join(dir, "example.com", "m", "@latest")} {
				var info struct{ Version string }
				data, err := os.ReadFile(name)
				if err == nil {
					err = json.Unmarshal(data, &info)
				}
				if err != nil || info.Version != v {
					t.Errorf("%s: %q, %v; want version %s", name, data, err, v)
				}
			}
		})
	}
}

func TestPublishRefusesABadVersion(t *testing.T) {
	if _, err := publish(gitRepo(t), t.TempDir(), "1.2.3"); err == nil {
		t.Fatal("published as 1.2.3, not a semantic version with a v")
	}
}

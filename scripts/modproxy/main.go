// Command modproxy writes this checkout as one version of the module into a
// module proxy directory, the layout `go mod download` reads from a
// GOPROXY=file://DIR: DIR/MODULE/@v/list, VERSION.info, VERSION.mod and
// VERSION.zip, and @latest naming VERSION. scripts/goinstall-check.sh uses it to prove that
// `go install github.com/zklockviz/zklockviz/cmd/zklockviz@VERSION` works
// for someone outside a checkout (issue 38).
//
// The zip holds the files git tracks, and the untracked ones it does not
// ignore, as they are in the working tree: what a tag of this tree would
// publish, and the uncommitted change with it, so a check before a commit
// checks that change. golang.org/x/mod/zip builds it, the package the go
// command itself uses, so the zip drops what a proxy's would (nested
// modules, vendor directories) and refuses what a proxy would refuse.
//
// Usage:
//
//	go run ./scripts/modproxy -dir DIR [-version VERSION]
//
// Without -version it names the tree with HEAD's pseudo-version
// (v0.0.0-TIME-REVISION). It prints the version.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

func main() {
	dir := flag.String("dir", "", "the proxy directory to write into (created if missing)")
	version := flag.String("version", "", "the module version to publish the tree as (default: HEAD's pseudo-version)")
	repo := flag.String("repo", ".", "the module's root, a git checkout")
	flag.Parse()
	if *dir == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: modproxy -dir DIR [-version VERSION] [-repo ROOT]")
		os.Exit(2)
	}
	v, err := publish(*repo, *dir, *version)
	if err != nil {
		fmt.Fprintf(os.Stderr, "modproxy: %v\n", err)
		os.Exit(1)
	}
	fmt.Println(v)
}

// publish writes the module at repo into the proxy directory dir as
// version (HEAD's pseudo-version when empty) and returns the version.
func publish(repo, dir, version string) (string, error) {
	gomod, err := os.ReadFile(filepath.Join(repo, "go.mod"))
	if err != nil {
		return "", fmt.Errorf("read the module's go.mod: %w", err)
	}
	path := modfile.ModulePath(gomod)
	if path == "" {
		return "", errors.New("go.mod names no module")
	}
	stamp, rev, err := headCommit(repo)
	if err != nil {
		return "", err
	}
	if version == "" {
		version = module.PseudoVersion("v0", "", stamp, rev[:12])
	}
	m := module.Version{Path: path, Version: version}
	if err := module.Check(m.Path, m.Version); err != nil {
		return "", fmt.Errorf("publish as %s: %w", version, err)
	}
	files, err := treeFiles(repo)
	if err != nil {
		return "", err
	}
	escPath, err := module.EscapePath(m.Path)
	if err != nil {
		return "", fmt.Errorf("escape %s: %w", m.Path, err)
	}
	escVersion, err := module.EscapeVersion(m.Version)
	if err != nil {
		return "", fmt.Errorf("escape %s: %w", m.Version, err)
	}
	at := filepath.Join(dir, filepath.FromSlash(escPath), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		return "", fmt.Errorf("create the proxy directory: %w", err)
	}
	var zipped bytes.Buffer
	if err := modzip.Create(&zipped, m, files); err != nil {
		return "", fmt.Errorf("zip %s: %w", m, err)
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{m.Version, stamp})
	if err != nil {
		return "", fmt.Errorf("encode the .info: %w", err)
	}
	for name, data := range map[string][]byte{
		escVersion + ".zip":  zipped.Bytes(),
		escVersion + ".mod":  gomod,
		escVersion + ".info": info,
	} {
		if err := os.WriteFile(filepath.Join(at, name), data, 0o644); err != nil {
			return "", fmt.Errorf("write the proxy's %s: %w", name, err)
		}
	}
	if err := addToList(filepath.Join(at, "list"), m.Version); err != nil {
		return "", err
	}
	// A list leaves pseudo-versions out of @latest's choice; the go command
	// then asks the proxy's @latest, which names the version published last.
	if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(escPath), "@latest"), info, 0o644); err != nil {
		return "", fmt.Errorf("write the proxy's @latest: %w", err)
	}
	return m.Version, nil
}

// headCommit returns HEAD's commit time (UTC) and full revision.
func headCommit(repo string) (time.Time, string, error) {
	out, err := git(repo, "log", "-1", "--format=%ct %H", "HEAD")
	if err != nil {
		return time.Time{}, "", err
	}
	secs, rev, ok := strings.Cut(strings.TrimSpace(string(out)), " ")
	var unix int64
	if _, err := fmt.Sscan(secs, &unix); !ok || err != nil || len(rev) < 12 {
		return time.Time{}, "", fmt.Errorf("git log: unexpected %q", out)
	}
	return time.Unix(unix, 0).UTC(), rev, nil
}

// treeFiles lists what git tracks and the untracked files it does not
// ignore, as they are on disk; a tracked file deleted in the working tree
// is left out, as a commit of the tree would leave it out.
func treeFiles(repo string) ([]modzip.File, error) {
	out, err := git(repo, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	if err != nil {
		return nil, err
	}
	var files []modzip.File
	seen := map[string]bool{}
	for _, name := range strings.Split(string(out), "\x00") {
		if name == "" || seen[name] {
			continue
		}
		seen[name] = true
		full := filepath.Join(repo, filepath.FromSlash(name))
		info, err := os.Lstat(full)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("stat %s: %w", name, err)
		}
		files = append(files, diskFile{name: name, full: full, info: info})
	}
	return files, nil
}

func git(repo string, args ...string) ([]byte, error) {
	cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// addToList adds version to the proxy's list of versions, once.
func addToList(list, version string) error {
	old, err := os.ReadFile(list)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("read the proxy's list: %w", err)
	}
	for _, v := range strings.Fields(string(old)) {
		if v == version {
			return nil
		}
	}
	f, err := os.OpenFile(list, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("open the proxy's list: %w", err)
	}
	if _, err := fmt.Fprintln(f, version); err != nil {
		f.Close()
		return fmt.Errorf("write the proxy's list: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write the proxy's list: %w", err)
	}
	return nil
}

// diskFile is a file of the working tree, named by its slash path in the
// module.
type diskFile struct {
	name, full string
	info       os.FileInfo
}

func (f diskFile) Path() string                 { return f.name }
func (f diskFile) Lstat() (os.FileInfo, error)  { return f.info, nil }
func (f diskFile) Open() (io.ReadCloser, error) { return os.Open(f.full) }

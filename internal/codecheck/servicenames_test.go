package codecheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// serviceBranch matches code in the neutral presentation that names a lock
// service: a comparison with, or a map or switch keyed by, one of the
// services' names. A service's words and columns come through the seam
// (lockservice.Words), so views and static should hold none of these.
var serviceBranch = regexp.MustCompile(`lockqueue\.(ZooKeeper|Etcd|Redis|Postgres)\b` +
	"|[\"'`](zookeeper|redis|etcd|postgres)[\"'`]" +
	`|IsZooKeeper|ServiceName\(\)` +
	`|(\bcase|==|!=)\s*(postgres|redis)\b|\b(postgres|redis)\s*(==|!=|:)`)

// serviceBranchesAllowed are the files that still name a service, with
// how many times: other work owns them. A file over its count fails the
// test, and so does an entry above the file's count, so the list only
// shrinks.
var serviceBranchesAllowed = map[string]int{
	// A dashboard row reads its summary's service name once
	// (lockqueue's ServiceName, the edge rule for snapshots).
	"views/models.go": 1,
}

// TestServiceNamesInPresentation counts, per file, the places views and
// static branch on a service's name (tests and generated code aside).
func TestServiceNamesInPresentation(t *testing.T) {
	root := moduleRoot(t)
	got := map[string]int{}
	for _, glob := range []string{"views/*.go", "views/*.templ", "static/*.js"} {
		files, err := filepath.Glob(filepath.Join(root, glob))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			rel := filepath.ToSlash(must(filepath.Rel(root, f)))
			if strings.HasSuffix(rel, "_test.go") || strings.HasSuffix(rel, "_templ.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if n := countServiceBranches(string(b)); n > 0 {
				got[rel] = n
			}
		}
	}
	for file, n := range got {
		if n > serviceBranchesAllowed[file] {
			t.Errorf("%s names a lock service %d times (allowed %d): take the words from the service (lockservice.Words) instead", file, n, serviceBranchesAllowed[file])
		}
	}
	for file, n := range serviceBranchesAllowed {
		if got[file] < n {
			t.Errorf("%s names a lock service %d times now, fewer than its allowance %d: lower the allowance", file, got[file], n)
		}
	}
}

// countServiceBranches counts serviceBranch's matches outside comments.
func countServiceBranches(src string) int {
	n := 0
	for _, line := range strings.Split(src, "\n") {
		if s := strings.TrimSpace(line); strings.HasPrefix(s, "//") || strings.HasPrefix(s, "*") {
			continue
		}
		n += len(serviceBranch.FindAllStringIndex(line, -1))
	}
	return n
}

func TestCountServiceBranches(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want int
	}{
		{"x := 1", 0},
		{`if s.Name == lockqueue.ZooKeeper {`, 1},
		{`case "redis", "etcd":`, 2},
		{`if (service !== 'zookeeper')`, 1},
		{`if s.ServiceName() != postgres {`, 2},
		{`// a comment on lockqueue.ZooKeeper`, 0},
		{`s.IsZooKeeper()`, 1},
		{`const redisKey = "a redis key"`, 0},
	} {
		if got := countServiceBranches(tc.src); got != tc.want {
			t.Errorf("%q: %d, want %d", tc.src, got, tc.want)
		}
	}
}

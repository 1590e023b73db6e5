// Package buildinfo says which build of zklockviz runs: its module version,
// the VCS revision and commit time it was built from, whether that tree had
// uncommitted changes, and the Go version, so that a bug report, a scrape
// and a probe can each name the build.
//
// What the go command records in the binary comes first: `go install
// ...@VERSION` records the version (and a pseudo-version carries the
// revision and time), a build in a git clone records vcs.revision, vcs.time
// and vcs.modified. What the Makefile stamps with -ldflags -X comes next: a
// build in a git worktree, or with -buildvcs=false, records no VCS facts.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/module"
)

// Info is one build's facts. The JSON is GET /api/v1/version's.
type Info struct {
	// Version is the module version (v1.2.3, a pseudo-version, or what
	// the Makefile stamped from git describe), "dev" when nothing says.
	Version string `json:"version"`
	// Revision is the commit, in full when the build recorded it, its
	// first 12 digits when only a pseudo-version names it; empty when
	// unknown.
	Revision string `json:"revision,omitempty"`
	// Time is the commit's time; zero when unknown.
	Time time.Time `json:"time,omitzero"`
	// Modified says whether the tree had uncommitted changes; nil when
	// unknown.
	Modified  *bool  `json:"modified,omitempty"`
	GoVersion string `json:"goVersion"`
	// Platform is GOOS/GOARCH.
	Platform string `json:"platform"`
}

// Stamped is what a build set with -ldflags -X (the Makefile's build and
// dist targets): the version, and the VCS facts for builds that record none.
// Empty fields, and the version "dev", say nothing.
type Stamped struct {
	Version, Revision, Time, Modified string
}

// Read is the running binary's Info.
func Read(s Stamped) Info {
	bi, _ := debug.ReadBuildInfo()
	return From(s, bi)
}

// From combines the build info (nil when the binary has none) with what was
// stamped.
func From(s Stamped, bi *debug.BuildInfo) Info {
	info := Info{Version: "dev", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	vcs := map[string]string{}
	if bi != nil {
		if bi.GoVersion != "" {
			info.GoVersion = bi.GoVersion
		}
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			info.Version = v
		}
		for _, kv := range bi.Settings {
			vcs[kv.Key] = kv.Value
		}
	}
	if s.Version != "" && s.Version != "dev" {
		info.Version = s.Version
	}
	info.Revision = first(vcs["vcs.revision"], s.Revision)
	if t, err := time.Parse(time.RFC3339, first(vcs["vcs.time"], s.Time)); err == nil {
		info.Time = t.UTC()
	}
	if m, err := strconv.ParseBool(first(vcs["vcs.modified"], s.Modified)); err == nil {
		info.Modified = &m
	}
	// The go command marks a version built from a modified tree +dirty
	// (go1.24 and later).
	clean, dirty := strings.CutSuffix(info.Version, "+dirty")
	if dirty && info.Modified == nil {
		info.Modified = &dirty
	}
	if module.IsPseudoVersion(clean) {
		if info.Revision == "" {
			info.Revision, _ = module.PseudoVersionRev(clean)
		}
		if t, err := module.PseudoVersionTime(clean); err == nil && info.Time.IsZero() {
			info.Time = t
		}
	}
	return info
}

func first(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// String is `zklockviz version`'s output: the version on the first line,
// as before, then one fact a line.
func (i Info) String() string {
	unknown := func(s string) string {
		if s == "" {
			return "unknown"
		}
		return s
	}
	when, modified := "", ""
	if !i.Time.IsZero() {
		when = i.Time.Format(time.RFC3339)
	}
	if i.Modified != nil {
		modified = strconv.FormatBool(*i.Modified)
	}
	return fmt.Sprintf("zklockviz %s\nrevision: %s\ntime:     %s\nmodified: %s\ngo:       %s %s\n",
		i.Version, unknown(i.Revision), unknown(when), unknown(modified), i.GoVersion, i.Platform)
}

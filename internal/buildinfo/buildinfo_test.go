package buildinfo

import (
	"encoding/json"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

func TestVersionFromBuildInfo(t *testing.T) {
	yes, no := true, false
	commit := "da17ba46776a1234567890abcdef1234567890ab"
	when := time.Date(2026, 11, 29, 2, 1, 59, 0, time.UTC)
	vcs := func(modified string) []debug.BuildSetting {
		return []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: commit},
			{Key: "vcs.time", Value: "2026-11-29T02:01:59Z"},
			{Key: "vcs.modified", Value: modified},
		}
	}
	build := func(version string, settings []debug.BuildSetting) *debug.BuildInfo {
		return &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/zklockviz/zklockviz", Version: version}, Settings: settings}
	}
	tests := []struct {
		name    string
		stamped Stamped
		bi      *debug.BuildInfo
		want    Info
	}{
		{
			name: "no build info, nothing stamped",
			want: Info{Version: "dev", GoVersion: runtime.Version()},
		},
		{
			name: "go install of a release",
			bi:   build("v1.2.3", nil),
			want: Info{Version: "v1.2.3", GoVersion: "go1.26.8"},
		},
		{
			name: "go install of a pseudo-version: its revision and time",
			bi:   build("v0.0.0-20261129020159-da17ba46776a", nil),
			want: Info{Version: "v0.0.0-20261129020159-da17ba46776a", Revision: "da17ba46776a", Time: when, GoVersion: "go1.26.8"},
		},
		{
			name: "go build in a clone with changes",
			bi:   build("v0.0.0-20261129020159-da17ba46776a+dirty", vcs("true")),
			want: Info{Version: "v0.0.0-20261129020159-da17ba46776a+dirty", Revision: commit, Time: when, Modified: &yes, GoVersion: "go1.26.8"},
		},
		{
			name: "+dirty alone says modified",
			bi:   build("v0.0.0-20261129020159-da17ba46776a+dirty", nil),
			want: Info{Version: "v0.0.0-20261129020159-da17ba46776a+dirty", Revision: "da17ba46776a", Time: when, Modified: &yes, GoVersion: "go1.26.8"},
		},
		{
			name:    "make build in a clone: the stamped version wins, the VCS facts are the build's",
			stamped: Stamped{Version: "41f9475", Revision: "0000000000000000000000000000000000000000", Modified: "true"},
			bi:      build("(devel)", vcs("false")),
			want:    Info{Version: "41f9475", Revision: commit, Time: when, Modified: &no, GoVersion: "go1.26.8"},
		},
		{
			name:    "make build in a worktree: everything stamped",
			stamped: Stamped{Version: "41f9475-dirty", Revision: commit, Time: "2026-11-29T02:01:59Z", Modified: "true"},
			bi:      build("(devel)", nil),
			want:    Info{Version: "41f9475-dirty", Revision: commit, Time: when, Modified: &yes, GoVersion: "go1.26.8"},
		},
		{
			name:    "the default stamp says nothing",
			stamped: Stamped{Version: "dev", Time: "not a time", Modified: "maybe"},
			bi:      build("(devel)", nil),
			want:    Info{Version: "dev", GoVersion: "go1.26.8"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := From(tc.stamped, tc.bi)
			tc.want.Platform = runtime.GOOS + "/" + runtime.GOARCH
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(tc.want)
			if string(g) != string(w) {
				t.Errorf("got  %s\nwant %s", g, w)
			}
		})
	}
}

func TestVersionString(t *testing.T) {
	yes := true
	for _, tc := range []struct {
		name string
		info Info
		want string
	}{
		{
			name: "all known",
			info: Info{Version: "v1.2.3", Revision: "da17ba46776a", Time: time.Date(2026, 11, 29, 2, 1, 59, 0, time.UTC), Modified: &yes, GoVersion: "go1.26.8", Platform: "linux/arm64"},
			want: "zklockviz v1.2.3\nrevision: da17ba46776a\ntime:     2026-11-29T02:01:59Z\nmodified: true\ngo:       go1.26.8 linux/arm64\n",
		},
		{
			name: "nothing known",
			info: Info{Version: "dev", GoVersion: "go1.26.8", Platform: "darwin/amd64"},
			want: "zklockviz dev\nrevision: unknown\ntime:     unknown\nmodified: unknown\ngo:       go1.26.8 darwin/amd64\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.info.String(); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// The JSON leaves out what is unknown rather than saying false or a zero
// time.
func TestVersionJSONLeavesOutTheUnknown(t *testing.T) {
	b, err := json.Marshal(Info{Version: "dev", GoVersion: "go1.26.8", Platform: "linux/amd64"})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"revision", "time", "modified"} {
		if strings.Contains(string(b), `"`+key+`"`) {
			t.Errorf("%s has %q", b, key)
		}
	}
}

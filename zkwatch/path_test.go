package zkwatch

import (
	"errors"
	"strings"
	"testing"
)

func TestValidatePath(t *testing.T) {
	tests := []struct {
		path string
		ok   bool
		why  string // part of the error message
	}{
		{"/", true, ""},
		{"/locks", true, ""},
		{"/locks/my-lock_1.x", true, ""},
		{"/locks/ünïcödé/锁", true, ""},
		{"/a/.b/..c", true, ""},
		{"", false, "empty"},
		{"locks", false, "start with /"},
		{"/locks/", false, "end with /"},
		{"/locks//a", false, "empty segment"},
		{"/locks/./a", false, `"."`},
		{"/locks/..", false, `".."`},
		{"/locks/a\x00b", false, "U+0000"},
		{"/locks/a\nb", false, "U+000A"},
		{"/locks/a\x7fb", false, "U+007F"},
		{"/locks/a\u0085b", false, "U+0085"},
		{"/locks/a\uf000b", false, "U+F000"},
		{"/locks/a\ufff5b", false, "U+FFF5"},
		{"/locks/\xff\xfe", false, "UTF-8"},
	}
	for _, tc := range tests {
		err := ValidatePath(tc.path)
		if tc.ok {
			if err != nil {
				t.Errorf("ValidatePath(%q) = %v, want nil", tc.path, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("ValidatePath(%q) = nil, want an error about %s", tc.path, tc.why)
			continue
		}
		if !errors.Is(err, ErrBadPath) || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("ValidatePath(%q) = %v, want ErrBadPath mentioning %q", tc.path, err, tc.why)
		}
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	ok := Config{Servers: []string{"127.0.0.1:2181"}}
	tests := []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"no servers", func(c *Config) { c.Servers = nil }, "no ZooKeeper servers"},
		{"server with chroot", func(c *Config) { c.Servers = []string{"127.0.0.1:2181/app"} }, "bad server address"},
		{"relative watch path", func(c *Config) { c.Paths = []string{"locks/a"} }, "start with /"},
		{"trailing slash", func(c *Config) { c.Paths = []string{"/locks/a/"} }, "end with /"},
		{"bad prefix", func(c *Config) { c.Prefixes = []string{"/a//b"} }, "empty segment"},
		{"bad chroot", func(c *Config) { c.Chroot = "app" }, "chroot"},
		{"negative leases", func(c *Config) { c.Leases = map[string]int{"/l": -1} }, "negative"},
		{"bad leases path", func(c *Config) { c.Leases = map[string]int{"/l/../x": 2} }, `".."`},
		{"admin URL without scheme", func(c *Config) { c.AdminURLs = []string{"127.0.0.1:8080"} }, "AdminServer URL"},
		{"negative poll", func(c *Config) { c.Poll = -1 }, "poll"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ok
			tc.change(&cfg)
			w, err := New(cfg)
			if err == nil {
				w.Close()
				t.Fatalf("New accepted %+v", cfg)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New error %q does not mention %q", err, tc.want)
			}
		})
	}

	w, err := New(ok)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, p := range []string{"", "x", "/a/", "/a/../b", "/a\tb"} {
		if err := w.AddPath(p); !errors.Is(err, ErrBadPath) {
			t.Errorf("AddPath(%q) = %v, want ErrBadPath", p, err)
		}
	}
	if got := w.Paths(); len(got) != 0 {
		t.Errorf("Paths() after rejected AddPaths = %v, want none", got)
	}
}

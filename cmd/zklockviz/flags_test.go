package main

import (
	"slices"
	"testing"
)

func TestParseZK(t *testing.T) {
	tests := []struct {
		in      string
		servers []string
		chroot  string
		bad     bool
	}{
		{in: "zk1:2181", servers: []string{"zk1:2181"}},
		{in: "zk1", servers: []string{"zk1:2181"}},
		{in: "zk1:2181,zk2:2182,zk3", servers: []string{"zk1:2181", "zk2:2182", "zk3:2181"}},
		{in: "zk1:2181,zk2:2181/apps/a", servers: []string{"zk1:2181", "zk2:2181"}, chroot: "/apps/a"},
		{in: "zk1:2181/", servers: []string{"zk1:2181"}},
		{in: "[::1]:2181", servers: []string{"[::1]:2181"}},
		{in: " zk1:2181 , zk2:2181 ", servers: []string{"zk1:2181", "zk2:2181"}},
		{in: "", bad: true},
		{in: "::1", bad: true},
		{in: "zk1:0", bad: true},
		{in: "zk1:70000", bad: true},
		{in: ":2181", bad: true},
		{in: "zk1:2181,", bad: true},
		{in: "zk1:2181/a/", bad: true},
		{in: "zk1:2181//a", bad: true},
	}
	for _, tc := range tests {
		servers, chroot, err := parseZK(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("parseZK(%q) = %v %q, want an error", tc.in, servers, chroot)
			}
			continue
		}
		if err != nil || !slices.Equal(servers, tc.servers) || chroot != tc.chroot {
			t.Errorf("parseZK(%q) = %v %q %v, want %v %q", tc.in, servers, chroot, err, tc.servers, tc.chroot)
		}
	}
}

func TestIsLoopback(t *testing.T) {
	tests := []struct {
		addr     string
		loopback bool
		bad      bool
	}{
		{addr: "127.0.0.1:8080", loopback: true},
		{addr: "127.0.0.2:0", loopback: true},
		{addr: "localhost:8080", loopback: true},
		{addr: "[::1]:8080", loopback: true},
		{addr: ":8080"},
		{addr: "0.0.0.0:8080"},
		{addr: "[::]:8080"},
		{addr: "10.0.0.5:8080"},
		{addr: "viz.example.com:8080"},
		{addr: "8080", bad: true},
		{addr: "127.0.0.1:http", bad: true},
	}
	for _, tc := range tests {
		got, err := isLoopback(tc.addr)
		if (err != nil) != tc.bad || got != tc.loopback {
			t.Errorf("isLoopback(%q) = %v, %v; want %v, error %v", tc.addr, got, err, tc.loopback, tc.bad)
		}
	}
}

package main

import (
	"io"
	"strings"
	"testing"
	"time"
)

func TestStallGraceFlag(t *testing.T) {
	tests := []struct {
		args    []string
		env     string
		want    time.Duration // 0: the watcher's default, two polls
		wantErr string
	}{
		{},
		{args: []string{"--stall-grace", "5s"}, want: 5 * time.Second},
		{env: "3s", want: 3 * time.Second},
		{args: []string{"--stall-grace", "7s"}, env: "3s", want: 7 * time.Second},
		{args: []string{"--stall-grace", "0s"}, wantErr: "--stall-grace"},
		{env: "soon", wantErr: "--stall-grace"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " ")+" env="+tc.env, func(t *testing.T) {
			env := map[string]string{"ZKLOCKVIZ_STALL_GRACE": tc.env}
			m := &Main{Stdout: io.Discard, Stderr: io.Discard, Getenv: func(k string) string { return env[k] }}
			err := m.ParseFlags(append([]string{"--zk", "zk1:2281"}, tc.args...))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.Config.StallGrace != tc.want {
				t.Errorf("StallGrace = %v, want %v", m.Config.StallGrace, tc.want)
			}
		})
	}
}

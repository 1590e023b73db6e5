package main

import (
	"html"
	"net/url"
	"regexp"
	"testing"

	"github.com/zklockviz/zklockviz/lockqueue"
)

// The live lock page names the cluster the lock is read from, as the
// history and the export name it: ZooKeeper's members, or --cluster.
func TestLockPageNamesItsCluster(t *testing.T) {
	zks := sharedZK(t)
	const lock = "/lockpage/cluster"
	for _, tc := range []struct {
		name  string
		flags []string
		want  string
	}{
		{"the ensemble's members", nil, zks.Addr()},
		{"--cluster", []string{"--cluster", "payments-prod"}, "payments-prod"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--zk", zks.Addr(), "--addr", "127.0.0.1:0", "--watch", lock,
				"--data-dir", t.TempDir(), "--poll", "250ms", "--log-level", "warn"}, tc.flags...)
			srv := startServe(t, args...)
			api := historyAPI{t: t, base: srv.url}
			api.waitLive(lock, "the lock read", func(s lockqueue.Snapshot) bool { return s.Live() && s.Cluster == tc.want })
			page := httpText(t, srv.url+"/lock?path="+url.QueryEscape(lock))
			m := regexp.MustCompile(`data-stat="cluster"[^>]*><b[^>]*>([^<]*)</b> cluster`).FindStringSubmatch(page)
			if m == nil || html.UnescapeString(m[1]) != tc.want {
				t.Errorf("the lock page's summary names cluster %q, want %q", m, tc.want)
			}
		})
	}
}

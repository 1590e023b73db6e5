package etcdlocal_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/etcd/etcdlocal"
	"github.com/zklockviz/zklockviz/etcd/etcdlocal/etcdtest"
	"github.com/zklockviz/zklockviz/localproc/proctest"
)

// gateway posts body to etcd's JSON gateway (grpc-gateway, under /v3/) and
// decodes the answer into out.
func gateway(t *testing.T, s *etcdlocal.Server, path string, body, out any) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	c := http.Client{Timeout: 10 * time.Second}
	if cfg := s.ClientTLS(); cfg != nil {
		c.Transport = &http.Transport{TLSClientConfig: cfg}
	}
	resp, err := c.Post(s.Endpoint()+"/v3/"+path, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %s", path, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatalf("%s: decode: %v", path, err)
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

type rangeResp struct {
	Kvs []struct {
		Key, Value     string
		CreateRevision string `json:"create_revision"`
	}
}

func put(t *testing.T, s *etcdlocal.Server, key, value string) {
	t.Helper()
	var out map[string]any
	gateway(t, s, "kv/put", map[string]string{"key": b64(key), "value": b64(value)}, &out)
}

func get(t *testing.T, s *etcdlocal.Server, key string) (string, bool) {
	t.Helper()
	var out rangeResp
	gateway(t, s, "kv/range", map[string]string{"key": b64(key)}, &out)
	if len(out.Kvs) == 0 {
		return "", false
	}
	v, err := base64.StdEncoding.DecodeString(out.Kvs[0].Value)
	if err != nil {
		t.Fatal(err)
	}
	return string(v), true
}

func TestPutGet(t *testing.T) {
	s := etcdtest.ForTest(t)
	put(t, s, "/locks/orders/1", "holder")
	if v, ok := get(t, s, "/locks/orders/1"); !ok || v != "holder" {
		t.Errorf("get = %q, %v; want holder", v, ok)
	}
	if _, ok := get(t, s, "/locks/orders/2"); ok {
		t.Error("get of a key never put found something")
	}
}

func TestEtcdctl(t *testing.T) {
	etcdctl, err := exec.LookPath("etcdctl")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("etcdctl not installed (apt-get install etcd-client)")
		}
		t.Skip("etcdctl not installed (apt-get install etcd-client)")
	}
	s := etcdtest.ForTest(t)
	run := func(args ...string) string {
		cmd := exec.Command(etcdctl, append([]string{"--endpoints", s.Endpoint(), "--command-timeout", "10s"}, args...)...)
		cmd.Env = append(os.Environ(), "ETCDCTL_API=3")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("etcdctl %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run("put", "k", "v1")
	if got := run("get", "--print-value-only", "k"); got != "v1" {
		t.Errorf("etcdctl get = %q, want v1", got)
	}
}

// The fast election timeout is what lets the classroom use 1 s leases: with
// etcd's default (1000 ms) a 1 s lease is granted as 2 s.
func TestShortLease(t *testing.T) {
	for _, tc := range []struct {
		election time.Duration
		want     string
	}{
		{0, "1"}, // the default, 100ms
		{time.Second, "2"},
	} {
		t.Run(tc.election.String(), func(t *testing.T) {
			s := etcdtest.ForTestWith(t, etcdlocal.Options{ElectionTimeout: tc.election})
			var out struct{ TTL string }
			gateway(t, s, "lease/grant", map[string]any{"TTL": 1}, &out)
			if out.TTL != tc.want {
				t.Errorf("1 s lease granted with TTL %q, want %s", out.TTL, tc.want)
			}
		})
	}
}

func TestStopStartKeepsData(t *testing.T) {
	s := etcdtest.ForTest(t)
	put(t, s, "k", "v")
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if s.Running() {
		t.Error("Running after Stop")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if v, ok := get(t, s, "k"); !ok || v != "v" {
		t.Errorf("after restart get = %q, %v; want v (etcd persists)", v, ok)
	}
}

func TestCloseLeavesNothing(t *testing.T) {
	for _, kill := range []bool{false, true} {
		t.Run(fmt.Sprintf("kill=%v", kill), func(t *testing.T) {
			s := etcdtest.ForTest(t)
			if _, err := os.Stat(s.Dir() + "/data/member"); err != nil {
				t.Fatalf("etcd data: %v", err)
			}
			proctest.CheckCloseLeavesNothing(t, s, kill)
		})
	}
}

func TestBadOptions(t *testing.T) {
	_, err := etcdlocal.Start(context.Background(), etcdlocal.Options{HeartbeatInterval: 50 * time.Millisecond, ElectionTimeout: 100 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "election timeout") {
		t.Errorf("Start with election timeout < 5 heartbeats: %v, want an error naming the rule", err)
	}
}

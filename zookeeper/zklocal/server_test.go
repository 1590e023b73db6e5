package zklocal_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/third_party/zk"

	"github.com/zklockviz/zklockviz/zookeeper/zklocal"
	"github.com/zklockviz/zklockviz/zookeeper/zklocal/zktest"
)

func TestStandalone(t *testing.T) {
	start := time.Now()
	s := zktest.ForTest(t)
	t.Logf("standalone server ready in %v", time.Since(start))

	conn := zktest.Connect(t, s.Addr())

	t.Run("create and read", func(t *testing.T) {
		if _, err := conn.Create("/hello", []byte("world"), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("create: %v", err)
		}
		data, _, err := conn.Get("/hello")
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		if string(data) != "world" {
			t.Errorf("get /hello = %q, want %q", data, "world")
		}
	})

	t.Run("four letter words", func(t *testing.T) {
		// A data watch so wchp has something to report.
		if _, _, _, err := conn.GetW("/hello"); err != nil {
			t.Fatalf("getw: %v", err)
		}
		tests := []struct {
			cmd  string
			want string
		}{
			{"ruok", "imok"},
			{"srvr", "Mode: standalone"},
			{"mntr", "zk_server_state\tstandalone"},
			{"wchp", "/hello"},
		}
		for _, tt := range tests {
			t.Run(tt.cmd, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				got, err := zklocal.FourLetter(ctx, s.Addr(), tt.cmd)
				if err != nil {
					t.Fatalf("zklocal.FourLetter(%s): %v", tt.cmd, err)
				}
				if !strings.Contains(got, tt.want) {
					t.Errorf("zklocal.FourLetter(%s) = %q, want it to contain %q", tt.cmd, got, tt.want)
				}
			})
		}
	})

	t.Run("bad four letter word", func(t *testing.T) {
		if _, err := zklocal.FourLetter(context.Background(), s.Addr(), "ruokay"); err == nil {
			t.Error("FourLetter accepted a 6 letter word")
		}
	})

	t.Run("admin server", func(t *testing.T) {
		resp, err := http.Get(s.AdminURL() + "/commands/ruok")
		if err != nil {
			t.Fatalf("GET ruok: %v", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET ruok: status %s", resp.Status)
		}
		var body struct {
			Command string  `json:"command"`
			Error   *string `json:"error"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatalf("decode ruok: %v", err)
		}
		if body.Command != "ruok" || body.Error != nil {
			t.Errorf("ruok = %+v, want command ruok without error", body)
		}
	})
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestRestartKeepsDataAndPort(t *testing.T) {
	var log lockedBuffer
	s := zktest.ForTestWith(t, zklocal.Options{Log: &log, LogLevel: "INFO"})
	addr, admin := s.Addr(), s.AdminURL()

	conn := zktest.Connect(t, addr)
	if _, err := conn.Create("/survivor", []byte("still here"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create: %v", err)
	}
	conn.Close()

	if err := s.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if s.Running() {
		t.Fatal("Running after Stop")
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("second stop: %v", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	if err := s.Start(ctx); err != nil {
		t.Fatalf("restart: %v", err)
	}
	t.Logf("restart took %v", time.Since(start))
	if s.Addr() != addr || s.AdminURL() != admin {
		t.Errorf("after restart addr %s admin %s, want %s %s", s.Addr(), s.AdminURL(), addr, admin)
	}

	data, _, err := zktest.Connect(t, addr).Get("/survivor")
	if err != nil {
		t.Fatalf("get after restart: %v", err)
	}
	if string(data) != "still here" {
		t.Errorf("get /survivor = %q after restart", data)
	}
	if !strings.Contains(log.String(), "INFO") {
		t.Errorf("Log writer got no INFO lines; got:\n%s", log.String())
	}
}

func TestEnsembleFailover(t *testing.T) {
	start := time.Now()
	e := zktest.EnsembleForTest(t, 3)
	t.Logf("3-member ensemble ready in %v", time.Since(start))

	if got, want := len(strings.Split(e.ConnectString(), ",")), 3; got != want {
		t.Fatalf("ConnectString %q has %d members, want %d", e.ConnectString(), got, want)
	}
	old, err := e.Leader()
	if err != nil {
		t.Fatalf("leader: %v", err)
	}

	conn := zktest.Connect(t, e.Addrs()...)
	if _, err := conn.Create("/before", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create before failover: %v", err)
	}

	if err := e.Members()[old].Stop(); err != nil {
		t.Fatalf("stop leader: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start = time.Now()
	leader, err := e.WaitLeader(ctx)
	if err != nil {
		t.Fatalf("no new leader: %v", err)
	}
	t.Logf("new leader %d (was %d) after %v", leader, old, time.Since(start))
	if leader == old {
		t.Fatalf("leader is still the stopped member %d", old)
	}

	// The client has to notice the dead server and reconnect; until then
	// writes fail with connection errors.
	for {
		_, err := conn.Create("/after", nil, 0, zk.WorldACL(zk.PermAll))
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("create after failover: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, _, err := conn.Get("/before"); err != nil {
		t.Errorf("get /before after failover: %v", err)
	}
}

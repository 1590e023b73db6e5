package queuecost

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/etcd/etcdlocal"
	"github.com/zklockviz/zklockviz/zookeeper/zklocal"
)

// A queued waiter costs its server no more than its session's heartbeat:
// 20 of them, a second and a half, counted by the server, well under one
// request per waiter per second (a Redis waiter polling every 10 ms sends
// a hundred).
func TestQueuedWaitersAreQuiet(t *testing.T) {
	for _, tt := range []struct {
		service string
		missing error
	}{{ZooKeeper, zklocal.ErrNotInstalled}, {Etcd, etcdlocal.ErrNotInstalled}} {
		t.Run(tt.service, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			r, err := Measure(ctx, tt.service, 20, 1500*time.Millisecond)
			if errors.Is(err, tt.missing) && os.Getenv("CI") != "true" {
				t.Skip(err)
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %d requests in %s (%s): %.1f/s", r.Service, r.Requests, r.Window, r.Counter, r.PerSecond())
			if r.Requests < 0 || r.PerSecond() >= float64(r.Waiters) {
				t.Errorf("%s counted %d requests in %s with %d queued waiters: want under one per waiter per second", r.Service, r.Requests, r.Window, r.Waiters)
			}
		})
	}
}

// PerSecond is the server's request rate over the window.
func (r Result) PerSecond() float64 { return float64(r.Requests) / r.Window.Seconds() }

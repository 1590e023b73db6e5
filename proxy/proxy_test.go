package proxy_test

import (
	"context"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/third_party/zk"

	"github.com/zklockviz/zklockviz/proxy"
	"github.com/zklockviz/zklockviz/zookeeper/zklocal"
	"github.com/zklockviz/zklockviz/zookeeper/zklocal/zktest"
)

// echoServer echoes every connection until the test ends.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				io.Copy(c, c)
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	return ln.Addr().String()
}

// noGoroutineLeak fails the test if the goroutine count has not returned to
// its starting value shortly after the test body.
func noGoroutineLeak(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(3 * time.Second)
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<16)
				t.Errorf("goroutines: %d before, %d after:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(5 * time.Second))
	return c
}

// roundTrip sends msg and reads the echo.
func roundTrip(c net.Conn, msg string) (string, error) {
	if _, err := io.WriteString(c, msg); err != nil {
		return "", err
	}
	buf := make([]byte, len(msg))
	_, err := io.ReadFull(c, buf)
	return string(buf), err
}

func TestCutRestoreEcho(t *testing.T) {
	noGoroutineLeak(t)
	p, err := proxy.New(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	steps := []struct {
		name   string
		action func()
		// open is a connection made before the action, fresh one after.
		// A connection made while cut is dead for good, even after Restore.
		openWorks, freshWorks bool
		cutting               bool
	}{
		{"initially", func() {}, true, true, false},
		{"cut", p.Cut, false, false, true},
		{"cut again", p.Cut, false, false, true},
		{"restore", p.Restore, false, true, false},
		{"restore again", p.Restore, true, true, false},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			open := dial(t, p.Addr())
			if _, err := roundTrip(open, "warmup"); (err == nil) != !p.Cutting() {
				t.Fatalf("warmup before %s: %v (cutting %v)", st.name, err, p.Cutting())
			}
			st.action()
			if got := p.Cutting(); got != st.cutting {
				t.Errorf("Cutting() = %v, want %v", got, st.cutting)
			}
			for conn, want := range map[string]bool{"open": st.openWorks, "fresh": st.freshWorks} {
				c := open
				if conn == "fresh" {
					c = dial(t, p.Addr())
				}
				got, err := roundTrip(c, "hello")
				if works := err == nil && got == "hello"; works != want {
					t.Errorf("%s connection works = %v (%q, %v), want %v", conn, works, got, err, want)
				}
			}
		})
	}

	if err := p.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if c, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		c.Close()
		t.Error("proxy still accepts after Close")
	}
}

func TestHalfClose(t *testing.T) {
	noGoroutineLeak(t)
	p, err := proxy.New(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	c := dial(t, p.Addr())
	io.WriteString(c, "last words")
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "last words" {
		t.Errorf("after half-close read %q, %v; want the echo and EOF", got, err)
	}
}

func TestTargetDown(t *testing.T) {
	noGoroutineLeak(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	target := ln.Addr().String()
	ln.Close()

	p, err := proxy.New(target)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Refused() != nil {
		t.Errorf("a new proxy says it refused: %v", p.Refused())
	}
	if _, err := roundTrip(dial(t, p.Addr()), "x"); err == nil {
		t.Error("round trip through a proxy with a dead target succeeded")
	}
	// Its client saw only EOF; the proxy says why.
	if why := p.Refused(); why == nil || !strings.Contains(why.Error(), "could not reach "+target) || !strings.Contains(why.Error(), "refused") {
		t.Errorf("Refused() = %v, want it to say the target %s refused", why, target)
	}
}

// TestConcurrentCut hammers the proxy from several goroutines while it is cut
// and restored; run with -race.
func TestConcurrentCut(t *testing.T) {
	noGoroutineLeak(t)
	p, err := proxy.New(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				c, err := net.DialTimeout("tcp", p.Addr(), time.Second)
				if err != nil {
					continue
				}
				c.SetDeadline(time.Now().Add(time.Second))
				roundTrip(c, "ping")
				c.Close()
			}
		})
	}
	wg.Go(func() {
		for ctx.Err() == nil {
			p.Cut()
			time.Sleep(time.Millisecond)
			p.Restore()
			time.Sleep(time.Millisecond)
		}
	})
	wg.Wait()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

// TestZooKeeperSessionExpires cuts a real client off for longer than its
// session timeout: the server expires the session (its ephemeral node
// disappears) and after Restore the client learns it has expired.
func TestZooKeeperSessionExpires(t *testing.T) {
	srv := zktest.ForTestWith(t, zklocal.Options{TickTime: 100 * time.Millisecond})
	p, err := proxy.New(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	states := make(chan zk.State, 100)
	cut, _, err := zk.Connect([]string{p.Addr()}, time.Second,
		zk.WithLogger(nopLogger{}),
		zk.WithEventCallback(func(ev zk.Event) {
			if ev.Type == zk.EventSession {
				select {
				case states <- ev.State:
				default:
				}
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer cut.Close()
	waitState(t, states, zk.StateHasSession, 30*time.Second)
	oldSession := cut.SessionID()
	if _, err := cut.Create("/victim", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create ephemeral: %v", err)
	}

	// A second client, not behind the proxy, watches the ephemeral node.
	observer, events, err := zk.Connect([]string{srv.Addr()}, 10*time.Second, zk.WithLogger(nopLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	defer observer.Close()
	for ev := range events {
		if ev.State == zk.StateHasSession {
			break
		}
	}
	exists, _, watch, err := observer.ExistsW("/victim")
	if err != nil || !exists {
		t.Fatalf("observer: /victim exists=%v err=%v", exists, err)
	}

	start := time.Now()
	p.Cut()
	waitState(t, states, zk.StateDisconnected, 10*time.Second)
	select {
	case ev := <-watch:
		if ev.Type != zk.EventNodeDeleted {
			t.Fatalf("watch event %v, want node deleted", ev)
		}
		t.Logf("session expired on the server %v after the cut", time.Since(start))
	case <-time.After(20 * time.Second):
		t.Fatal("ephemeral node survived 20s of a 1s session being cut off")
	}

	p.Restore()
	waitState(t, states, zk.StateExpired, 20*time.Second)
	// go-zookeeper then opens a fresh session by itself.
	waitState(t, states, zk.StateHasSession, 20*time.Second)
	if cut.SessionID() == oldSession {
		t.Errorf("session id %x unchanged after expiry", oldSession)
	}
}

func waitState(t *testing.T, states <-chan zk.State, want zk.State, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case s := <-states:
			if s == want {
				return
			}
		case <-deadline:
			t.Fatalf("no %v within %v", want, timeout)
		}
	}
}

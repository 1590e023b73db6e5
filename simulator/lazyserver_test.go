package simulator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/fault"
)

// fakeServer counts its Closes.
type fakeServer struct{ closed atomic.Int32 }

func (s *fakeServer) Close() error {
	s.closed.Add(1)
	return nil
}

var errFakeNotInstalled = errors.New("fake is not installed (apt-get install fake)")

// fakeSpec starts fake servers, counting the starts; start, when set,
// runs first and may fail the start.
func fakeSpec(starts *atomic.Int32, start func(ctx context.Context) error) ServerSpec[*fakeServer] {
	return ServerSpec[*fakeServer]{
		Title: "Fake", Service: "fake", Program: "faked", NotInstalled: errFakeNotInstalled, Timeout: time.Minute,
		Start: func(ctx context.Context) (*fakeServer, error) {
			starts.Add(1)
			if start != nil {
				if err := start(ctx); err != nil {
					return nil, err
				}
			}
			return &fakeServer{}, nil
		},
	}
}

func TestLazyServerStartsOnceAndAgainAfterClose(t *testing.T) {
	var starts atomic.Int32
	sp := fakeSpec(&starts, nil)
	var l LazyServer[*fakeServer]
	if _, ok := l.Server(); ok {
		t.Fatal("a server before the first Open")
	}
	for range 2 {
		if err := l.Open(context.Background(), sp); err != nil {
			t.Fatal(err)
		}
	}
	srv, ok := l.Server()
	if !ok || starts.Load() != 1 {
		t.Fatalf("after two Opens: server %v, %d starts; want one", ok, starts.Load())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := l.Server(); ok || srv.closed.Load() != 1 {
		t.Fatalf("after Close: server %v, closed %d times", ok, srv.closed.Load())
	}
	if err := l.Open(context.Background(), sp); err != nil || starts.Load() != 2 {
		t.Fatalf("Open after Close: %v, %d starts; want a second", err, starts.Load())
	}
}

func TestLazyServerErrors(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{fmt.Errorf("%w: no faked on $PATH", errFakeNotInstalled), "Fake scenarios are unavailable: fake is not installed (apt-get install fake): no faked on $PATH"},
		{errors.New("port taken"), "fake classroom: start faked: port taken"},
		{fault.Errorf(fault.Unavailable, "fake classroom: set up: no table"), "fake classroom: set up: no table"},
	}
	for _, tt := range tests {
		var starts atomic.Int32
		var l LazyServer[*fakeServer]
		err := l.Open(context.Background(), fakeSpec(&starts, func(context.Context) error { return tt.err }))
		if !errors.Is(err, fault.Unavailable) || err.Error() != tt.want {
			t.Errorf("start failing with %q: Open = %v; want unavailable, %q", tt.err, err, tt.want)
		}
		if _, ok := l.Server(); ok {
			t.Errorf("start failing with %q: a server after all", tt.err)
		}
	}
}

func TestLazyServerAvailable(t *testing.T) {
	sp := ServerSpec[*fakeServer]{Program: "zklockviz-no-such-server", NotInstalled: errFakeNotInstalled}
	if err := sp.Available(); !errors.Is(err, errFakeNotInstalled) {
		t.Errorf("Available without the program = %v; want it to wrap %v", err, errFakeNotInstalled)
	}
	sp.Installed = func() error { return nil }
	if err := sp.Available(); err != nil {
		t.Errorf("Available with Installed saying yes = %v", err)
	}
}

func TestLazyServerPrestart(t *testing.T) {
	var starts atomic.Int32
	release := make(chan struct{})
	sp := fakeSpec(&starts, func(context.Context) error {
		<-release
		return nil
	})
	var l LazyServer[*fakeServer]
	l.Prestart(sp)
	l.Prestart(sp) // already under way: nothing more
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := l.Open(ctx, sp); !errors.Is(err, fault.Unavailable) {
		t.Errorf("Open given up before the start ends = %v; want unavailable", err)
	}
	close(release)
	if err := l.Open(context.Background(), sp); err != nil {
		t.Fatal(err)
	}
	srv, ok := l.Server()
	if !ok || starts.Load() != 1 {
		t.Fatalf("after Prestart and Open: server %v, %d starts; want Prestart's one", ok, starts.Load())
	}
	if err := l.Close(); err != nil || srv.closed.Load() != 1 {
		t.Fatalf("Close = %v, server closed %d times; want once", err, srv.closed.Load())
	}
}

// Close during a Prestart cancels the start and waits for it, so nothing
// it began outlives Close; a start that finished is closed.
func TestLazyServerCloseDuringPrestart(t *testing.T) {
	var starts atomic.Int32
	var cancelled atomic.Bool
	started := make(chan struct{})
	sp := fakeSpec(&starts, func(ctx context.Context) error {
		close(started)
		<-ctx.Done()
		cancelled.Store(true)
		return ctx.Err()
	})
	var l LazyServer[*fakeServer]
	l.Prestart(sp)
	<-started
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if !cancelled.Load() {
		t.Error("Close returned before the start it cancelled ended")
	}

	var done LazyServer[*fakeServer]
	var srv *fakeServer
	done.Prestart(ServerSpec[*fakeServer]{Timeout: time.Minute, Start: func(context.Context) (*fakeServer, error) {
		srv = &fakeServer{}
		return srv, nil
	}})
	if err := done.Close(); err != nil {
		t.Fatal(err)
	}
	if srv.closed.Load() != 1 {
		t.Errorf("a prestarted server closed %d times by Close; want once", srv.closed.Load())
	}
	if _, ok := done.Server(); ok {
		t.Error("a server after Close")
	}
}

func TestLazyServerPrestartError(t *testing.T) {
	var starts atomic.Int32
	fail := true
	sp := fakeSpec(&starts, func(context.Context) error {
		if fail {
			return errors.New("no luck")
		}
		return nil
	})
	var l LazyServer[*fakeServer]
	l.Prestart(sp)
	if err := l.Open(context.Background(), sp); err == nil || !strings.Contains(err.Error(), "no luck") {
		t.Fatalf("Open after a failed Prestart = %v; want its error", err)
	}
	fail = false
	if err := l.Open(context.Background(), sp); err != nil || starts.Load() != 2 {
		t.Fatalf("the next Open = %v after %d starts; want a second start", err, starts.Load())
	}
	l.Close()
}

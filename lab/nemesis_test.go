package lab

import (
	"context"
	"io"
	"net"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// A fault needs what it strikes: the server's controls, the clients'
// network. Run refuses a nemesis or a schedule it cannot do before it
// starts anything.
func TestPossible(t *testing.T) {
	start := func(context.Context) error { return nil }
	kill := func() error { return nil }
	jump := func(context.Context) (string, error) { return "", nil }
	for _, tc := range []struct {
		name     string
		cfg      Config
		possible []string
	}{
		{"nothing given", Config{}, []string{Pause, Kill}},
		{"a throwaway server", Config{Server: &ServerControl{Kill: kill, Stop: kill, Start: start}}, []string{Pause, Kill, ServerCrash, Restart}},
		{"the user's Redis: its clock only", Config{Server: &ServerControl{Jump: jump}}, []string{Pause, Kill, Clock}},
		{"proxies", Config{Network: &Network{Target: "127.0.0.1:1"}}, []string{Pause, Kill, CutOff}},
	} {
		for _, kind := range Nemeses {
			err := Possible(tc.cfg, kind)
			if want := strings.Contains(strings.Join(tc.possible, ","), kind); (err == nil) != want {
				t.Errorf("%s: %s possible: %v, want %v", tc.name, kind, err, want)
			}
		}
	}
	if err := Possible(Config{}, "meteor"); err == nil || !strings.Contains(err.Error(), `unknown fault "meteor"`) {
		t.Errorf("unknown fault: %v", err)
	}
	for _, cfg := range []Config{
		{Nemesis: []string{Pause, ServerCrash}},
		{Schedule: []Fault{{At: time.Second, Kind: CutOff}}},
	} {
		// No Command: Run must stop before it starts a client.
		if _, _, err := Run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "cannot do it") {
			t.Errorf("Run with %v %v: %v, want the fault refused", cfg.Nemesis, cfg.Schedule, err)
		}
	}
}

// The report counts every fault the nemesis did, once each, and names
// the new ones after the pauses and kills it always named.
func TestReportFaults(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	var events []Event
	for i, k := range []Kind{Paused, Resumed, Cut, Healed, ServerDown, ServerUp, ServerDown, ServerUp, ClockJumped, Killed, Started} {
		events = append(events, Event{At: t0.Add(time.Duration(i) * time.Millisecond), Client: "c1", Kind: k})
	}
	r := Check(events, 0, t0.Add(time.Second))
	want := map[string]int{"paused": 1, "cut": 1, "server-down": 2, "clock-jumped": 1, "killed": 1}
	if len(r.Faults) != len(want) {
		t.Errorf("faults %v, want %v", r.Faults, want)
	}
	for k, n := range want {
		if r.Faults[k] != n {
			t.Errorf("faults %v, want %v", r.Faults, want)
		}
	}
	if s := r.String(); !strings.Contains(s, "faults: 1 paused, 1 killed, 1 cut off, 2 server down, 1 server clock jumped\n") {
		t.Errorf("report:\n%s", s)
	}
	if s := Check(events[:2], 0, t0.Add(time.Second)).String(); !strings.Contains(s, "faults: 1 paused, 0 killed\n") {
		t.Errorf("report of a pause alone:\n%s", s)
	}
}

// server is a stand-in lock server's controls: Start returns only after
// ready more (as a server's readiness check can pass well after it first
// served), and calls served first, if set, as a client served by then.
type server struct {
	ready  time.Duration
	served func()

	mu    sync.Mutex
	calls []string
}

func (s *server) Kill() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, "kill")
	return nil
}

func (s *server) Start(ctx context.Context) error {
	s.mu.Lock()
	s.calls = append(s.calls, "start")
	s.mu.Unlock()
	if s.served != nil {
		s.served()
	}
	time.Sleep(s.ready)
	return nil
}

// The server fault: ServerDown stamped when the kill is sent, the server
// down for the fault's For, ServerUp stamped when it answered again: when
// Start came back, or sooner when a client got the lock from it before.
// When the run ends during the outage the server is not started again.
func TestServerFault(t *testing.T) {
	for _, served := range []bool{false, true} {
		s := &server{ready: 300 * time.Millisecond}
		r := &runner{cfg: Config{Server: &ServerControl{Kill: s.Kill, Start: s.Start, Note: "keys lost"}}}
		var grant time.Time
		if served {
			s.served = func() {
				grant = time.Now()
				r.record(Event{At: grant, Client: "c1", Kind: Acquired})
			}
		}
		before := time.Now()
		if err := r.serverFault(context.Background(), Fault{Kind: ServerCrash, For: 200 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		returned := time.Now()
		ev := slices.DeleteFunc(r.all(), func(e Event) bool { return e.Client != Server })
		if len(ev) != 2 || ev[0].Kind != ServerDown || ev[1].Kind != ServerUp {
			t.Fatalf("served %v: events %+v, want server-down and server-up of %q", served, ev, Server)
		}
		if ev[0].At.Before(before) || ev[0].Message != "kill -9: keys lost" {
			t.Errorf("server-down %+v: want stamped as the kill was sent, saying how and what is lost", ev[0])
		}
		up := ev[1].At
		switch {
		case up.Sub(ev[0].At) < 200*time.Millisecond:
			t.Errorf("served %v: server-up %v after the kill, want after For", served, up.Sub(ev[0].At))
		case served && !up.Equal(grant):
			t.Errorf("server-up at %v, %v before Start came back; want at the grant %v", up, returned.Sub(up), grant)
		case !served && returned.Sub(up) > 50*time.Millisecond:
			t.Errorf("server-up %v before Start came back, with no client served: want when it came back", returned.Sub(up))
		}
	}

	s := &server{}
	r := &runner{cfg: Config{Server: &ServerControl{Kill: s.Kill, Start: s.Start}}}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	if err := r.serverFault(ctx, Fault{Kind: ServerCrash, For: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if ev := r.all(); len(ev) != 1 || ev[0].Kind != ServerDown {
		t.Errorf("run ended during the outage: events %+v, want the server-down alone", ev)
	}
	if got := strings.Join(s.calls, ","); got != "kill" {
		t.Errorf("the server was told %s, want kill alone", got)
	}
}

// The cut: each client has a proxy of its own, kept across its
// restarts; a cut drops its connections and refuses new ones for For,
// then lets it back.
func TestCut(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	r := &runner{cfg: Config{Network: &Network{Target: ln.Addr().String(), Through: func(cmd *exec.Cmd, p string) {
		cmd.Env = append(cmd.Env, "SERVER="+p)
	}}}}
	defer r.closeProxies()
	cmd := exec.Command("true")
	if err := r.route("c1", cmd); err != nil {
		t.Fatal(err)
	}
	again := exec.Command("true")
	r.route("c1", again)
	addr, _ := strings.CutPrefix(cmd.Env[0], "SERVER=")
	if again.Env[0] != cmd.Env[0] || addr == ln.Addr().String() {
		t.Fatalf("client c1 routed through %v, then %v: want one proxy, not the server", cmd.Env, again.Env)
	}
	echo := func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(time.Second))
		if _, err := c.Write([]byte("x")); err != nil {
			return false
		}
		b := make([]byte, 1)
		_, err = io.ReadFull(c, b)
		return err == nil
	}
	if !echo() {
		t.Fatal("no answer through the proxy")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := r.cut(context.Background(), Fault{Kind: CutOff, For: 300 * time.Millisecond}, "c1"); err != nil {
			t.Error(err)
		}
	}()
	time.Sleep(100 * time.Millisecond)
	if echo() {
		t.Error("an answer through the proxy while cut")
	}
	<-done
	if !echo() {
		t.Error("no answer through the proxy once healed")
	}
	ev := r.all()
	if len(ev) != 2 || ev[0].Kind != Cut || ev[1].Kind != Healed || ev[1].At.Sub(ev[0].At) < 300*time.Millisecond || ev[0].Client != "c1" {
		t.Errorf("events %+v, want c1 cut, then healed 300ms later", ev)
	}
}

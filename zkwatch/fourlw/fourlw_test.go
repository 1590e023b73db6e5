package fourlw_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/zklockviz/zklockviz/zkwatch/fourlw"
	"github.com/zklockviz/zklockviz/zookeeper/zklocal"
	"github.com/zklockviz/zklockviz/zookeeper/zklocal/zktest"
)

// One real server whose whitelist leaves out wchp, so the refusal is the
// server's own words.
func TestAsk(t *testing.T) {
	s := zktest.ForTestWith(t, zklocal.Options{ExtraConfig: map[string]string{"4lw.commands.whitelist": "ruok,srvr,dump"}})
	ctx := context.Background()

	if reply, err := fourlw.Ask(ctx, s.Addr(), "ruok", nil); err != nil || reply != "imok" {
		t.Errorf("ruok = %q, %v; want imok", reply, err)
	}
	if mode, err := fourlw.Mode(ctx, s.Addr(), nil); err != nil || mode != "standalone" {
		t.Errorf("Mode = %q, %v; want standalone", mode, err)
	}
	if _, err := fourlw.Ask(ctx, s.Addr(), "wchp", nil); !errors.Is(err, fourlw.ErrNotWhitelisted) {
		t.Errorf("wchp off the whitelist: err %v, want ErrNotWhitelisted", err)
	}
	if _, err := fourlw.Ask(ctx, s.Addr(), "ruokay", nil); err == nil {
		t.Error("a six-letter word was sent")
	}
	full, err := fourlw.Ask(ctx, s.Addr(), "dump", nil)
	if err != nil {
		t.Fatalf("dump: %v", err)
	}
	head, err := fourlw.AskUntil(ctx, s.Addr(), "dump", nil, func(line string) bool {
		return strings.HasPrefix(line, "ephemeral nodes dump")
	})
	if err != nil || strings.Contains(head, "ephemeral nodes dump") || !strings.HasPrefix(full, head) || head == "" {
		t.Errorf("dump until the ephemeral nodes = %q, %v; want the part of %q before them", head, err, full)
	}
}

// A port that accepts and never answers is given up on at the context's
// deadline, not hung on; a closed port is refused at once.
func TestAskUnanswered(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := fourlw.Ask(ctx, ln.Addr().String(), "ruok", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("silent port: err %v, want context.DeadlineExceeded", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	if _, err := fourlw.Ask(context.Background(), addr, "ruok", nil); err == nil || !strings.Contains(err.Error(), "ruok to "+addr) {
		t.Errorf("closed port: err %v, want one naming ruok and %s", err, addr)
	}
}

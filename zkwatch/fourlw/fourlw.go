// Package fourlw sends ZooKeeper's four-letter words (ruok, srvr, mntr,
// wchp, ...) to a member's client port, plain or TLS, and turns the
// server's refusals into errors. zkwatch reads watch tables with it and
// zklocal asks its servers whether they are ready.
package fourlw

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"
)

// ErrNotWhitelisted: the word is off on this server (4lw.commands.whitelist).
var ErrNotWhitelisted = errors.New("four-letter word not in 4lw.commands.whitelist")

// ErrNotServing: an ensemble member without a quorum, or a server still
// loading its database.
var ErrNotServing = errors.New("server is not currently serving requests")

// DefaultTimeout bounds a call whose context has no deadline: a member that
// accepts and never answers must not hang the caller.
const DefaultTimeout = 5 * time.Second

// maxReply bounds what is read: wchp on a big server is large, but finite.
const maxReply = 64 << 20

// Ask sends cmd to the client port at addr and returns the reply. With a
// non-nil tlsCfg it speaks TLS: members answer four-letter words on their
// secureClientPort too.
func Ask(ctx context.Context, addr, cmd string, tlsCfg *tls.Config) (string, error) {
	return AskUntil(ctx, addr, cmd, tlsCfg, nil)
}

// AskUntil is Ask that stops reading at the first line for which until is
// true, and leaves that line and the rest out: dump goes on to list every
// ephemeral node, megabytes on a big server, which a caller may not need.
// A nil until reads the whole reply.
func AskUntil(ctx context.Context, addr, cmd string, tlsCfg *tls.Config, until func(line string) bool) (string, error) {
	if len(cmd) != 4 {
		return "", fmt.Errorf("four-letter word %q must be 4 bytes long", cmd)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	conn, err := dial(ctx, addr, tlsCfg)
	if err != nil {
		return "", fmt.Errorf("%s to %s: %w", cmd, addr, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if _, err := io.WriteString(conn, cmd); err != nil {
		return "", fmt.Errorf("%s to %s: write: %w", cmd, addr, err)
	}
	// The server closes the connection after the reply.
	reply, err := read(io.LimitReader(conn, maxReply), until)
	if err != nil {
		// The connection's deadline is the context's, and its timer may
		// fire a moment before the context's own: either way the
		// context's time is up.
		if ctx.Err() != nil {
			err = ctx.Err()
		} else if errors.Is(err, os.ErrDeadlineExceeded) {
			err = context.DeadlineExceeded
		}
		return "", fmt.Errorf("%s to %s: read: %w", cmd, addr, err)
	}
	return CheckReply(cmd, addr, reply)
}

func dial(ctx context.Context, addr string, tlsCfg *tls.Config) (net.Conn, error) {
	if tlsCfg != nil {
		d := tls.Dialer{Config: tlsCfg}
		return d.DialContext(ctx, "tcp", addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}

// read reads r to its end, or up to the line until stops at. A
// strings.Builder's String is the bytes read, not a copy of them.
func read(r io.Reader, until func(line string) bool) (string, error) {
	var sb strings.Builder
	if until == nil {
		_, err := io.Copy(&sb, r)
		return sb.String(), err
	}
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if until(line) {
			return sb.String(), nil
		}
		sb.WriteString(line)
		if err == io.EOF {
			return sb.String(), nil
		}
		if err != nil {
			return "", err
		}
	}
}

// CheckReply turns the server's refusals in a reply into errors.
func CheckReply(cmd, addr, reply string) (string, error) {
	switch {
	case reply == "":
		// Every real reply has at least a newline; nothing at all means
		// the connection was closed on us (a proxy, a dying server).
		return "", fmt.Errorf("%s to %s: empty reply", cmd, addr)
	case strings.Contains(reply, "is not executed because it is not in the whitelist"):
		return "", fmt.Errorf("%s to %s: %w", cmd, addr, ErrNotWhitelisted)
	case strings.HasPrefix(reply, "This ZooKeeper instance is not currently serving requests"):
		return "", fmt.Errorf("%s to %s: %w", cmd, addr, ErrNotServing)
	}
	return reply, nil
}

// Mode asks the server at addr for its mode with srvr: "standalone",
// "leader", "follower", "observer" or "read-only".
func Mode(ctx context.Context, addr string, tlsCfg *tls.Config) (string, error) {
	reply, err := Ask(ctx, addr, "srvr", tlsCfg)
	if err != nil {
		return "", err
	}
	sc := bufio.NewScanner(strings.NewReader(reply))
	for sc.Scan() {
		if m, ok := strings.CutPrefix(sc.Text(), "Mode: "); ok {
			return strings.TrimSpace(m), nil
		}
	}
	return "", fmt.Errorf("srvr reply from %s has no Mode line: %q", addr, reply)
}

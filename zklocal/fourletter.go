package zklocal

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// ErrNotServing is returned by FourLetter, together with the reply, when the
// server answers that it is not serving requests (still loading, or an
// ensemble member without a quorum).
var ErrNotServing = errors.New("zklocal: server is not currently serving requests")

const notServingReply = "This ZooKeeper instance is not currently serving requests"

// FourLetter sends a four letter word (ruok, srvr, mntr, wchp, ...) to the
// client port at addr and returns the server's reply. Without a deadline on
// ctx it gives up after 5 seconds.
func FourLetter(ctx context.Context, addr, cmd string) (string, error) {
	if len(cmd) != 4 {
		return "", fmt.Errorf("zklocal: four letter word %q must be 4 bytes long", cmd)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", fmt.Errorf("zklocal: %s to %s: %w", cmd, addr, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}

	if _, err := io.WriteString(conn, cmd); err != nil {
		return "", fmt.Errorf("zklocal: %s to %s: write: %w", cmd, addr, err)
	}
	// The server closes the connection after the reply.
	b, err := io.ReadAll(conn)
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return string(b), fmt.Errorf("zklocal: %s to %s: read: %w", cmd, addr, err)
	}
	reply := string(b)
	if strings.HasPrefix(reply, notServingReply) {
		return reply, ErrNotServing
	}
	return reply, nil
}

// Mode asks the server at addr for its mode using `srvr`: "standalone",
// "leader", "follower", "observer" or "read-only".
func Mode(ctx context.Context, addr string) (string, error) {
	reply, err := FourLetter(ctx, addr, "srvr")
	if err != nil {
		return "", err
	}
	sc := bufio.NewScanner(strings.NewReader(reply))
	for sc.Scan() {
		if m, ok := strings.CutPrefix(sc.Text(), "Mode: "); ok {
			return strings.TrimSpace(m), nil
		}
	}
	return "", fmt.Errorf("zklocal: srvr reply from %s has no Mode line: %q", addr, reply)
}

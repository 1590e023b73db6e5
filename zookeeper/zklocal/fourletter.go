package zklocal

import (
	"context"
	"fmt"

	"github.com/zklockviz/zklockviz/zkwatch/fourlw"
)

// ErrNotServing is returned (wrapped) by FourLetter when the server answers
// that it is not serving requests (still loading, or an ensemble member
// without a quorum).
var ErrNotServing = fourlw.ErrNotServing

// FourLetter sends a four letter word (ruok, srvr, mntr, wchp, ...) to the
// client port at addr and returns the server's reply. Without a deadline on
// ctx it gives up after 5 seconds.
func FourLetter(ctx context.Context, addr, cmd string) (string, error) {
	reply, err := fourlw.Ask(ctx, addr, cmd, nil)
	if err != nil {
		return "", fmt.Errorf("zklocal: %w", err)
	}
	return reply, nil
}

// Mode asks the server at addr for its mode using `srvr`: "standalone",
// "leader", "follower", "observer" or "read-only".
func Mode(ctx context.Context, addr string) (string, error) {
	mode, err := fourlw.Mode(ctx, addr, nil)
	if err != nil {
		return "", fmt.Errorf("zklocal: %w", err)
	}
	return mode, nil
}

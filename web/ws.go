package web

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/coder/websocket"
	"github.com/zklockviz/zklockviz/hub"
)

// compressionThreshold: frames smaller than this are sent uncompressed.
const compressionThreshold = 2048

var (
	errShutdown = errors.New("server shutting down")
	errRemoved  = errors.New("lock removed")
)

// handleWS streams one lock path's snapshots: the current state at once (or
// the first one, for a watched path not read yet), then every change as a
// delta or a whole snapshot. The socket is write-only. A viewer slower than
// the changes gets the newest state and skips the rest.
func (s *Server) handleWS(w http.ResponseWriter, r *http.Request) {
	p, err := s.lockPath(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	if _, ok := s.cfg.Hub.Latest(p); !ok && !s.watched(p) {
		writeError(w, r, s.log, errorf(ErrNotFound, "%s is not watched (POST /api/v1/watch to add it)", p))
		return
	}
	if s.isClosing() {
		writeError(w, r, s.log, errorf(ErrUnavailable, "server is shutting down"))
		return
	}
	hj := &hijackRecorder{ResponseWriter: w}
	c, err := websocket.Accept(hj, r, &websocket.AcceptOptions{
		OriginPatterns: s.cfg.AllowedOrigins,
		// Each message compressed on its own: a 10,000-node snapshot shrinks
		// several times, and no per-socket compression window is kept.
		CompressionMode: websocket.CompressionNoContextTakeover,
		// Compression runs per socket (the same frame is deflated once for
		// every viewer), so small frames, the common one-node deltas, go
		// plain: they cost more CPU to squeeze, on both ends, than the
		// few hundred bytes are worth.
		CompressionThreshold: compressionThreshold,
	})
	if err != nil {
		// Accept has answered already (403 for a foreign origin).
		s.log.Info("websocket refused", "path", p, "origin", r.Header.Get("Origin"), "err", err)
		return
	}
	if !s.track(c, hj.conn) {
		c.Close(websocket.StatusGoingAway, errShutdown.Error())
		return
	}
	defer s.untrack(c)

	log := s.log.With("path", p, "remote", r.RemoteAddr)
	log.Debug("viewer connected")
	ctx := c.CloseRead(r.Context())
	sub := s.cfg.Hub.Subscribe(p)
	defer sub.Close()
	frames := s.frames(p)
	defer s.releaseFrames(p, frames)

	err = s.stream(ctx, c, sub, frames)
	switch {
	case errors.Is(err, errShutdown):
		c.Close(websocket.StatusGoingAway, errShutdown.Error())
	case errors.Is(err, errRemoved):
		c.Close(websocket.StatusNormalClosure, errRemoved.Error())
	default:
		// The viewer left, or a write failed or timed out: nobody to say
		// goodbye to.
		c.CloseNow()
	}
	log.Debug("viewer gone", "reason", err)
}

// stream writes frames until the viewer goes, the path is removed or the
// server shuts down. A ping on a timer finds viewers that vanished without
// closing their TCP connection.
func (s *Server) stream(ctx context.Context, c *websocket.Conn, sub *hub.Sub, cache *frameCache) error {
	ping := time.NewTicker(s.cfg.PingInterval)
	defer ping.Stop()
	frames := sockFrames{cache: cache}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.shutdown:
			return errShutdown
		case <-sub.Done():
			return errRemoved
		case <-ping.C:
			if err := s.ping(ctx, c); err != nil {
				return err
			}
		case <-sub.C():
			snap, seq, ok := sub.NextSeq()
			if !ok {
				continue
			}
			b, _, err := frames.next(snap, seq)
			if err != nil {
				return err
			}
			wctx, cancel := context.WithTimeout(ctx, s.cfg.WriteTimeout)
			err = c.Write(wctx, websocket.MessageText, b)
			cancel()
			if err != nil {
				return err
			}
		}
	}
}

func (s *Server) ping(ctx context.Context, c *websocket.Conn) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.WriteTimeout)
	defer cancel()
	return c.Ping(ctx)
}

// hijackRecorder keeps the connection websocket.Accept hijacks, so that
// Shutdown can cut it off under a websocket stuck in a close handshake or
// a write.
type hijackRecorder struct {
	http.ResponseWriter
	conn net.Conn
}

func (h *hijackRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	h.conn = c
	return c, brw, err
}

func (h *hijackRecorder) Unwrap() http.ResponseWriter { return h.ResponseWriter }

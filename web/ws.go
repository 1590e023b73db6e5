package web

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/coder/websocket"
	"github.com/zklockviz/zklockviz/hub"
)

// compressionThreshold: frames smaller than this are sent uncompressed.
// Deflate runs once per socket, not once per frame (coder/websocket has no
// way to write an already compressed message), and BenchmarkChangeToFrame's
// CPU profile had it as the fan-out's main cost: a one-node delta of a
// 1,000-node queue with an alert naming 50 nodes is about 3 KB, and
// squeezing it to 700 bytes took about 0.1 ms of CPU per viewer, 10 ms per
// change for 100 viewers on 2 cores. Sent plain, 100 viewers still get 0.06×
// the bytes a naive broadcaster sends; whole snapshots of big queues, tens
// or hundreds of KB, are still compressed.
const compressionThreshold = 16 << 10

var (
	errShutdown = errors.New("server shutting down")
	errGone     = errors.New("source gone")
)

// A feed is what one socket writes: the hub's snapshots of a lock, or a
// classroom run's states. Ready is signalled when Frame may have something
// new (at most one signal is pending: a slow viewer skips to the newest);
// Gone is closed when the source ends, with the reason said in the close
// frame.
type feed interface {
	Ready() <-chan struct{}
	Gone() <-chan struct{}
	GoneReason() string
	// Frame is the message to write now; ok is false when there is none.
	Frame() (b []byte, ok bool, err error)
	Close()
}

// handleWS streams one lock path's snapshots: the current state at once (or
// the first one, for a watched path not read yet), then every change as a
// delta or a whole snapshot. With ?window=FROM:SIZE (and ?node=NAME) a long
// queue is sent as the part of it a lock page shows (window.go).
func (s *Server) handleWS(w http.ResponseWriter, r *http.Request) {
	svc, id, err := s.lockRef(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	// p is the lock's hub key: its path for ZooKeeper, service:name for
	// another service.
	p := id.Key()
	if _, ok := s.cfg.Hub.Latest(p); !ok && !watchedBy(svc, id.Name) {
		writeError(w, r, s.log, errorf(ErrNotFound, "%s is not watched (POST /api/v1/watch to add it)", id.Name))
		return
	}
	v, err := parseView(r.URL.Query())
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	s.serveSocket(w, r, s.log.With("service", id.Service, "path", id.Name, "remote", r.RemoteAddr), func() (feed, error) {
		frames := sockFrames{cache: s.frames(p), view: v}
		if v.parts {
			frames.parts, frames.epoch, frames.latest = s.socketParts(svc, id.Name), s.historyEpoch, s.cfg.Hub.Latest
		}
		return &hubFeed{sub: s.cfg.Hub.Subscribe(p), frames: frames, release: func(fc *frameCache) { s.releaseFrames(p, fc) }}, nil
	})
}

// serveSocket is every websocket's writer. It refuses a socket during
// shutdown, accepts it under the server's origin rule (the Host and token
// checks ran as middleware), opens its feed and writes the feed's frames
// until the viewer goes, the feed ends or the server shuts down. The socket
// is write-only: commands are plain POSTs. Each write has a deadline, so a
// viewer that stops reading is closed instead of holding a goroutine, and a
// ping on a timer finds viewers that vanished without closing their TCP
// connection.
func (s *Server) serveSocket(w http.ResponseWriter, r *http.Request, log *slog.Logger, open func() (feed, error)) {
	if s.isClosing() {
		writeError(w, r, s.log, errorf(ErrUnavailable, "server is shutting down"))
		return
	}
	f, err := open()
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	defer f.Close()
	hj := &hijackRecorder{ResponseWriter: w}
	c, err := websocket.Accept(hj, r, &websocket.AcceptOptions{
		OriginPatterns: s.cfg.AllowedOrigins,
		// Each message compressed on its own: a 10,000-node snapshot shrinks
		// several times, and no per-socket compression window is kept.
		CompressionMode: websocket.CompressionNoContextTakeover,
		// Compression runs per socket (the same frame is deflated once for
		// every viewer), so small frames, the common one-node deltas, go
		// plain: they cost more CPU to squeeze, on both ends, than the
		// KB or two they save is worth (compressionThreshold).
		CompressionThreshold: compressionThreshold,
	})
	if err != nil {
		// Accept has answered already (403 for a foreign origin).
		log.Info("websocket refused", "origin", r.Header.Get("Origin"), "err", err)
		return
	}
	if !s.track(c, hj.conn) {
		c.Close(websocket.StatusGoingAway, errShutdown.Error())
		return
	}
	defer s.untrack(c)

	log.Debug("viewer connected")
	ctx := c.CloseRead(r.Context())
	err = s.stream(ctx, c, f)
	switch {
	case errors.Is(err, errShutdown):
		c.Close(websocket.StatusGoingAway, errShutdown.Error())
	case errors.Is(err, errGone):
		c.Close(websocket.StatusNormalClosure, f.GoneReason())
	default:
		// The viewer left, or a write failed or timed out: nobody to say
		// goodbye to.
		c.CloseNow()
	}
	log.Debug("viewer gone", "reason", err)
}

// stream writes the feed's frames until the viewer goes, the feed ends or
// the server shuts down.
func (s *Server) stream(ctx context.Context, c *websocket.Conn, f feed) error {
	ping := time.NewTicker(s.cfg.PingInterval)
	defer ping.Stop()
	w := newTimedWriter(ctx, c, s.cfg.WriteTimeout)
	defer w.stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.shutdown:
			return errShutdown
		case <-f.Gone():
			return errGone
		case <-ping.C:
			if err := s.ping(ctx, c); err != nil {
				return err
			}
		case <-f.Ready():
			b, ok, err := f.Frame()
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			if err := w.write(b); err != nil {
				return err
			}
		}
	}
}

// timedWriter bounds each write to one socket by the write timeout with
// one context and one timer for the socket's life: a timer context per
// write, made and cancelled by each of a lock's sockets per change, was a
// seventh of the socket writers' CPU in BenchmarkChangeToFrame's profile.
type timedWriter struct {
	c       *websocket.Conn
	ctx     context.Context
	cancel  context.CancelCauseFunc
	timer   *time.Timer
	timeout time.Duration
}

var errWriteTimeout = errors.New("websocket write timed out")

func newTimedWriter(ctx context.Context, c *websocket.Conn, timeout time.Duration) *timedWriter {
	w := &timedWriter{c: c, timeout: timeout}
	w.ctx, w.cancel = context.WithCancelCause(ctx)
	w.timer = time.AfterFunc(timeout, func() { w.cancel(errWriteTimeout) })
	w.timer.Stop()
	return w
}

// write writes one text message; once a write has run out of time (and
// the websocket library closed the socket), every write fails.
func (w *timedWriter) write(b []byte) error {
	w.timer.Reset(w.timeout)
	err := w.c.Write(w.ctx, websocket.MessageText, b)
	if !w.timer.Stop() && err == nil {
		// The timeout fired as the write finished: the socket's context
		// is cancelled, so the socket is done for either way.
		err = context.Cause(w.ctx)
	}
	return err
}

func (w *timedWriter) stop() {
	w.timer.Stop()
	w.cancel(nil)
}

func (s *Server) ping(ctx context.Context, c *websocket.Conn) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.WriteTimeout)
	defer cancel()
	return c.Ping(ctx)
}

// hubFeed is a lock's snapshots from the hub, as shared frames.
type hubFeed struct {
	sub     *hub.Sub
	frames  sockFrames
	release func(*frameCache)
}

func (h *hubFeed) Ready() <-chan struct{} { return h.sub.C() }
func (h *hubFeed) Gone() <-chan struct{}  { return h.sub.Done() }
func (h *hubFeed) GoneReason() string     { return "lock removed" }

func (h *hubFeed) Frame() ([]byte, bool, error) {
	snap, seq, ok := h.sub.NextSeq()
	if !ok {
		return nil, false, nil
	}
	b, _, err := h.frames.next(snap, seq)
	return b, err == nil, err
}

func (h *hubFeed) Close() {
	h.sub.Close()
	h.release(h.frames.cache)
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

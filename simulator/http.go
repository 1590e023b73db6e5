package simulator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/coder/websocket"
	"github.com/go-chi/chi/v5"
)

// The simulator's HTTP API, mounted by the web server at /api/v1/sim.
// Every answer is JSON; errors are {"error": "..."} with 400 (bad input),
// 404 (no such run), 409 (does not fit the run's state) or 503 (ZooKeeper
// unreachable).
//
//	GET    /scenarios              built-in scenarios: [ScenarioInfo]
//	POST   /runs                   {scenario, strategy, clients, fencing} or {definition: Scenario, ...} → 201 State
//	GET    /runs                   [State] of every open run
//	GET    /runs/{id}              State
//	POST   /runs/{id}/step         one step forward (pauses playback) → State
//	POST   /runs/{id}/back         one step back (pauses playback) → State
//	POST   /runs/{id}/seek         {step} → State
//	POST   /runs/{id}/play         → State
//	POST   /runs/{id}/pause        → State
//	POST   /runs/{id}/speed        {speed} → State
//	POST   /runs/{id}/act          {client, action} → State; client may be
//	                               omitted for add-reader/add-writer/add
//	DELETE /runs/{id}              → 204
//	GET    /runs/{id}/ws           websocket: State as a text message now and
//	                               after every change (write-only; the
//	                               newest state wins when the viewer is slow)
//
// State is documented on the State type and in docs/simulator.md.

const (
	maxBody        = 1 << 20
	wsWriteTimeout = 10 * time.Second
	wsPingInterval = 30 * time.Second
)

// HandlerOptions tune NewHandlerWith.
type HandlerOptions struct {
	// OriginPatterns are extra origins allowed to open the websocket, as in
	// websocket.AcceptOptions; the page's own origin always is.
	OriginPatterns []string
}

// NewHandler returns the simulator's HTTP API.
func NewHandler(m *Manager) http.Handler { return NewHandlerWith(m, HandlerOptions{}) }

// NewHandlerWith is NewHandler with options.
func NewHandlerWith(m *Manager, opt HandlerOptions) http.Handler {
	h := &handler{m: m, opt: opt}
	r := chi.NewRouter()
	r.Get("/scenarios", h.scenarios)
	r.Post("/runs", h.start)
	r.Get("/runs", h.list)
	r.Route("/runs/{id}", func(r chi.Router) {
		r.Get("/", h.state)
		r.Delete("/", h.delete)
		r.Post("/step", h.command(func(run *Run, _ *http.Request) error { return run.Step() }))
		r.Post("/back", h.command(func(run *Run, _ *http.Request) error { return run.Back() }))
		r.Post("/play", h.command(func(run *Run, _ *http.Request) error { return run.Play() }))
		r.Post("/pause", h.command(func(run *Run, _ *http.Request) error { return run.Pause() }))
		r.Post("/seek", h.command(func(run *Run, req *http.Request) error {
			var body struct {
				Step *int `json:"step"`
			}
			if err := decode(req, &body); err != nil {
				return err
			}
			if body.Step == nil {
				return invalidf("missing step")
			}
			return run.Seek(*body.Step)
		}))
		r.Post("/speed", h.command(func(run *Run, req *http.Request) error {
			var body struct {
				Speed *float64 `json:"speed"`
			}
			if err := decode(req, &body); err != nil {
				return err
			}
			if body.Speed == nil {
				return invalidf("missing speed")
			}
			return run.SetSpeed(*body.Speed)
		}))
		r.Post("/act", h.command(func(run *Run, req *http.Request) error {
			var body struct {
				Client string `json:"client"`
				Action string `json:"action"`
			}
			if err := decode(req, &body); err != nil {
				return err
			}
			if body.Action == "" {
				return invalidf("missing action: want one of %s, %s, %s, %s, %s, %s, %s", ActAddReader, ActAddWriter, ActAdd, ActRelease, ActCrash, ActPause, ActWrite)
			}
			return run.Act(body.Client, body.Action)
		}))
		r.Get("/ws", h.ws)
	})
	r.NotFound(func(w http.ResponseWriter, req *http.Request) {
		writeError(w, notFoundf("no such simulator endpoint: %s %s", req.Method, req.URL.Path), m.log)
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, req *http.Request) {
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": fmt.Sprintf("%s not allowed on %s", req.Method, req.URL.Path)})
	})
	return r
}

type handler struct {
	m   *Manager
	opt HandlerOptions
}

func (h *handler) scenarios(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, h.m.Scenarios())
}

func (h *handler) start(w http.ResponseWriter, r *http.Request) {
	var spec Spec
	if err := decode(r, &spec); err != nil {
		writeError(w, err, h.m.log)
		return
	}
	run, err := h.m.Start(spec)
	if err != nil {
		writeError(w, err, h.m.log)
		return
	}
	writeJSON(w, http.StatusCreated, run.State())
}

func (h *handler) list(w http.ResponseWriter, r *http.Request) {
	out := []State{}
	for _, run := range h.m.Runs() {
		out = append(out, run.State())
	}
	writeJSON(w, http.StatusOK, out)
}

func (h *handler) run(w http.ResponseWriter, r *http.Request) (*Run, bool) {
	id := chi.URLParam(r, "id")
	run, ok := h.m.Get(id)
	if !ok {
		writeError(w, notFoundf("no run %q (it may have ended or been idle too long)", id), h.m.log)
		return nil, false
	}
	run.touch()
	return run, true
}

func (h *handler) state(w http.ResponseWriter, r *http.Request) {
	if run, ok := h.run(w, r); ok {
		writeJSON(w, http.StatusOK, run.State())
	}
}

func (h *handler) delete(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	if err := h.m.Delete(id); err != nil {
		writeError(w, err, h.m.log)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// command runs f on the run and answers with the new State.
func (h *handler) command(f func(*Run, *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		run, ok := h.run(w, r)
		if !ok {
			return
		}
		if err := f(run, r); err != nil {
			writeError(w, err, h.m.log)
			return
		}
		writeJSON(w, http.StatusOK, run.State())
	}
}

// ws streams the run's State: now, then after every change. Commands go
// over plain POSTs, so the socket is write-only.
func (h *handler) ws(w http.ResponseWriter, r *http.Request) {
	run, ok := h.run(w, r)
	if !ok {
		return
	}
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		OriginPatterns:  h.opt.OriginPatterns,
		CompressionMode: websocket.CompressionNoContextTakeover,
	})
	if err != nil {
		// Accept has answered (403 for a foreign origin).
		h.m.log.Info("simulator: websocket refused", "run", run.id, "origin", r.Header.Get("Origin"), "err", err)
		return
	}
	run.mu.Lock()
	run.watchers++
	run.mu.Unlock()
	defer func() {
		run.mu.Lock()
		run.watchers--
		run.lastUsed = time.Now()
		run.mu.Unlock()
	}()
	ctx := c.CloseRead(r.Context())
	err = h.stream(ctx, c, run)
	if errors.Is(err, errRunGone) {
		c.Close(websocket.StatusNormalClosure, "run ended")
		return
	}
	c.CloseNow()
}

var errRunGone = errors.New("run ended")

func (h *handler) stream(ctx context.Context, c *websocket.Conn, run *Run) error {
	ping := time.NewTicker(wsPingInterval)
	defer ping.Stop()
	for {
		changed := run.Changed()
		if run.usable() != nil {
			return errRunGone
		}
		b, err := json.Marshal(run.State())
		if err != nil {
			return err
		}
		wctx, cancel := context.WithTimeout(ctx, wsWriteTimeout)
		err = c.Write(wctx, websocket.MessageText, b)
		cancel()
		if err != nil {
			return err
		}
		for waiting := true; waiting; {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-changed:
				waiting = false
			case <-ping.C:
				pctx, cancel := context.WithTimeout(ctx, wsWriteTimeout)
				err := c.Ping(pctx)
				cancel()
				if err != nil {
					return err
				}
			}
		}
	}
}

func decode(r *http.Request, v any) error {
	if r.Body == nil {
		return invalidf("missing JSON body")
	}
	dec := json.NewDecoder(io.LimitReader(r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return invalidf("missing JSON body")
		}
		return invalidf("bad JSON body: %v", err)
	}
	return nil
}

// statusOf maps the error vocabulary to HTTP statuses.
func statusOf(err error) int {
	switch {
	case errors.Is(err, ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrConflict):
		return http.StatusConflict
	case errors.Is(err, ErrUnavailable):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

func writeError(w http.ResponseWriter, err error, log *slog.Logger) {
	code := statusOf(err)
	if code >= 500 {
		log.Warn("simulator: request failed", "err", err)
	}
	writeJSON(w, code, map[string]string{"error": err.Error()})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, `{"error":"encode response"}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}

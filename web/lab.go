package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/zklockviz/zklockviz/lab"
	"github.com/zklockviz/zklockviz/lab/word"
	"github.com/zklockviz/zklockviz/views"
)

// The Lab page (/lab) starts lock-lab runs (zklockviz lab) on this server
// and shows them live: a belief lane per client, the two-believer moments,
// the lost updates and refused writes, and at the end the run's time–space
// diagram and report. The web package runs no lab itself: cmd gives it a
// LabRunner (Config.Lab), which checks a request and returns the run.

// LabRequest is a run the Lab page asks for, in zklockviz lab's words.
type LabRequest struct {
	// Service is one service, a comma-separated list, or "all".
	Service  string `json:"service"`
	Clients  int    `json:"clients"`
	Nemesis  string `json:"nemesis"` // "pause,kill", "pause", "kill" or "none"
	Seed     uint64 `json:"seed"`
	Duration string `json:"duration"` // "20s"
	Fencing  bool   `json:"fencing"`
}

// LabHooks are what a lab run tells as it goes.
type LabHooks struct {
	// Started: a service's run has its server and starts (o says which,
	// and where); watch says how to read that server's own lane with
	// zklockviz while the run lasts.
	Started func(o lab.Outcome, watch string)
	// Event: one event of a service's run.
	Event func(service string, e lab.Event)
	// Word: zklockviz's own record of a service's run so far, as its
	// reader recorded the run's lock, and the mismatches with the
	// clients' word settled so far (lab/word.Live), every tick.
	Word func(service string, r word.LiveResult)
}

// LabRunner checks a request and returns its run, not started; an error
// names what is wrong with the request. The run returns each service's
// outcome once every process and server it started is stopped: at its
// duration's end or when ctx ends (Stop), the report of what ran.
type LabRunner func(LabRequest) (func(context.Context, LabHooks) []lab.Outcome, error)

// The Lab page's bounds: each run starts servers and processes, so a
// shared server runs few at once, none long, and keeps the last reports.
const (
	maxLabRunning  = 2
	maxLabKept     = 8
	maxLabClients  = 10
	maxLabDuration = 5 * time.Minute
	// labTick is how often a live view is sent while a run goes.
	labTick = 500 * time.Millisecond
)

// labRuns are the Lab page's runs, newest last.
type labRuns struct {
	s    *Server
	mu   sync.Mutex
	runs []*labRun
	next int
}

// labRun is one run of the Lab page: one or more services side by side.
type labRun struct {
	id       string
	started  time.Time
	duration time.Duration
	ctx      context.Context
	cancel   context.CancelFunc
	done     chan struct{}

	mu       sync.Mutex
	services []string // in the order they started
	info     map[string]lab.Outcome
	watch    map[string]string
	events   map[string][]lab.Event
	words    map[string]word.LiveResult
	final    []lab.Outcome
	ended    time.Time
}

// labRoutes maps the Lab page and its API (routes.go).
func (s *Server) labRoutes(r chi.Router) {
	l := &labRuns{s: s}
	if s.pages != nil {
		r.Get("/lab", l.page)
	}
	if s.cfg.Lab == nil {
		return
	}
	r.Route("/api/v1/lab/runs", func(r chi.Router) {
		r.Post("/", l.start)
		r.Route("/{id}", func(r chi.Router) {
			r.Post("/stop", l.stop)
			r.Get("/live", l.live)
			r.Get("/report.html", l.reportHTML)
			r.Get("/report.json", l.reportJSON)
		})
	})
}

func (l *labRuns) page(w http.ResponseWriter, r *http.Request) {
	p := l.s.pages
	// The services whose classroom runs throwaway servers, in the
	// registry's order and their own names: the lab starts the same.
	var services []views.Choice
	for _, svc := range l.s.cfg.Services.All() {
		if svc.Classroom != nil {
			services = append(services, views.Choice{Value: svc.Name, Text: svc.Title})
		}
	}
	p.render(w, r, http.StatusOK, views.LabPage(p.page("Lab", "lab"), l.s.cfg.Lab != nil, services, maxLabClients, maxLabDuration.String()))
}

// start answers POST /api/v1/lab/runs: the run's id and its owner
// secret (RunOwnerHeader), which Stop wants back.
func (l *labRuns) start(w http.ResponseWriter, r *http.Request) {
	var req LabRequest
	if err := decodeBody(w, r, &req); err != nil {
		writeError(w, r, l.s.log, err)
		return
	}
	d, err := time.ParseDuration(req.Duration)
	switch {
	case err != nil:
		err = errorf(ErrInvalid, "duration %q: want a duration such as 20s", req.Duration)
	case d > maxLabDuration:
		err = errorf(ErrInvalid, "duration %v: the Lab page runs at most %v", d, maxLabDuration)
	case req.Clients > maxLabClients:
		err = errorf(ErrInvalid, "clients %d: the Lab page runs at most %d per service", req.Clients, maxLabClients)
	}
	if err != nil {
		writeError(w, r, l.s.log, err)
		return
	}
	run, err := l.s.cfg.Lab(req)
	if err != nil {
		writeError(w, r, l.s.log, errorf(ErrInvalid, "%v", err))
		return
	}
	lr, ok := l.add(d)
	if !ok {
		writeJSON(w, http.StatusTooManyRequests, errorBody{Error: fmt.Sprintf("%d lab runs are going on this server, the most it runs at once: stop one, or wait for one to end", maxLabRunning)})
		return
	}
	go lr.run(run)
	secret, err := l.s.owners.add(ownerKey("lab", lr.id), false)
	if err != nil {
		// A run whose starter was not answered would go on with nobody
		// to stop it.
		lr.cancel()
		writeError(w, r, l.s.log, err)
		return
	}
	w.Header().Set(RunOwnerHeader, secret)
	writeJSON(w, http.StatusCreated, struct {
		ID    string `json:"id"`
		Owner string `json:"owner"`
	}{lr.id, secret})
}

// add makes a run unless maxLabRunning go already, forgetting the oldest
// finished ones beyond maxLabKept. Its context ends with the server's.
func (l *labRuns) add(d time.Duration) (*labRun, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	going := 0
	for _, r := range l.runs {
		if !r.finished() {
			going++
		}
	}
	if going >= maxLabRunning {
		return nil, false
	}
	for len(l.runs) >= maxLabKept+going {
		i := slices.IndexFunc(l.runs, (*labRun).finished)
		if i < 0 {
			break
		}
		// Its report goes, and its owner secret with it.
		l.s.owners.mu.Lock()
		delete(l.s.owners.m, ownerKey("lab", l.runs[i].id))
		l.s.owners.mu.Unlock()
		l.runs = slices.Delete(l.runs, i, i+1)
	}
	l.next++
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-l.s.shutdown:
			cancel()
		case <-ctx.Done():
		}
	}()
	lr := &labRun{id: strconv.Itoa(l.next), started: time.Now(), duration: d, ctx: ctx, cancel: cancel, done: make(chan struct{}),
		info: map[string]lab.Outcome{}, watch: map[string]string{}, events: map[string][]lab.Event{},
		words: map[string]word.LiveResult{}}
	l.runs = append(l.runs, lr)
	return lr, true
}

func (lr *labRun) finished() bool {
	select {
	case <-lr.done:
		return true
	default:
		return false
	}
}

// run runs the lab and keeps what it tells.
func (lr *labRun) run(run func(context.Context, LabHooks) []lab.Outcome) {
	defer close(lr.done)
	defer lr.cancel()
	outs := run(lr.ctx, LabHooks{
		Started: func(o lab.Outcome, watch string) {
			lr.mu.Lock()
			defer lr.mu.Unlock()
			if !slices.Contains(lr.services, o.Service) {
				lr.services = append(lr.services, o.Service)
			}
			lr.info[o.Service], lr.watch[o.Service] = o, watch
		},
		Event: func(service string, e lab.Event) {
			lr.mu.Lock()
			defer lr.mu.Unlock()
			lr.events[service] = append(lr.events[service], e)
		},
		Word: func(service string, r word.LiveResult) {
			lr.mu.Lock()
			defer lr.mu.Unlock()
			lr.words[service] = r
		},
	})
	lr.mu.Lock()
	lr.final, lr.ended = outs, time.Now()
	lr.mu.Unlock()
}

// get is the run the URL's {id} names.
func (l *labRuns) get(r *http.Request) (*labRun, error) {
	id := chi.URLParam(r, "id")
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, lr := range l.runs {
		if lr.id == id {
			return lr, nil
		}
	}
	return nil, errorf(ErrNotFound, "no lab run %q on this server (its report is kept for the last %d runs)", id, maxLabKept)
}

// stop answers POST /api/v1/lab/runs/{id}/stop: the run stops every
// process and server it started, and its report is of what ran.
func (l *labRuns) stop(w http.ResponseWriter, r *http.Request) {
	lr, err := l.get(r)
	if err != nil {
		writeError(w, r, l.s.log, err)
		return
	}
	if !l.s.mayDelete(ownerKey("lab", lr.id), r) {
		writeError(w, r, l.s.log, errorf(ErrForbidden, "lab run %s was started by another page: only its starter may stop it", lr.id))
		return
	}
	lr.cancel()
	w.WriteHeader(http.StatusNoContent)
}

// live answers GET /api/v1/lab/runs/{id}/live: server-sent events, each
// the run's live view rendered (views.LabLive), every labTick while it
// goes, then the last one, with the diagrams and the report's links, as
// event "done".
func (l *labRuns) live(w http.ResponseWriter, r *http.Request) {
	lr, err := l.get(r)
	if err != nil {
		writeError(w, r, l.s.log, err)
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, r, l.s.log, fmt.Errorf("lab live view: the response cannot stream"))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	tick := time.NewTicker(labTick)
	defer tick.Stop()
	for {
		done := lr.finished()
		var buf bytes.Buffer
		if err := views.LabLive(lr.view(time.Now())).Render(r.Context(), &buf); err != nil {
			l.s.log.Error("render the lab's live view", "run", lr.id, "err", err)
			return
		}
		if done {
			fmt.Fprint(w, "event: done\n")
		}
		for line := range strings.Lines(buf.String()) {
			fmt.Fprintf(w, "data: %s\n", strings.TrimRight(line, "\n"))
		}
		fmt.Fprint(w, "\n")
		flusher.Flush()
		if done {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-l.s.shutdown:
			return
		case <-lr.done:
		case <-tick.C:
		}
	}
}

// finalOf is a finished run's outcomes; ErrConflict while it goes.
func (l *labRuns) finalOf(r *http.Request) (*labRun, []lab.Outcome, error) {
	lr, err := l.get(r)
	if err != nil {
		return nil, nil, err
	}
	if !lr.finished() {
		return nil, nil, errorf(ErrConflict, "lab run %s is still going: its report is written when it ends", lr.id)
	}
	lr.mu.Lock()
	defer lr.mu.Unlock()
	return lr, lr.final, nil
}

// reportHTML answers the run's report as one self-contained HTML file.
func (l *labRuns) reportHTML(w http.ResponseWriter, r *http.Request) {
	lr, outs, err := l.finalOf(r)
	if err != nil {
		writeError(w, r, l.s.log, err)
		return
	}
	var buf bytes.Buffer
	if err := WriteLabReport(&buf, outs); err != nil {
		writeError(w, r, l.s.log, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Disposition", `inline; filename="zklockviz-lab-`+lr.id+`.html"`)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.Write(buf.Bytes())
}

// reportJSON answers the run's report as zklockviz lab --json writes it
// for several services: {"runs": [...]}.
func (l *labRuns) reportJSON(w http.ResponseWriter, r *http.Request) {
	_, outs, err := l.finalOf(r)
	if err != nil {
		writeError(w, r, l.s.log, err)
		return
	}
	b, err := json.Marshal(struct {
		Runs []lab.Outcome `json:"runs"`
	}{outs})
	if err != nil {
		writeError(w, r, l.s.log, fmt.Errorf("encode a lab report: %w", err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

package web

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/zklockviz/zklockviz/lockservice"
)

// The classroom's HTTP API, at /api/v1/sim (routes.go), over the
// classroom of the service ?service= names (ZooKeeper's simulator by
// default). Every answer is JSON; errors are {"error": "..."} with the
// status statusOf gives their kind. ZooKeeper's run State is documented on
// simulator.State and in docs/simulator.md.

func (s *Server) simScenarios(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("service") == everyService {
		list, err := s.everyScenario()
		if err != nil {
			writeError(w, r, s.log, err)
			return
		}
		writeJSON(w, http.StatusOK, list)
		return
	}
	cls, err := s.classroomOf(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, cls.Scenarios())
}

// everyService in ?service= of GET /api/v1/sim/scenarios lists every
// classroom's scenarios in one list (the classroom page's), in the
// registry's order; each names its service (ZooKeeper's leave it out).
const everyService = "*"

func (s *Server) everyScenario() ([]json.RawMessage, error) {
	out := []json.RawMessage{}
	for _, svc := range s.cfg.Services.All() {
		if svc.Classroom == nil {
			continue
		}
		b, err := json.Marshal(svc.Classroom.Scenarios())
		if err != nil {
			return nil, fmt.Errorf("%s's scenarios: %w", svc.Name, err)
		}
		var list []json.RawMessage
		if err := json.Unmarshal(b, &list); err != nil {
			return nil, fmt.Errorf("%s's scenarios are not a list: %w", svc.Name, err)
		}
		out = append(out, list...)
	}
	return out, nil
}

func (s *Server) simStart(w http.ResponseWriter, r *http.Request) {
	svc, err := s.simService(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	open, err := takeOpen(w, r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	run, err := svc.Classroom.Start(func(spec any) error { return decodeBody(w, r, spec) })
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	var secret string
	s.settleRuns(svc, func() { secret, err = s.owners.add(ownerKey(svc.Name, run.ID()), open) })
	var b []byte
	if err == nil {
		// The answer carries the secret that lets its starter move and
		// delete it.
		b, err = withFields(s.named(run.State()), runControl{Owner: secret, MayControl: true, Open: open})
	}
	if err != nil {
		// A run whose starter was not answered would hold its sessions
		// with nobody to delete it.
		if derr := svc.Classroom.Delete(run.ID()); derr != nil {
			s.log.Warn("classroom: delete a run not answered", "run", run.ID(), "err", derr)
		}
		writeError(w, r, s.log, err)
		return
	}
	w.Header().Set(RunOwnerHeader, secret)
	writeJSON(w, http.StatusCreated, json.RawMessage(b))
}

// runControl is what a run's answers say of who may move it: "owner" is
// the secret a start answers; "mayControl" whether this request may step,
// act on or delete... the run ("controlWhy" says why not); "open" whether
// it was started open to all.
type runControl struct {
	Owner      string `json:"owner,omitempty"`
	MayControl bool   `json:"mayControl"`
	ControlWhy string `json:"controlWhy,omitempty"`
	Open       bool   `json:"open"`
}

// controlOf is what r may do with the run key names.
func (s *Server) controlOf(key string, r *http.Request) runControl {
	c := runControl{MayControl: s.mayControl(key, r), Open: s.owners.isOpen(key)}
	if !c.MayControl {
		c.ControlWhy = "only the one who started this run, or whoever holds the server's token, may move it: you watch it and answer its questions"
	}
	return c
}

// takeOpen takes "open": true (a run anyone may move, for a lab where the
// students drive) out of a start's body, and leaves the rest of the body
// for the classroom's own spec. A body that is not a JSON object is left
// as it is, for the spec's decoder to say what is wrong with it.
func takeOpen(w http.ResponseWriter, r *http.Request) (bool, error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return false, errorf(ErrTooLarge, "body larger than %d bytes", maxBody)
	case err != nil:
		return false, errorf(ErrInvalid, "read the body: %v", err)
	}
	var fields map[string]json.RawMessage
	open := false
	if json.Unmarshal(b, &fields) == nil && fields["open"] != nil {
		if err := json.Unmarshal(fields["open"], &open); err != nil {
			return false, errorf(ErrInvalid, "bad JSON body: open: want true or false, got %s", fields["open"])
		}
		delete(fields, "open")
		if b, err = json.Marshal(fields); err != nil {
			return false, fmt.Errorf("re-encode a start's body: %w", err)
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	return open, nil
}

// withFields is v's JSON object with extra's fields added.
func withFields(v, extra any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode a run's state: %w", err)
	}
	x, err := json.Marshal(extra)
	if err != nil {
		return nil, fmt.Errorf("encode a run's state: %w", err)
	}
	return mergeObjects(b, x), nil
}

// simService is the service ?service= names, which has a classroom.
func (s *Server) simService(r *http.Request) (lockservice.Service, error) {
	svc, err := serviceOf(s.cfg.Services, r)
	if err != nil {
		return svc, err
	}
	if svc.Classroom == nil {
		return svc, errorf(ErrNotFound, "%s has no classroom on this server", svc.Title)
	}
	return svc, nil
}

// simList answers every open run's State, oldest first, each saying
// whether this request may delete it ("deletable": it sends the run's
// owner secret, or holds the server's token), so a page offers to delete
// only those.
func (s *Server) simList(w http.ResponseWriter, r *http.Request) {
	svc, err := s.simService(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	runs := s.settleRuns(svc, nil)
	out := []json.RawMessage{}
	for _, run := range runs {
		key := ownerKey(svc.Name, run.ID())
		b, err := withFields(run.State(), struct {
			Deletable bool `json:"deletable"`
			runControl
		}{s.mayDelete(key, r), s.controlOf(key, r)})
		if err != nil {
			writeError(w, r, s.log, fmt.Errorf("encode run %s: %w", run.ID(), err))
			return
		}
		out = append(out, b)
	}
	writeJSON(w, http.StatusOK, out)
}

// simRun finds the run the URL names.
func (s *Server) simRun(r *http.Request) (lockservice.Run, error) {
	cls, err := s.classroomOf(r)
	if err != nil {
		return nil, err
	}
	id := chi.URLParam(r, "id")
	run, ok := cls.Get(id)
	if !ok {
		return nil, errorf(ErrNotFound, "no run %q (it may have ended, been deleted, or closed after its last viewer left)", id)
	}
	return run, nil
}

// simRunKeyed finds the run the URL names, and its ownerKey.
func (s *Server) simRunKeyed(r *http.Request) (lockservice.Run, string, error) {
	svc, err := s.simService(r)
	if err != nil {
		return nil, "", err
	}
	run, err := s.simRun(r)
	if err != nil {
		return nil, "", err
	}
	return run, ownerKey(svc.Name, run.ID()), nil
}

// simState answers the run's State, saying whether the request may move
// it (runControl): a page that may not hides the controls and says why.
// With ?predict=VIEWER (&hold=1) it is the State that viewer's socket
// shows (classroom_predict.go): a predicting page that opens is not sent
// a step it has not answered.
func (s *Server) simState(w http.ResponseWriter, r *http.Request) {
	run, key, err := s.simRunKeyed(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	pv, err := parsePredictView(r.URL.Query())
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	b, err := s.predictedState(key, run, pv, s.controlOf(key, r))
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, json.RawMessage(b))
}

// simDelete ends a run, for the one who started it or whoever holds the
// server's token (runowner.go); anyone else is refused with 403.
func (s *Server) simDelete(w http.ResponseWriter, r *http.Request) {
	svc, err := s.simService(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	id := chi.URLParam(r, "id")
	if _, ok := svc.Classroom.Get(id); ok && !s.mayDelete(ownerKey(svc.Name, id), r) {
		writeError(w, r, s.log, errorf(ErrForbidden,
			"run %s was started by someone else: only the one who started it (with the %s secret its start answered) or whoever holds the server's token may delete it; it closes by itself once its viewers leave",
			id, RunOwnerHeader))
		return
	}
	if err := svc.Classroom.Delete(id); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	s.settleRuns(svc, nil)
	w.WriteHeader(http.StatusNoContent)
}

// simTimeSpace answers the run's recorded history as a time–space diagram,
// an SVG file to download (lockservice.Drawer: the service draws it).
func (s *Server) simTimeSpace(w http.ResponseWriter, r *http.Request) {
	run, err := s.simRun(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	d, ok := run.(lockservice.Drawer)
	if !ok {
		writeError(w, r, s.log, errorf(ErrNotFound, "run %s draws no time–space diagram", run.ID()))
		return
	}
	var buf bytes.Buffer
	if err := d.TimeSpaceSVG(&buf); err != nil {
		writeError(w, r, s.log, fmt.Errorf("draw run %s: %w", run.ID(), err))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "image/svg+xml")
	h.Set("Content-Disposition", `attachment; filename=`+strconv.Quote("zklockviz-run-"+run.ID()+"-timespace.svg"))
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.Write(buf.Bytes())
}

// commandWords are how a refusal names each command (the URL's last part).
var commandWords = map[string]string{
	"step": "step it", "back": "step it back", "seek": "seek in it", "play": "play it", "pause": "pause it",
	"speed": "change its speed", "act": "act on its clients", "script": "take it back to its script",
}

// simCommand runs do on the run the URL names and answers with its new
// State. Only who may move the run may command it (mayControl).
func (s *Server) simCommand(do func(lockservice.Run, http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		run, key, err := s.simRunKeyed(r)
		if err == nil && !s.mayControl(key, r) {
			err = notYours(run.ID(), cmp.Or(commandWords[path.Base(r.URL.Path)], "move it"))
		}
		if err == nil {
			err = do(run, w, r)
		}
		if err != nil {
			writeError(w, r, s.log, err)
			return
		}
		writeJSON(w, http.StatusOK, s.named(run.State()))
	}
}

// The commands without a body.
var (
	simStep  = func(run lockservice.Run, _ http.ResponseWriter, _ *http.Request) error { return run.Step() }
	simBack  = func(run lockservice.Run, _ http.ResponseWriter, _ *http.Request) error { return run.Back() }
	simPlay  = func(run lockservice.Run, _ http.ResponseWriter, _ *http.Request) error { return run.Play() }
	simPause = func(run lockservice.Run, _ http.ResponseWriter, _ *http.Request) error { return run.Pause() }
)

// scripted is a run that can leave a what-if branch for its scenario's
// script (simulator.Run): the classroom's runs all are, but Run does not
// promise it.
type scripted interface{ ToScript() error }

// simToScript returns a run from a what-if branch to its script, at the
// step the branch left it.
func simToScript(run lockservice.Run, _ http.ResponseWriter, _ *http.Request) error {
	sr, ok := run.(scripted)
	if !ok {
		return errorf(ErrConflict, "run %s has no script to return to", run.ID())
	}
	return sr.ToScript()
}

func simSeek(run lockservice.Run, w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Step *int `json:"step"`
	}
	if err := decodeBody(w, r, &body); err != nil {
		return err
	}
	if body.Step == nil {
		return errorf(ErrInvalid, `missing step: want {"step": n}, n from 0 to the planned steps`)
	}
	return run.Seek(*body.Step)
}

func simSpeed(run lockservice.Run, w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Speed *float64 `json:"speed"`
	}
	if err := decodeBody(w, r, &body); err != nil {
		return err
	}
	if body.Speed == nil {
		return errorf(ErrInvalid, `missing speed: want {"speed": x}, 1 being a step every 1.2s`)
	}
	return run.SetSpeed(*body.Speed)
}

// simAct acts on a run's client; a body without an action is told its
// classroom's verbs.
func (s *Server) simAct(run lockservice.Run, w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Client string `json:"client"`
		Action string `json:"action"`
	}
	if err := decodeBody(w, r, &body); err != nil {
		return err
	}
	if body.Action == "" {
		cls, err := s.classroomOf(r)
		if err != nil {
			return err
		}
		return errorf(ErrInvalid, "missing action: want one of %s", strings.Join(cls.Actions(), ", "))
	}
	return run.Act(body.Client, body.Action)
}

// handleSimWS streams a run's State: now, then after every change. It is
// the same socket as a lock's (serveSocket): the same Host, Origin and
// token checks, tracked and closed at shutdown.
func (s *Server) handleSimWS(w http.ResponseWriter, r *http.Request) {
	run, key, err := s.simRunKeyed(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	v, err := parseRunView(r.URL.Query())
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	if v != nil {
		v.services = s.cfg.Services
	}
	pv, err := parsePredictView(r.URL.Query())
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	s.serveSocket(w, r, s.log.With("run", run.ID(), "remote", r.RemoteAddr), func() (feed, error) {
		sub, err := run.Subscribe()
		if err != nil {
			return nil, err
		}
		if pv != nil {
			return newPredictFeed(s, key, run, runFeed{sub, v}, pv), nil
		}
		return runFeed{sub, v}, nil
	})
}

// runFeed is a run's states, each a whole State: a run's state is small
// next to a lock's snapshot stream, and the browser keeps no base to patch.
// With a view, each carries the panel's parts of it (runframe.go).
type runFeed struct {
	lockservice.Subscription
	view *runView
}

func (f runFeed) Ready() <-chan struct{} { return f.C() }
func (f runFeed) Gone() <-chan struct{}  { return f.Done() }
func (f runFeed) GoneReason() string     { return "run ended" }

func (f runFeed) Frame() ([]byte, bool, error) {
	b, err := f.encode(f.State(), time.Now())
	return b, err == nil, err
}

// encode is st's frame: its JSON, with the view's parts when it has one.
func (f runFeed) encode(st any, now time.Time) ([]byte, error) {
	b, err := json.Marshal(drawn(st))
	if err != nil {
		return nil, fmt.Errorf("encode a run's state: %w", err)
	}
	if f.view != nil {
		if b, err = withRunParts(b, st, f.view, now); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// scenarioEditor is a classroom that serves the page's scenario editor
// (simulator's classroom does): a built-in's definition to start from, and
// a scenario file's check, the command line's own.
type scenarioEditor interface {
	CheckScenario(b []byte) (any, error)
	Definition(name string) (any, bool)
}

func (s *Server) simEditor(r *http.Request) (scenarioEditor, error) {
	cls, err := s.classroomOf(r)
	if err != nil {
		return nil, err
	}
	ed, ok := cls.(scenarioEditor)
	if !ok {
		return nil, errorf(ErrNotFound, "this classroom has no scenario editor")
	}
	return ed, nil
}

// simDefinition answers a built-in scenario's definition: the JSON of its
// file, which the editor shows and a lab's student changes.
func (s *Server) simDefinition(w http.ResponseWriter, r *http.Request) {
	ed, err := s.simEditor(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	name := chi.URLParam(r, "name")
	sc, ok := ed.Definition(name)
	if !ok {
		writeError(w, r, s.log, errorf(ErrNotFound, "no built-in scenario %q here (GET /api/v1/sim/scenarios lists them)", name))
		return
	}
	writeJSON(w, http.StatusOK, sc)
}

// simCheck checks a scenario file sent as the body, as `zklockviz sim
// --scenario FILE` checks one: 200 with {scenario, definition} (how the
// classroom lists it, and the definition to start with POST /runs), or 400
// saying what is wrong, in terms that give no run's outcome away.
func (s *Server) simCheck(w http.ResponseWriter, r *http.Request) {
	ed, err := s.simEditor(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeError(w, r, s.log, errorf(ErrTooLarge, "scenario larger than %d bytes", maxBody))
		return
	case err != nil:
		writeError(w, r, s.log, errorf(ErrInvalid, "read the scenario: %v", err))
		return
	}
	checked, err := ed.CheckScenario(b)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, checked)
}

package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zklockviz/zklockviz/lockservice"
	"github.com/zklockviz/zklockviz/views"
)

// Predict-then-reveal. Before a step is shown, a student is asked what it
// will do: who holds the lock after it, who it wakes, whether its write
// lands; then the step is shown with the answer marked. The questions a
// step asks are decided here from the step's action (never from its
// outcome: which questions are asked must not hint at the answer), and the
// right answers are read from the run's state once the step ran. A
// predicting viewer's socket (?predict=VIEWER&hold=1) is held at the last
// step the viewer answered: while the run is ahead, its frames are that
// step's state (Run.StateAt) and the next step's questions, so nothing the
// page has before it answers holds the answer. The answers of a class
// sharing a server are counted per run and step, in memory, one per
// browser (the page's random id), and shown once the step is revealed.

// The questions, by id.
const (
	askHolds = "holds" // who holds the lock after the step (a set of clients)
	askWoken = "woken" // whom the step wakes (a set of clients)
	askLands = "lands" // whether the step's write lands (yes or no)
)

// releasing are the actions that can hand a lock over, after which it is
// fair to ask whom they woke (Redis's polling waiters are woken by none:
// that is the answer, not a reason to skip the question).
var releasing = map[string]bool{
	"release": true, "crash": true, "expire": true, "pause": true, "clock-jump": true,
	"leave": true, "stop": true, "restart": true,
}

// nobody is the answer of an empty set.
const nobody = "nobody"

// question is one thing a step asks.
type question struct {
	ID   string `json:"id"`
	Text string `json:"text"`
	// Choices are what may be picked; Many says whether a set of them is
	// the answer (none picked: nobody).
	Choices []string `json:"choices"`
	Many    bool     `json:"many,omitempty"`
}

// factAction is a step's action as a state's JSON says it.
type factAction struct {
	Client string `json:"client"`
	Action string `json:"action"`
}

// frameFacts is what the server reads of a run's state: what its card
// shows (views.RunState: the step, the clients and the events), the
// step's action and the next.
type frameFacts struct {
	views.RunState
	Action *factAction `json:"action"`
	Next   *factAction `json:"next"`
}

func factsOf(state any) (frameFacts, error) {
	var f frameFacts
	b, err := json.Marshal(state)
	if err != nil {
		return f, fmt.Errorf("encode a run's state: %w", err)
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return f, fmt.Errorf("read a run's state: %w", err)
	}
	return f, nil
}

// asksOf are the ids of the questions action a asks.
func asksOf(a factAction) []string {
	// A write to the protected resource (write, checked-write), not an
	// added writer (add-writer).
	if a.Action == "write" || strings.HasSuffix(a.Action, "-write") {
		return []string{askLands}
	}
	if releasing[a.Action] {
		return []string{askHolds, askWoken}
	}
	return []string{askHolds}
}

// questionsAfter are the questions of the step after before's: its
// action's, with before's clients (and the one the step adds) to choose.
func questionsAfter(before frameFacts) []question {
	if before.Next == nil {
		return nil
	}
	var names []string
	for _, c := range before.Clients {
		names = append(names, c.Name)
	}
	if c := before.Next.Client; c != "" && c != "*" && !slices.Contains(names, c) {
		names = append(names, c)
	}
	var out []question
	for _, id := range asksOf(*before.Next) {
		q := question{ID: id, Text: questionTexts[id], Choices: names, Many: true}
		if id == askLands {
			q.Choices, q.Many = []string{"yes", "no"}, false
		}
		out = append(out, q)
	}
	return out
}

// questionTexts are the questions as the page asks them.
var questionTexts = map[string]string{
	askHolds: "Who holds the lock after this step?",
	askWoken: "Whom does this step wake?",
	askLands: "Does the write land?",
}

// rightAnswers are the answers of the step after's state shows, to the
// questions its action asks; a question the step gave no answer to (a
// write step that wrote nothing) is left out.
func rightAnswers(after frameFacts) map[string]string {
	out := map[string]string{}
	if after.Action == nil {
		return out
	}
	for _, id := range asksOf(*after.Action) {
		switch id {
		case askHolds:
			var holds []string
			for _, c := range after.Clients {
				if c.State == "holding" {
					holds = append(holds, c.Name)
				}
			}
			out[id] = canonical(holds)
		case askWoken:
			out[id] = canonical(after.woken())
		case askLands:
			for _, e := range after.Events {
				switch {
				case e.Step != after.Step:
				case e.Kind == "fenced":
					out[id] = "no"
				case e.Kind == "write" && out[id] == "":
					out[id] = "yes"
				}
			}
			if out[id] == "" {
				delete(out, id)
			}
		}
	}
	return out
}

// woken are the clients the step shown woke: each a notification reached,
// and those an event says it woke.
func (f frameFacts) woken() []string {
	var out []string
	for _, e := range f.Events {
		if e.Step != f.Step {
			continue
		}
		if e.Kind == "notify" {
			out = append(out, e.Client)
		}
		out = append(out, e.Notified...)
	}
	return out
}

// canonical is a set of names as one answer: sorted, deduplicated, joined;
// "nobody" when empty.
func canonical(names []string) string {
	names = slices.Compact(slices.Sorted(slices.Values(names)))
	names = slices.DeleteFunc(names, func(n string) bool { return n == "" })
	if len(names) == 0 {
		return nobody
	}
	return strings.Join(names, ", ")
}

// stepKey names a step of a run among its branches: a what-if may plan
// another action at the same step number.
func stepKey(step int, a factAction) string {
	return fmt.Sprintf("%d %s %s", step, a.Client, a.Action)
}

// Bounds of what the book keeps, so a crowd cannot fill the memory.
const (
	maxViewersPerRun = 2000
	maxStepsPerRun   = 500
)

// answerBook is every run's answers, kept in memory.
type answerBook struct {
	mu   sync.Mutex
	runs map[string]*runAnswers // ownerKey →
}

// runAnswers are one run's answers and where each predicting viewer is.
type runAnswers struct {
	// steps: stepKey → viewer → question → answer.
	steps map[string]map[string]map[string]string
	order []string // stepKeys, oldest first, to drop past maxStepsPerRun
	// revealed is the last step each held viewer was shown.
	revealed map[string]int
	// changed closes when an answer arrives (then a new one is made).
	changed chan struct{}
	// given counts each viewer's answers: a held viewer's socket wakes
	// for its own answer only, not for each of a class's.
	given map[string]int
}

// run is key's answers, made when missing. b.mu must be held.
func (b *answerBook) run(key string) *runAnswers {
	if b.runs == nil {
		b.runs = map[string]*runAnswers{}
	}
	ra, ok := b.runs[key]
	if !ok {
		ra = &runAnswers{steps: map[string]map[string]map[string]string{}, revealed: map[string]int{}, changed: make(chan struct{}), given: map[string]int{}}
		b.runs[key] = ra
	}
	return ra
}

// watch is a channel closed at the run's next answer, and how many
// answers viewer has given so far.
func (b *answerBook) watch(key, viewer string) (<-chan struct{}, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ra := b.run(key)
	return ra.changed, ra.given[viewer]
}

// revealedTo is the last step shown to viewer, or at when the book has no
// place for it yet (it joins at the run's step); a place is kept for it
// while the run has room.
func (b *answerBook) revealedTo(key, viewer string, at int) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	ra := b.run(key)
	if k, ok := ra.revealed[viewer]; ok {
		return k
	}
	if len(ra.revealed) < maxViewersPerRun {
		ra.revealed[viewer] = at
	}
	return at
}

// seen is the last step viewer was shown: its place when it is held, else
// the run's step, at.
func (b *answerBook) seen(key, viewer string, at int) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if k, ok := b.run(key).revealed[viewer]; ok {
		return k
	}
	return at
}

func (b *answerBook) reveal(key, viewer string, step int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ra := b.run(key)
	if _, ok := ra.revealed[viewer]; ok || len(ra.revealed) < maxViewersPerRun {
		ra.revealed[viewer] = step
	}
}

// answered is viewer's answers to the step sk names (nil: none).
func (b *answerBook) answered(key, sk, viewer string) map[string]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.run(key).steps[sk][viewer]
}

// add keeps viewer's answers to a step: one set per browser.
func (b *answerBook) add(key, sk, viewer string, answers map[string]string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	ra := b.run(key)
	byViewer, ok := ra.steps[sk]
	if !ok {
		if len(ra.order) >= maxStepsPerRun {
			delete(ra.steps, ra.order[0])
			ra.order = ra.order[1:]
		}
		byViewer = map[string]map[string]string{}
		ra.steps[sk] = byViewer
		ra.order = append(ra.order, sk)
	}
	if _, ok := byViewer[viewer]; ok {
		return errAnsweredAlready
	}
	if len(byViewer) >= maxViewersPerRun {
		return errorf(ErrConflict, "this step has %d answers, as many as a run keeps", maxViewersPerRun)
	}
	byViewer[viewer] = answers
	ra.given[viewer]++
	close(ra.changed)
	ra.changed = make(chan struct{})
	return nil
}

var errAnsweredAlready = errorf(ErrConflict, "this browser has answered this step already: one answer per browser")

// tally counts a step's answers: question → answer → how many.
func (b *answerBook) tally(key, sk string) (counts map[string]map[string]int, n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	byViewer := b.run(key).steps[sk]
	counts = map[string]map[string]int{}
	for _, as := range byViewer {
		for q, a := range as {
			if counts[q] == nil {
				counts[q] = map[string]int{}
			}
			counts[q][a]++
		}
	}
	return counts, len(byViewer)
}

// forget drops the answers of service's runs that live does not list.
func (b *answerBook) forget(service string, live []lockservice.Run) {
	gone := goneRuns(service, live)
	b.mu.Lock()
	defer b.mu.Unlock()
	for k := range b.runs {
		if gone(k) {
			delete(b.runs, k)
		}
	}
}

// stater is a run that shows a recorded step other than its shown one
// (simulator's runs do).
type stater interface {
	StateAt(k int) (any, bool)
}

// factsAt are the facts of run's recorded step k.
func factsAt(run lockservice.Run, k int) (any, frameFacts, error) {
	sr, ok := run.(stater)
	if !ok {
		return nil, frameFacts{}, errorf(ErrConflict, "run %s cannot show a step other than its own", run.ID())
	}
	st, ok := sr.StateAt(k)
	if !ok {
		return nil, frameFacts{}, errorf(ErrConflict, "run %s has not run step %d yet", run.ID(), k)
	}
	f, err := factsOf(st)
	return st, f, err
}

var viewerID = regexp.MustCompile(`^[A-Za-z0-9_-]{8,64}$`)

// simAnswer takes a viewer's answers to a step not yet shown to it:
// {"viewer": ID, "step": n, "answers": {"holds": ["C2"], "lands": ["yes"]}}.
// Anyone watching a run may answer; 204, or 400 saying what is wrong.
func (s *Server) simAnswer(w http.ResponseWriter, r *http.Request) {
	run, key, err := s.simRunKeyed(r)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	var body struct {
		Viewer  string              `json:"viewer"`
		Step    int                 `json:"step"`
		Answers map[string][]string `json:"answers"`
	}
	if err := decodeBody(w, r, &body); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	if !viewerID.MatchString(body.Viewer) {
		writeError(w, r, s.log, errorf(ErrInvalid, "bad viewer: want the page's random id, 8 to 64 letters, digits, '-' or '_'"))
		return
	}
	cur, err := factsOf(run.State())
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	_, before, err := factsAt(run, body.Step-1)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	if before.Next == nil {
		writeError(w, r, s.log, errorf(ErrInvalid, "step %d: the run plans no such step", body.Step))
		return
	}
	sk := stepKey(body.Step, *before.Next)
	if s.answers.answered(key, sk, body.Viewer) != nil {
		writeError(w, r, s.log, errAnsweredAlready)
		return
	}
	if seen := s.answers.seen(key, body.Viewer, cur.Step); body.Step <= seen {
		writeError(w, r, s.log, errorf(ErrConflict, "step %d was shown to this browser already (it is at step %d): a prediction counts only before its step is shown", body.Step, seen))
		return
	}
	answers, err := checkAnswers(questionsAfter(before), body.Answers)
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	if err := s.answers.add(key, sk, body.Viewer, answers); err != nil {
		writeError(w, r, s.log, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// checkAnswers checks an answer to every question against its choices, and
// makes each one answer (canonical).
func checkAnswers(qs []question, got map[string][]string) (map[string]string, error) {
	out := map[string]string{}
	for _, q := range qs {
		picked, ok := got[q.ID]
		if !ok {
			return nil, errorf(ErrInvalid, "missing answer to %q (%s)", q.ID, q.Text)
		}
		for _, p := range picked {
			if !slices.Contains(q.Choices, p) {
				return nil, errorf(ErrInvalid, "answer to %q: %q is not one of %s", q.ID, p, strings.Join(q.Choices, ", "))
			}
		}
		switch {
		case q.Many:
			out[q.ID] = canonical(picked)
		case len(picked) != 1:
			return nil, errorf(ErrInvalid, "answer to %q: pick one of %s", q.ID, strings.Join(q.Choices, ", "))
		default:
			out[q.ID] = picked[0]
		}
	}
	for id := range got {
		if _, ok := out[id]; !ok {
			return nil, errorf(ErrInvalid, "%q is not asked at this step", id)
		}
	}
	return out, nil
}

// predictView is a page socket in predict mode: its viewer, and whether
// it is held at the steps the viewer answered (a viewer who does not move
// the run; the one who does reveals a step by stepping).
type predictView struct {
	viewer string
	hold   bool
}

// parsePredictView reads ?predict=VIEWER and ?hold=1.
func parsePredictView(q url.Values) (*predictView, error) {
	if !q.Has("predict") {
		return nil, nil
	}
	v := q.Get("predict")
	if !viewerID.MatchString(v) {
		return nil, errorf(ErrInvalid, "bad ?predict=: want the page's random viewer id, 8 to 64 letters, digits, '-' or '_'")
	}
	return &predictView{viewer: v, hold: q.Get("hold") == "1"}, nil
}

// asked is the next step's questions as a frame carries them.
type asked struct {
	Step      int        `json:"step"`
	Client    string     `json:"client"`
	Action    string     `json:"action"`
	Questions []question `json:"questions"`
	// Answered is how many browsers answered so far; Mine says whether
	// this one did.
	Answered int  `json:"answered"`
	Mine     bool `json:"mine"`
}

// revealed is a shown step's right answers and the class's counts.
type revealed struct {
	Step int `json:"step"`
	// Asked are the step's questions, id → text.
	Asked    map[string]string         `json:"asked"`
	Right    map[string]string         `json:"right"`
	Counts   map[string]map[string]int `json:"counts"`
	Answered int                       `json:"answered"`
	Mine     map[string]string         `json:"mine,omitempty"`
}

// predictFrame is what a predicting socket's frame carries beside the
// state: Held when the run is ahead of the state shown (at RunStep).
type predictFrame struct {
	Predict *asked    `json:"predict,omitempty"`
	Reveal  *revealed `json:"reveal,omitempty"`
	Held    bool      `json:"held,omitempty"`
	RunStep int       `json:"runStep"`
}

// predictState is the state a predicting socket shows now, and what its
// frame carries beside it. A held viewer moves on through every step it
// answered, and no further than the run.
func (s *Server) predictState(key string, run lockservice.Run, st any, pv *predictView) (any, predictFrame, error) {
	cur, err := factsOf(st)
	if err != nil {
		return nil, predictFrame{}, err
	}
	pf := predictFrame{RunStep: cur.Step}
	shown := cur
	if pv.hold {
		k := s.answers.revealedTo(key, pv.viewer, cur.Step)
		for k < cur.Step {
			_, next, err := factsAt(run, k+1)
			if err != nil || next.Action == nil || s.answers.answered(key, stepKey(k+1, *next.Action), pv.viewer) == nil {
				break
			}
			k++
		}
		s.answers.reveal(key, pv.viewer, k)
		if k < cur.Step {
			if st, shown, err = factsAt(run, k); err != nil {
				return nil, pf, err
			}
			pf.Held = true
		}
	}
	if shown.Step >= 1 && shown.Action != nil {
		sk := stepKey(shown.Step, *shown.Action)
		counts, n := s.answers.tally(key, sk)
		asked := map[string]string{}
		for _, id := range asksOf(*shown.Action) {
			asked[id] = questionTexts[id]
		}
		pf.Reveal = &revealed{Step: shown.Step, Asked: asked, Right: rightAnswers(shown), Counts: counts, Answered: n, Mine: s.answers.answered(key, sk, pv.viewer)}
	}
	if qs := questionsAfter(shown); len(qs) > 0 {
		sk := stepKey(shown.Step+1, *shown.Next)
		_, n := s.answers.tally(key, sk)
		pf.Predict = &asked{Step: shown.Step + 1, Client: shown.Next.Client, Action: shown.Next.Action, Questions: qs,
			Answered: n, Mine: s.answers.answered(key, sk, pv.viewer) != nil}
	}
	return st, pf, nil
}

// predictFeed is a page socket in predict mode: a run's feed that also
// wakes when an answer arrives (the counts change) and whose frames are
// the predicting viewer's (predictState).
type predictFeed struct {
	runFeed
	s    *Server
	key  string
	run  lockservice.Run
	pv   *predictView
	wake chan struct{}
	quit chan struct{}
	once sync.Once
}

func newPredictFeed(s *Server, key string, run lockservice.Run, rf runFeed, pv *predictView) *predictFeed {
	f := &predictFeed{runFeed: rf, s: s, key: key, run: run, pv: pv, wake: make(chan struct{}, 1), quit: make(chan struct{})}
	f.poke()
	go f.follow()
	return f
}

func (f *predictFeed) poke() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// follow pokes the feed at every change of the run, and at every answer
// (the counts change) unless the feed is a held viewer's: that one's
// frames change with its own answers only, and a class of a few hundred
// answering at once would otherwise rebuild every student's frame at
// every answer.
func (f *predictFeed) follow() {
	for {
		changed, given := f.s.answers.watch(f.key, f.pv.viewer)
		select {
		case <-f.quit:
			return
		case <-f.Done():
			return
		case <-f.C():
		case <-changed:
			if _, now := f.s.answers.watch(f.key, f.pv.viewer); f.pv.hold && now == given {
				continue
			}
		}
		f.poke()
	}
}

func (f *predictFeed) Ready() <-chan struct{} { return f.wake }

func (f *predictFeed) Close() {
	f.once.Do(func() { close(f.quit) })
	f.runFeed.Close()
}

func (f *predictFeed) Frame() ([]byte, bool, error) {
	st, pf, err := f.s.predictState(f.key, f.run, f.State(), f.pv)
	if err != nil {
		return nil, false, err
	}
	b, err := f.encode(st, time.Now())
	if err != nil {
		return nil, false, err
	}
	x, err := json.Marshal(pf)
	if err != nil {
		return nil, false, fmt.Errorf("encode a run's questions: %w", err)
	}
	return mergeObjects(b, x), true, nil
}

// predictedState is the JSON of run's state for a GET: pv's, when it
// predicts, with its questions and answers; extra's fields added.
func (s *Server) predictedState(key string, run lockservice.Run, pv *predictView, extra any) ([]byte, error) {
	if pv == nil {
		return withFields(s.named(run.State()), extra)
	}
	st, pf, err := s.predictState(key, run, run.State(), pv)
	if err != nil {
		return nil, err
	}
	b, err := withFields(s.named(st), pf)
	if err != nil {
		return nil, err
	}
	x, err := json.Marshal(extra)
	if err != nil {
		return nil, fmt.Errorf("encode a run's state: %w", err)
	}
	return mergeObjects(b, x), nil
}

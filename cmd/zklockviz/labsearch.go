package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/zklockviz/zklockviz/etcd/etcdlab"
	"github.com/zklockviz/zklockviz/lab"
	"github.com/zklockviz/zklockviz/lockqueue"
	"github.com/zklockviz/zklockviz/postgres/pglock"
	"github.com/zklockviz/zklockviz/redis/redislock"
	"github.com/zklockviz/zklockviz/simulator"
)

// Search's settings, fixed: a smaller schedule is taken when it breaks
// on both of two runs; shrinking stops after labShrinkRuns runs.
const (
	labSearchTries    = 2
	labShrinkRuns     = 40
	labSearchDuration = 10 * time.Second
)

// readLabSchedule reads --schedule's file.
func readLabSchedule(name string) ([]lab.Fault, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, usagef("--schedule: %v", err)
	}
	s, err := lab.ParseSchedule(b)
	if err != nil {
		return nil, usagef("--schedule %s: %v", name, err)
	}
	return s, nil
}

// replay is the command line that runs the same lab again: the same
// service, server (when the user gave one), lock, clients, timings and
// fencing, and the seed, or schedule (a file name) when one is given.
func (f labFlags) replay(cfg lab.Config) string {
	args := []string{"zklockviz", "lab", "--service", f.service}
	if f.server != "" {
		v := f.server
		if f.service == pglock.Name {
			v = "DSN" // a DSN may carry a password: never print it
		}
		args = append(args, "--"+labServices[f.service].flag, v)
	}
	if f.path != labServices[f.service].defaultPath {
		args = append(args, "--path", f.path)
	}
	args = append(args, "--clients", fmt.Sprint(f.clients), "--duration", cfg.Duration.String(),
		"--session", f.session.String(), "--hold", f.hold.String(), "--fencing", f.fencing)
	if f.schedule != "" {
		args = append(args, "--schedule", f.schedule)
	} else {
		args = append(args, "--nemesis", f.nemesis, "--every", f.every.String(), "--pause", cfg.PauseFor.String(), "--seed", fmt.Sprint(f.seed))
	}
	for i, a := range args {
		if strings.ContainsAny(a, " '\"$\\") {
			args[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(args, " ")
}

// runLabSearchOf readies f's service's server and clients and searches.
func runLabSearchOf(ctx context.Context, f labFlags, stdout, stderr io.Writer) error {
	r, err := readyLab(ctx, f, stderr)
	if r.srv.close != nil {
		defer r.srv.close()
	}
	if err != nil {
		return err
	}
	return runLabSearch(ctx, f, r.cfg, stdout, stderr)
}

// runLabSearch is zklockviz lab --search: seeds until one breaks the
// invariant, then the shrink, then the smallest schedule written as a
// schedule file (and the command that replays it) and a classroom
// scenario.
func runLabSearch(ctx context.Context, f labFlags, cfg lab.Config, stdout, stderr io.Writer) error {
	inv, err := lab.ParseInvariant(f.search)
	if err != nil {
		return usagef("--search: %v", err)
	}
	cfg.Observe = nil
	s := lab.Search{
		Invariant: inv, Runs: f.runs, Duration: cfg.Duration,
		// Long enough after the last fault for a paused client to wake
		// and write, and for its belief to end.
		Tail:       max(2*time.Second, 2*f.session),
		Tries:      labSearchTries,
		MinPause:   f.session,
		ShrinkRuns: labShrinkRuns,
		Plan: func(seed uint64) []lab.Fault {
			c := cfg
			c.Seed = seed
			return lab.Plan(c)
		},
		Run: func(ctx context.Context, sched []lab.Fault, d time.Duration) (lab.Report, []lab.Event, error) {
			c := cfg
			c.Schedule, c.Duration = sched, d
			return lab.Run(ctx, c)
		},
		Progress: func(line string) { fmt.Fprintln(stderr, line) },
	}
	fmt.Fprintf(stderr, "search: %s on %s, seeds 1 to %d, %v a run; a smaller schedule is taken when it breaks %d times of %d\n",
		inv, labServices[f.service].title, f.runs, cfg.Duration, labSearchTries, labSearchTries)
	found, ok, err := s.Find(ctx)
	if err != nil {
		return fmt.Errorf("search: %w", err)
	}
	if !ok {
		fmt.Fprintf(stdout, "no seed of 1 to %d broke %s in %v runs on %s\n", f.runs, inv, cfg.Duration, labServices[f.service].title)
		return nil
	}
	files, err := writeLabSearch(f, cfg, found)
	if err != nil {
		return err
	}
	if f.json {
		return json.NewEncoder(stdout).Encode(struct {
			Invariant    lab.Invariant `json:"invariant"`
			Seed         uint64        `json:"seed"`
			Original     []lab.Fault   `json:"original"`
			Schedule     []lab.Fault   `json:"schedule"`
			Runs         int           `json:"runs"`
			Bounded      bool          `json:"bounded,omitempty"`
			Report       lab.Report    `json:"report"`
			Events       []lab.Event   `json:"events"`
			ScheduleFile string        `json:"scheduleFile"`
			Replay       string        `json:"replay"`
			ScenarioFile string        `json:"scenarioFile"`
			Sim          string        `json:"sim"`
			NoClassroom  []string      `json:"noClassroom,omitempty"`
		}{inv, found.Seed, found.Original, found.Schedule, found.Runs, found.Bounded, found.Report, found.Events,
			files.schedule, files.replay, files.scenario, files.sim, files.missing})
	}
	fmt.Fprintf(stdout, "%s: %s", inv, found)
	fmt.Fprintf(stdout, "its last run: %s", found.Report)
	fmt.Fprintf(stdout, "schedule: %s\nreplay:   %s\nscenario: %s\nclassroom: %s\n", files.schedule, files.replay, files.scenario, files.sim)
	for _, m := range files.missing {
		fmt.Fprintf(stdout, "not in the classroom: %s\n", m)
	}
	return nil
}

// labSearchFiles are what a search wrote and the commands that use it.
type labSearchFiles struct {
	schedule, scenario string
	replay, sim        string
	missing            []string // the faults the scenario does not tell
}

// writeLabSearch writes the smallest schedule found, and the classroom
// scenario told from its last run, in --out.
func writeLabSearch(f labFlags, cfg lab.Config, found lab.Found) (labSearchFiles, error) {
	base := filepath.Join(f.out, fmt.Sprintf("lab-%s-%s", f.service, f.search))
	out := labSearchFiles{schedule: base + ".schedule.json", scenario: base + ".scenario.json"}
	if err := os.WriteFile(out.schedule, lab.MarshalSchedule(found.Schedule), 0o644); err != nil {
		return out, fmt.Errorf("write the schedule: %w", err)
	}
	cfg.Duration = found.Duration
	g := f
	g.schedule = out.schedule
	out.replay = g.replay(cfg)
	sc, missing := labScenario(f, found, out.replay)
	out.missing = missing
	b, err := json.MarshalIndent(sc, "", "  ")
	if err != nil {
		return out, fmt.Errorf("the scenario: %w", err)
	}
	if _, err := simulator.ParseScenario(b); err != nil {
		return out, fmt.Errorf("the scenario made from the schedule: %w", err)
	}
	if err := os.WriteFile(out.scenario, append(b, '\n'), 0o644); err != nil {
		return out, fmt.Errorf("write the scenario: %w", err)
	}
	out.sim = "zklockviz sim --service " + f.service + " --scenario " + out.scenario
	if f.service == lockqueue.ZooKeeper {
		out.sim += " --zk HOST:PORT"
	}
	return out, nil
}

// labScenario tells the shrunk run's faults as a classroom scenario for
// the service (see classStory). What has no classroom step is listed in
// missing and said in the description.
func labScenario(f labFlags, found lab.Found, replay string) (sc simulator.Scenario, missing []string) {
	fencing := f.fencing == "on"
	sc = simulator.Scenario{
		Name:  fmt.Sprintf("lab-%s-%s", f.service, f.search),
		Title: fmt.Sprintf("The lab's smallest schedule that broke %s on %s (seed %d)", strings.ReplaceAll(f.search, "-", " "), labServices[f.service].title, found.Seed),
		Lock:  simulator.ExclusiveLock, Fencing: &fencing, ClientPrefix: "C",
	}
	// A paused holder's lock goes to the next in line, but on PostgreSQL.
	story := classStory{pauseHandsOver: true}
	switch f.service {
	case lockqueue.ZooKeeper:
		// The classroom's session timeout is sim's --session-timeout.
	case redislock.Name:
		sc.Service = redislock.Name
		sc.Params = json.RawMessage(fmt.Sprintf(`{"expiryMs": %d, "release": "compare-and-delete", "incrFencing": true}`, min(60000, max(1, f.session.Milliseconds()))))
	case "etcd":
		sc.Service = "etcd"
		ttl, err := etcdlab.TTLSeconds(f.session)
		if err != nil {
			ttl = 1
		}
		sc.Params = json.RawMessage(fmt.Sprintf(`{"ttl": %d}`, min(60, max(1, ttl))))
	case pglock.Name:
		sc.Service = pglock.Name
		sc.Params = json.RawMessage(`{"lock": "advisory"}`)
		story.pauseHandsOver = false
	}
	story.tell(found.Events)
	sc.Steps = story.steps
	sc.Description = fmt.Sprintf("Made by zklockviz lab --search %s from seed %d's schedule, shrunk to %d faults (from %d): %s. Replay the lab run: %s. The lab's %d clients loop acquire, write, release, and each fault strikes whoever holds at that moment; here each strikes the classroom's holder, in the lab's order, with two clients at a time (the holder and the next in line; a client joins as one leaves).",
		f.search, found.Seed, len(found.Schedule), len(found.Original), strings.TrimSpace(strings.ReplaceAll(lab.FormatSchedule(found.Schedule), "\n ", ";")), replay, f.clients)
	if len(story.missing) > 0 {
		sc.Description += " Not told here: " + strings.Join(story.missing, "; ") + "."
	}
	return sc, story.missing
}

// classStory tells a lab run's faults as classroom steps. Two clients at
// a time, the holder and one waiter, where the lab ran more: a Redis key
// freed goes to whichever waiter polls first, so with one waiter the
// classroom's hand-over is the one its plan expects, on every service. A
// client joins before each fault that would leave the holder none. Each
// fault that struck a holder in the lab strikes the classroom's holder
// after a write: a pause is the classroom's pause (the holder stops past
// its session, lease or key's expiry, the next in line takes the lock and
// writes, and the paused one wakes still believing and writes), a kill -9
// its crash.
type classStory struct {
	pauseHandsOver bool
	steps          []simulator.Action
	missing        []string
	queue          []string // the classroom's holder first, then its waiter
	joined         int
}

func (st *classStory) step(client, action, note string) {
	st.steps = append(st.steps, simulator.Action{Client: client, Action: action, Note: note})
}

func (st *classStory) join() {
	st.joined++
	c := fmt.Sprintf("C%d", st.joined)
	st.queue = append(st.queue, c)
	st.step(c, simulator.ActAdd, "")
}

func (st *classStory) tell(events []lab.Event) {
	st.join()
	st.join()
	start := firstStart(events)
	holds := map[string]bool{} // the lab's clients that believe they hold
	for _, e := range sortedLabEvents(events) {
		switch e.Kind {
		case lab.Acquired:
			holds[e.Client] = true
		case lab.Released, lab.Lost:
			delete(holds, e.Client)
		case lab.Paused, lab.Killed:
			at := e.At.Sub(start).Round(10 * time.Millisecond)
			st.fault(e, at, holds[e.Client])
			if e.Kind == lab.Killed {
				delete(holds, e.Client)
			}
		case lab.Cut, lab.ServerDown:
			// The classroom cuts a client only as a pause past its
			// session, and has no server to stop but Redlock's masters.
			at := e.At.Sub(start).Round(10 * time.Millisecond)
			st.missing = append(st.missing, fmt.Sprintf("at %v %s %s: no classroom step for it here", at, e.Client, e.Kind))
		}
	}
	st.step(st.queue[0], simulator.ActWrite, "")
	st.step(st.queue[0], simulator.ActRelease, "")
}

// fault tells one fault of the lab's, at at from its start, on a client
// that held or not.
func (st *classStory) fault(e lab.Event, at time.Duration, held bool) {
	kind := map[lab.Kind]string{lab.Paused: lab.Pause, lab.Killed: lab.Kill}[e.Kind]
	if !held {
		st.missing = append(st.missing, fmt.Sprintf("at %v the %s of %s, a waiter: the classroom stages a holder's faults", at, kind, e.Client))
		return
	}
	if len(st.queue) < 2 {
		st.join()
	}
	holder, next := st.queue[0], st.queue[1]
	said := fmt.Sprintf("in the lab, at %v, %s (which held) was ", at, e.Client)
	st.step(holder, simulator.ActWrite, "the holder writes with its token")
	switch {
	case kind == lab.Pause && st.pauseHandsOver:
		st.step(holder, simulator.ActPause, said+"paused past its session: the lock goes to "+next)
		st.step(next, simulator.ActWrite, "the new holder writes with a newer token")
		st.step(holder, simulator.ActWrite, "the paused one wakes still believing it holds, and writes")
		st.queue = st.queue[1:]
	case kind == lab.Pause:
		// An advisory lock lasts as long as its session, and a paused
		// holder's session lives on: the others wait.
		st.step(next, pglock.ActWait, said+"paused: it keeps its advisory lock, and the others wait")
	default:
		st.step(holder, simulator.ActCrash, said+"killed with kill -9: the lock goes to "+next)
		st.queue = st.queue[1:]
	}
}

func sortedLabEvents(events []lab.Event) []lab.Event {
	return slices.SortedStableFunc(slices.Values(events), func(a, b lab.Event) int { return a.At.Compare(b.At) })
}

// firstStart is when the run's first client started.
func firstStart(events []lab.Event) time.Time {
	var t time.Time
	for _, e := range events {
		if e.Kind == lab.Started && (t.IsZero() || e.At.Before(t)) {
			t = e.At
		}
	}
	return t
}

// checkSearch checks --search, --runs, --out and --schedule together,
// before any server starts, and gives --search its short default
// duration.
func (f *labFlags) checkSearch(fs *flag.FlagSet) error {
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if f.search == "" {
		for _, name := range []string{"runs", "out"} {
			if set[name] {
				return usagef("--%s is for --search", name)
			}
		}
		return nil
	}
	if _, err := lab.ParseInvariant(f.search); err != nil {
		return usagef("--search: %v", err)
	}
	if f.schedule != "" {
		return usagef("--search runs the seeds' schedules and shrinks them: not with --schedule")
	}
	if f.runs < 1 {
		return usagef("--runs %d: want 1 or more", f.runs)
	}
	if st, err := os.Stat(f.out); err != nil || !st.IsDir() {
		return usagef("--out %s: want a directory", f.out)
	}
	if !set["duration"] {
		f.duration = labSearchDuration
	}
	return nil
}

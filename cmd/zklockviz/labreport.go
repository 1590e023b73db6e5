package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/zklockviz/zklockviz/lab"
	"github.com/zklockviz/zklockviz/lab/labsvg"
	"github.com/zklockviz/zklockviz/localproc"
	"github.com/zklockviz/zklockviz/web"
)

// labAll is --service's word for every service.
const labAll = "all"

// labServiceNames reads --service: one service, a comma-separated list, or
// all (every service, in the classroom's order).
func labServiceNames(v string) ([]string, error) {
	if v == labAll {
		var all []string
		for _, s := range classServices {
			if _, ok := labServices[s.name]; ok {
				all = append(all, s.name)
			}
		}
		return all, nil
	}
	var out []string
	for name := range strings.SplitSeq(v, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			return nil, usagef("--service %q: name a service: %s, a comma-separated list of them, or %s", v, classServiceList(), labAll)
		}
		if _, err := classServiceNamed(name); err != nil {
			if strings.Contains(v, ",") {
				return nil, usagef("%v, a comma-separated list of them, or %s", err, labAll)
			}
			return nil, err
		}
		if slices.Contains(out, name) {
			return nil, usagef("--service %s: %s twice", v, name)
		}
		out = append(out, name)
	}
	return out, nil
}

// checkSeveral checks the flags of a run of several services: each
// service's server flag only for a service in the run, and no --path (each
// service names its locks its own way: each gets its default).
func (f labFlags) checkSeveral() error {
	for _, name := range slices.Sorted(maps.Keys(labServices)) {
		if v := *f.servers[name]; v != "" && !slices.Contains(f.services, name) {
			return usagef("--%s is %s's server, and %s is not among --service %s", labServices[name].flag, labServices[name].title, name, f.service)
		}
	}
	if f.path != "" {
		return usagef("--path names one service's lock: give it with one --service (with several, each uses its default)")
	}
	return nil
}

// forService is f for one service of several.
func (f labFlags) forService(name string) labFlags {
	f.service, f.services = name, []string{name}
	f.server = *f.servers[name]
	f.path = labServices[name].defaultPath
	return f
}

// outcome is what a run of svc with cfg is before it runs: what it is,
// the command that runs it again, its schedule.
func (f labFlags) outcome(svc labService, cfg lab.Config) lab.Outcome {
	schedule := cfg.Schedule
	if schedule == nil {
		schedule = lab.Plan(cfg)
	}
	return lab.Outcome{Service: f.service, Title: svc.title, Server: "a throwaway server", Path: f.path,
		Replay: f.replay(cfg), Seed: f.seed, Fencing: cfg.Fencing, Schedule: schedule}
}

// runLabs runs f's services, side by side when there are several, and
// writes what they found: the words (or --json) on stdout, the HTML report
// to --report's file. It writes them when a run is stopped early (Ctrl-C)
// too: the report of what ran.
func runLabs(ctx context.Context, f labFlags, stdout, stderr io.Writer) error {
	if err := f.checkConfigs(); err != nil {
		return err
	}
	if f.search != "" {
		return runLabSearchOf(ctx, f, stdout, stderr)
	}
	outs, errs := labOutcomes(ctx, f, stderr, !f.json, web.LabHooks{})
	if len(outs) == 1 && errs[0] != nil && outs[0].Service == "" {
		return errs[0] // a flag the run could not start with
	}
	if f.report != "" {
		if err := writeLabReport(f.report, outs); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "lab: the report is in %s\n", f.report)
	}
	if err := writeLabResults(stdout, f.json, outs); err != nil {
		return err
	}
	for i, err := range errs {
		if err == nil {
			err = wordFailed(outs[i].Word)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", labServices[f.services[i]].title, err)
		}
	}
	return nil
}

// checkConfigs checks every service's flags before any server starts.
func (f labFlags) checkConfigs() error {
	for _, name := range f.services {
		if _, err := f.forService(name).config(labServices[name]); err != nil {
			return err
		}
	}
	return nil
}

// labOutcomes runs f's services side by side, each with its own server,
// clients and resource, and returns each one's outcome and error. With
// several, each one's progress lines on stderr are whole and named; with
// words, they include every event.
func labOutcomes(ctx context.Context, f labFlags, stderr io.Writer, words bool, hooks web.LabHooks) ([]lab.Outcome, []error) {
	several := len(f.services) > 1
	outs := make([]lab.Outcome, len(f.services))
	errs := make([]error, len(f.services))
	var wg sync.WaitGroup
	shared := localproc.NewSyncWriter(stderr)
	for i, name := range f.services {
		g, w := f, stderr
		if several {
			g = f.forService(name)
			w = localproc.NewOutput(shared, "["+name+"] ")
		}
		h := hooks
		if words {
			h.Event = func(svc string, e lab.Event) {
				fmt.Fprintln(w, eventLine(e))
				if hooks.Event != nil {
					hooks.Event(svc, e)
				}
			}
		}
		wg.Go(func() {
			outs[i], errs[i] = runLabOne(ctx, g, w, h)
			if errs[i] != nil {
				outs[i].Error = errs[i].Error()
			}
			if svg, err := labsvg.Outcome(outs[i]); err != nil {
				outs[i].DrawError = err.Error()
			} else {
				outs[i].SVG = svg
			}
		})
	}
	wg.Wait()
	return outs, errs
}

// writeLabReport writes the HTML report to file.
func writeLabReport(file string, outs []lab.Outcome) error {
	var b bytes.Buffer
	if err := web.WriteLabReport(&b, outs); err != nil {
		return err
	}
	if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("--report: %w", err)
	}
	return nil
}

// writeLabResults writes the runs' findings as words or JSON: one run's
// outcome, or {"runs": [...]} for several.
func writeLabResults(w io.Writer, asJSON bool, outs []lab.Outcome) error {
	if asJSON {
		if len(outs) == 1 {
			return json.NewEncoder(w).Encode(outs[0])
		}
		return json.NewEncoder(w).Encode(struct {
			Runs []lab.Outcome `json:"runs"`
		}{outs})
	}
	for _, o := range outs {
		if o.Service == "" || o.Error != "" && len(o.Events) == 0 {
			continue // it did not run: its error says why
		}
		if len(outs) > 1 {
			fmt.Fprintf(w, "== %s ==\n", o.Title)
		}
		fmt.Fprint(w, o.Report)
		if o.Word != nil {
			fmt.Fprint(w, o.Word)
		}
		fmt.Fprintf(w, "schedule:\n%sreplay: %s\n", lab.FormatSchedule(o.Schedule), o.Replay)
	}
	return nil
}

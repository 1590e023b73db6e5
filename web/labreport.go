package web

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"github.com/zklockviz/zklockviz/lab"
	"github.com/zklockviz/zklockviz/static"
	"github.com/zklockviz/zklockviz/views"
)

// WriteLabReport writes lab runs (one per service) as one self-contained
// HTML file, as the incident export is: the pages' stylesheet inlined, the
// time–space diagrams inline SVG, nothing fetched when it is opened. zklockviz
// lab --report and the Lab page's report link both write it.
func WriteLabReport(w io.Writer, runs []lab.Outcome) error {
	css, err := fs.ReadFile(static.FS, "app.css")
	if err != nil {
		return fmt.Errorf("lab report stylesheet: %w", err)
	}
	rs := make([]views.LabRun, len(runs))
	for i, o := range runs {
		rs[i] = labRunView(o)
	}
	if err := views.LabReport(string(css), rs).Render(context.Background(), w); err != nil {
		return fmt.Errorf("write the lab report: %w", err)
	}
	return nil
}

// labRunView is a run in the words the report and the page show.
func labRunView(o lab.Outcome) views.LabRun {
	v := views.LabRun{Service: o.Service, Title: fmt.Sprintf("%s: %s %s, seed %d, fencing %s", o.Title, o.Server, o.Path, o.Seed, onOff(o.Fencing)),
		Command: o.Replay, Summary: o.Report.Summary(), Stopped: o.Stopped, Error: o.Error}
	findings := o.Report.String()
	if o.Word != nil {
		findings += o.Word.String()
	}
	for line := range strings.Lines(findings) {
		v.Findings = append(v.Findings, strings.TrimSpace(line))
	}
	for _, f := range o.Schedule {
		lf := views.LabFault{At: f.At.String(), Kind: f.Kind, Pick: strconv.Itoa(f.Pick)}
		if f.For > 0 {
			lf.For = f.For.Round(time.Millisecond).String()
		}
		v.Schedule = append(v.Schedule, lf)
	}
	v.SVG, v.DrawError = o.SVG, o.DrawError
	return v
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

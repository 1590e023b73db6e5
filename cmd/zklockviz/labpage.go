package main

import (
	"context"
	"io"
	"strconv"

	"github.com/zklockviz/zklockviz/lab"
	"github.com/zklockviz/zklockviz/web"
)

// labPageRunner is the Lab page's runner (web.Config.Lab): the request in
// zklockviz lab's flags, checked as the command checks them, and run as
// the command runs them. Its progress lines go to log.
func labPageRunner(log io.Writer) web.LabRunner {
	return func(req web.LabRequest) (func(context.Context, web.LabHooks) []lab.Outcome, error) {
		fencing := "off"
		if req.Fencing {
			fencing = "on"
		}
		f, err := parseLabFlags([]string{"--service", req.Service, "--clients", strconv.Itoa(req.Clients),
			"--nemesis", req.Nemesis, "--seed", strconv.FormatUint(req.Seed, 10), "--duration", req.Duration,
			"--fencing", fencing}, io.Discard)
		if err != nil {
			return nil, err
		}
		if err := f.checkConfigs(); err != nil {
			return nil, err
		}
		return func(ctx context.Context, hooks web.LabHooks) []lab.Outcome {
			outs, _ := labOutcomes(ctx, f, log, false, hooks) // each error is in its outcome
			return outs
		}, nil
	}
}

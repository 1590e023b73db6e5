package simulator

import (
	"errors"

	"github.com/zklockviz/zklockviz/fault"
)

// The simulator's errors are fault's kinds: web turns them into HTTP
// statuses and the CLI into exit codes, each in one place.
var (
	// ErrInvalid: a bad scenario, spec or action.
	ErrInvalid = fault.Invalid
	// ErrNotFound: no such run.
	ErrNotFound = fault.NotFound
	// ErrConflict: the request does not fit the run's state: a release by a
	// client holding nothing, a step past the end, a failed run, too many runs.
	ErrConflict = fault.Conflict
	// ErrUnavailable: ZooKeeper cannot be reached, or the manager is closed.
	ErrUnavailable = fault.Unavailable
)

// ErrSandboxLeft: Close could not remove the sandbox because ZooKeeper was
// unreachable. Nothing was lost (the runs are over), but the nodes stay on
// the ensemble until someone deletes them; a caller warns, it does not fail.
var ErrSandboxLeft = errors.New("the simulator's sandbox is left on ZooKeeper, which was unreachable at shutdown")

func invalidf(format string, args ...any) error {
	return fault.Errorf(fault.Invalid, format, args...)
}

func conflictf(format string, args ...any) error {
	return fault.Errorf(fault.Conflict, format, args...)
}

func notFoundf(format string, args ...any) error {
	return fault.Errorf(fault.NotFound, format, args...)
}

func unavailablef(format string, args ...any) error {
	return fault.Errorf(fault.Unavailable, format, args...)
}

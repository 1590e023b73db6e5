package simulator

import "github.com/zklockviz/zklockviz/fault"

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
	// ErrUnavailable: the lock service cannot be reached, or the manager is closed.
	ErrUnavailable = fault.Unavailable
)

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

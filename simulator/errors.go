package simulator

import (
	"errors"
	"fmt"
)

// The simulator's error vocabulary; the HTTP handler maps each to a status
// (statusOf) and the CLI to an exit code.
var (
	// ErrInvalid: a bad scenario, spec or action (400, exit 2).
	ErrInvalid = errors.New("invalid")
	// ErrNotFound: no such run (404).
	ErrNotFound = errors.New("not found")
	// ErrConflict: the request does not fit the run's state: a release by a
	// client holding nothing, a step past the end, a failed run (409).
	ErrConflict = errors.New("conflict")
	// ErrUnavailable: ZooKeeper cannot be reached, or the manager is closed (503).
	ErrUnavailable = errors.New("unavailable")
)

type kindError struct {
	kind error
	msg  string
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.kind }

func invalidf(format string, args ...any) error {
	return &kindError{kind: ErrInvalid, msg: fmt.Sprintf(format, args...)}
}

func conflictf(format string, args ...any) error {
	return &kindError{kind: ErrConflict, msg: fmt.Sprintf(format, args...)}
}

func notFoundf(format string, args ...any) error {
	return &kindError{kind: ErrNotFound, msg: fmt.Sprintf(format, args...)}
}

func unavailablef(format string, args ...any) error {
	return &kindError{kind: ErrUnavailable, msg: fmt.Sprintf(format, args...)}
}

// Package fault is zklockviz's one error vocabulary. The engine packages
// (the simulator) and the web layer wrap their client-facing errors in one
// of these kinds; web maps each kind to an HTTP status in one place and the
// command line maps Invalid to exit status 2. The package depends on
// nothing, so any layer may use it.
package fault

import (
	"errors"
	"fmt"
)

// The kinds. Test with errors.Is.
var (
	// Invalid: bad input: a malformed request, an unknown scenario, a value
	// out of range (HTTP 400, exit status 2).
	Invalid = errors.New("invalid request")
	// NotFound: no such thing, e.g. a run that ended (404).
	NotFound = errors.New("not found")
	// Conflict: the request does not fit the current state: a step past the
	// end, a release by a client holding nothing, too many runs (409).
	Conflict = errors.New("conflict")
	// Unavailable: a dependency (ZooKeeper) cannot be reached, or the
	// server is shutting down (503).
	Unavailable = errors.New("unavailable")
	// Unauthorized: no valid token (401).
	Unauthorized = errors.New("unauthorized")
	// Forbidden: a foreign Host or Origin (403).
	Forbidden = errors.New("forbidden")
	// TooLarge: a request body over the limit (413).
	TooLarge = errors.New("request too large")
	// Method: the method does not apply to the URL (405).
	Method = errors.New("method not allowed")
)

// Error is a message meant for the client, with its kind.
type Error struct {
	Kind error
	Msg  string
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Kind }

// Errorf makes a client-facing error of the given kind.
func Errorf(kind error, format string, args ...any) error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

package web

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/zklockviz/zklockviz/fault"
)

// The error vocabulary is fault's, shared with the simulator; these names
// keep the handlers short. Handlers return errors wrapping one of them;
// statusOf is the one place that turns them into status codes.
var (
	ErrInvalid      = fault.Invalid
	ErrNotFound     = fault.NotFound
	ErrConflict     = fault.Conflict
	ErrUnavailable  = fault.Unavailable
	ErrUnauthorized = fault.Unauthorized
	ErrForbidden    = fault.Forbidden
	ErrTooLarge     = fault.TooLarge
	ErrMethod       = fault.Method
)

// errorf makes a client-facing error of the given kind.
func errorf(kind error, format string, args ...any) error {
	return fault.Errorf(kind, format, args...)
}

// statusOf maps an error to its HTTP status.
func statusOf(err error) int {
	switch {
	case errors.Is(err, ErrInvalid), isBadName(err):
		return http.StatusBadRequest
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrConflict):
		return http.StatusConflict
	case errors.Is(err, ErrUnavailable):
		return http.StatusServiceUnavailable
	case errors.Is(err, ErrUnauthorized):
		return http.StatusUnauthorized
	case errors.Is(err, ErrForbidden):
		return http.StatusForbidden
	case errors.Is(err, ErrTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, ErrMethod):
		return http.StatusMethodNotAllowed
	default:
		return http.StatusInternalServerError
	}
}

// errorBody is every error response: {"error": "..."}.
type errorBody struct {
	Error string `json:"error"`
}

// writeError answers with err's status and message. Errors outside the
// vocabulary are logged and hidden behind a generic message.
func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	code, msg := errorAnswer(w, r, log, err)
	writeJSON(w, code, errorBody{Error: msg})
}

// answer answers with what h returns, as JSON with 200, or with its error
// as writeError does.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, h func() (any, error)) {
	v, err := h()
	if err != nil {
		writeError(w, r, s.log, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// setHeaders sets an answer's type and caching, and that the browser is
// not to guess another type; the rest of the answer's headers are the
// caller's.
func setHeaders(w http.ResponseWriter, ctype, cache string) http.Header {
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Cache-Control", cache)
	h.Set("X-Content-Type-Options", "nosniff")
	return h
}

// writeTextError is writeError for a part of a page (HTML the page script
// fetches): the same status and message, as plain text.
func writeTextError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	code, msg := errorAnswer(w, r, log, err)
	http.Error(w, msg, code)
}

// errorAnswer is err's status and the message a client gets, with the
// headers that status calls for set on w.
func errorAnswer(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) (int, string) {
	code := statusOf(err)
	msg := err.Error()
	if code == http.StatusInternalServerError {
		log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		msg = "internal error"
	}
	switch code {
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", `Basic realm="zklockviz", charset="UTF-8"`)
	case http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", "1")
	}
	return code, msg
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Only a programming error gets here: every body is a plain struct.
		http.Error(w, `{"error":"internal error"}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}

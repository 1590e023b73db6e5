package web

import (
	"net/http"
)

// simSideBySide answers scenario 12's panes: which service runs which of
// its own scenarios, as the registered classrooms supply them. The
// classroom starts each as an ordinary run of its service (?service=), so a
// service that cannot run says why in its pane.
func (s *Server) simSideBySide(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.cfg.Services.SideBySide())
}

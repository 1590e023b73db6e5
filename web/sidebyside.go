package web

import (
	"net/http"

	"github.com/zklockviz/zklockviz/lockservice"
)

// simSideBySide answers scenario 12's panes: which service runs which of
// its own scenarios. The classroom starts each as an ordinary run of its
// service (?service=), so a service that cannot run says why in its pane.
func (s *Server) simSideBySide(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, lockservice.SideBySide())
}

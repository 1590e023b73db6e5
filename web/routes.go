package web

import (
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
)

// routes is the one place that maps URLs to handlers.
func (s *Server) routes() http.Handler {
	r := chi.NewRouter()
	r.Use(middleware.Recoverer, s.logRequests)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, s.log, errorf(ErrNotFound, "no such endpoint: %s", r.URL.Path))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, s.log, errorf(ErrMethod, "%s is not allowed on %s", r.Method, r.URL.Path))
	})

	// Probes carry no token.
	r.Get("/healthz", s.handleHealth)

	r.Group(func(r chi.Router) {
		r.Use(s.checkHost, s.requireAuth, s.checkOrigin)
		if s.cfg.Metrics != nil {
			r.Method(http.MethodGet, "/metrics", s.cfg.Metrics)
		}
		r.Get("/api/v1/version", s.handleVersion)
		r.Get("/api/v1/locks", s.handleLocks)
		r.Get("/api/v1/lock", s.handleLock)
		r.Get("/api/v1/lock/history", s.handleLockHistory)
		r.Get("/api/v1/lock/history/density", s.handleLockDensity)
		r.Get("/api/v1/lock/history/moments", s.handleLockMoments)
		r.Get("/api/v1/lock/strip", s.handleLockStrip)
		r.Get("/api/v1/lock/stats", s.handleLockStats)
		r.Get("/api/v1/lock/export", s.handleLockExport)
		r.Get("/api/v1/history/locks", s.handleHistoryLocks)
		r.Get("/api/v1/history/status", s.handleHistoryStatus)
		r.Post("/api/v1/watch", s.handleWatch)
		r.Delete("/api/v1/watch", s.handleUnwatch)
		// No timeout middleware here: a websocket lives as long as its viewer.
		r.Get("/ws", s.handleWS)
		if hasClassroom(s.cfg.Services) {
			r.Route("/api/v1/sim", func(r chi.Router) {
				r.Get("/scenarios", s.simScenarios)
				// The scenario editor: a built-in's definition, a file's check.
				r.Get("/scenarios/{name}", s.simDefinition)
				r.Post("/scenarios/check", s.simCheck)
				r.Get("/side-by-side", s.simSideBySide)
				r.Post("/runs", s.simStart)
				r.Get("/runs", s.simList)
				r.Route("/runs/{id}", func(r chi.Router) {
					r.Get("/", s.simState)
					r.Delete("/", s.simDelete)
					r.Post("/step", s.simCommand(simStep))
					r.Post("/back", s.simCommand(simBack))
					r.Post("/seek", s.simCommand(simSeek))
					r.Post("/play", s.simCommand(simPlay))
					r.Post("/pause", s.simCommand(simPause))
					r.Post("/speed", s.simCommand(simSpeed))
					r.Post("/act", s.simCommand(s.simAct))
					r.Post("/script", s.simCommand(simToScript))
					r.Post("/answers", s.simAnswer)
					r.Get("/ws", s.handleSimWS)
					r.Get("/timespace.svg", s.simTimeSpace)
				})
			})
		}
		// The Lab page and its API (lab.go).
		s.labRoutes(r)
		if s.pages != nil {
			s.pages.routes(r)
		} else {
			r.Get("/", s.handleIndex)
		}
	})
	return r
}

// routes maps the pages' URLs: the pages, the parts their scripts fetch
// when the viewer asks for another view, and the assets.
func (p *pages) routes(r chi.Router) {
	r.Get("/", p.dashboard)
	r.Get("/parts/dashboard", p.dashboardLive)
	r.Get("/parts/lock", p.lockParts)
	r.Get("/parts/lock-text", p.lockText)
	r.Get("/parts/lock-figures", p.lockFigures)
	r.Get("/parts/lock-at", p.lockAt)
	r.Get("/lock", p.lock)
	r.Get("/sim", p.classroom)
	r.Get("/static/*", p.static)
}

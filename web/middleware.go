package web

import (
	"crypto/subtle"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/go-chi/chi/v5/middleware"
)

// logRequests logs each request at debug level. Websockets log on their
// own: they outlive the request, and Shutdown waits for their last log line.
func (s *Server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			next.ServeHTTP(w, r)
			return
		}
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		start := time.Now()
		next.ServeHTTP(ww, r)
		s.log.Debug("request", "method", r.Method, "path", r.URL.Path, "status", ww.Status(),
			"bytes", ww.BytesWritten(), "took", time.Since(start))
	})
}

// requireAuth enforces Config.AuthToken when it is set.
func (s *Server) requireAuth(next http.Handler) http.Handler {
	if s.cfg.AuthToken == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.holdsToken(r) {
			writeError(w, r, s.log, errorf(ErrUnauthorized, "a valid token is required (Authorization: Bearer <token>, or basic auth with the token as password)"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// holdsToken reports whether r presents Config.AuthToken; never without
// one set.
func (s *Server) holdsToken(r *http.Request) bool {
	if s.cfg.AuthToken == "" {
		return false
	}
	var got string
	if _, pass, ok := r.BasicAuth(); ok {
		got = pass
	} else if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		got = strings.TrimSpace(tok)
	}
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.AuthToken)) == 1
}

// checkHost refuses, when no token is set, requests whose Host header is
// not a loopback name or address, the address the request came in on, or a
// host allowed by Config.AllowedOrigins. Without it a web page could rebind
// its own DNS name to 127.0.0.1 and read or drive this server as
// same-origin (DNS rebinding). With a token the page would need the token.
func (s *Server) checkHost(next http.Handler) http.Handler {
	if s.cfg.AuthToken != "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hostAllowed(r) {
			writeError(w, r, s.log, errorf(ErrForbidden, "host %q refused: without --auth-token only loopback hosts (localhost, 127.0.0.1, [::1]) are served; add other names with --allowed-origin", r.Host))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// hostAllowed applies checkHost's rule to r.Host.
func (s *Server) hostAllowed(r *http.Request) bool {
	hostport := strings.ToLower(r.Host)
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"), ".")
	if host == "" {
		return false
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	if ip := net.ParseIP(host); ip != nil {
		if ip.IsLoopback() {
			return true
		}
		// A literal address cannot be rebound; the one this request came
		// in on is the server itself (a LAN bind with --insecure).
		if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
			if ta, ok := la.(*net.TCPAddr); ok && ta.IP.Equal(ip) {
				return true
			}
		}
		return false
	}
	for _, p := range s.cfg.AllowedOrigins {
		if _, rest, ok := strings.Cut(p, "://"); ok {
			p = rest
		}
		p = strings.ToLower(p)
		if ok, _ := path.Match(p, hostport); ok {
			return true
		}
		if ok, _ := path.Match(p, host); ok {
			return true
		}
	}
	return false
}

// checkOrigin refuses cross-site requests that change state, so a web page
// elsewhere cannot make a visitor's browser drive this server. Websockets
// get the same rule from websocket.Accept.
func (s *Server) checkOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
		default:
			if !s.originAllowed(r) {
				writeError(w, r, s.log, errorf(ErrForbidden, "cross-origin %s from %q refused; add the origin with --allowed-origin", r.Method, r.Header.Get("Origin")))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// originAllowed applies coder/websocket's origin rule: no Origin (not a
// browser, or a same-origin navigation), the request's own host, or a host
// matching an allowed pattern.
func (s *Server) originAllowed(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		// Browsers always send Origin on cross-site POSTs; Sec-Fetch-Site
		// catches the odd one that does not.
		site := r.Header.Get("Sec-Fetch-Site")
		return site == "" || site == "same-origin" || site == "none"
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	if strings.EqualFold(u.Host, r.Host) {
		return true
	}
	for _, p := range s.cfg.AllowedOrigins {
		target := u.Host
		if strings.Contains(p, "://") {
			target = u.Scheme + "://" + u.Host
		}
		if ok, _ := path.Match(strings.ToLower(p), strings.ToLower(target)); ok {
			return true
		}
	}
	return false
}

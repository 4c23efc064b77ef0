package agent

import (
	"net/http"
	"strings"
)

// routes builds the agent's mux. Ingest routes are behind the ingest credentials, admin
// routes behind the admin gate (admin_auth.go); /healthz, /readyz and /metrics stay open.
// Every route is counted in ingest_requests_total{route,code}.
func (a *Agent) routes() http.Handler {
	mux := http.NewServeMux()
	guarded := func(pattern, route string, h http.HandlerFunc) {
		mux.Handle(pattern, a.count(route, a.auth.wrap(h)))
	}
	// admin registers an admin route: one line per route, and every one gets the admin check;
	// a route that is not a GET also gets the cross-site and Content-Type checks.
	admin := func(pattern, route string, h http.HandlerFunc) {
		mux.Handle(pattern, a.count(route, a.admin.guard(h, !strings.HasPrefix(pattern, http.MethodGet+" "))))
	}
	open := func(pattern, route string, h http.Handler) {
		mux.Handle(pattern, a.count(route, h))
	}

	batch := func(pattern, route string) {
		mux.Handle(pattern, a.count(route, a.auth.wrapBatch(http.HandlerFunc(a.handleBatch))))
	}
	batch("POST /v1/batch", "/v1/batch")
	batch("POST /v1/import", "/v1/import")
	for _, typ := range []string{"track", "identify", "page", "screen", "group", "alias"} {
		route := "/v1/" + typ
		guarded("POST "+route, route, a.handleSingle(typ))
	}

	admin("GET /{$}", "/", a.page.serveHTML)
	admin("GET /v1/status", "/v1/status", a.handleStatus)
	admin("GET /v1/samples", "/v1/samples", a.page.serveSamples)
	admin("POST /v1/flush", "/v1/flush", a.handleFlush)
	admin("GET /v1/dead", "/v1/dead", a.handleDeadList)
	admin("GET /v1/dead/{id}", "/v1/dead/{id}", a.handleDeadGet)
	admin("POST /v1/dead/replay", "/v1/dead/replay", a.handleDeadReplay)
	admin("POST /v1/dead/purge", "/v1/dead/purge", a.handleDeadPurge)
	admin("POST /v1/forget", "/v1/forget", a.handleForget)

	open("GET /healthz", "/healthz", http.HandlerFunc(a.handleHealthz))
	open("GET /readyz", "/readyz", http.HandlerFunc(a.handleReadyz))
	open("GET /metrics", "/metrics", a.metrics.Handler())

	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such route: "+r.Method+" "+r.URL.Path)
	})
	return mux
}

// count wraps h so that each request is counted by route and status code.
func (a *Agent) count(route string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(rec, r)
		a.metrics.observeIngest(route, rec.code)
		if rec.code >= 400 {
			a.log.Debug("request refused", "route", route, "code", rec.code, "remote_addr", r.RemoteAddr)
		}
	})
}

// statusRecorder remembers the status code written through it.
type statusRecorder struct {
	http.ResponseWriter
	code  int
	wrote bool
}

// WriteHeader records code and passes it on.
func (s *statusRecorder) WriteHeader(code int) {
	if !s.wrote {
		s.code, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

// Write marks the header as written (200 unless set) and passes p on.
func (s *statusRecorder) Write(p []byte) (int, error) {
	s.wrote = true
	return s.ResponseWriter.Write(p)
}

// Unwrap gives http.ResponseController access to the underlying writer.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

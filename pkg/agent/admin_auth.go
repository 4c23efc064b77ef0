package agent

import (
	"context"
	"crypto/subtle"
	"fmt"
	"mime"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
)

// AdminConfig is admin.*: who may use the admin routes (the status page and its data,
// /v1/status, /v1/flush, /v1/dead*). Ingest credentials (write keys, ingest.token) never open
// them.
type AdminConfig struct {
	// Token is admin.token. When set, an admin request must carry it as
	// "Authorization: Bearer <Token>" or as the Basic auth password (any user name; what a
	// browser sends after its login prompt). "" → no admin token.
	Token string
	// AllowedHosts is admin.allowed_hosts: Host header values (a name, or name:port) that
	// admin requests may carry besides loopback addresses and "localhost", when neither
	// Token nor mTLS is set. It guards against DNS rebinding, where a web page's own name is
	// made to resolve to 127.0.0.1. nil → loopback names only.
	AllowedHosts []string
}

// Credential kinds an admin request was let in with, as the audit log names them.
const (
	adminByToken      = "admin_token" // admin.token, as Bearer or Basic password
	adminByClientCert = "client_cert" // a verified client certificate (ingest.tls.client_ca_file)
	adminByLoopback   = "loopback"    // no admin credential configured: loopback peer and Host
)

// adminGate guards the admin routes. Which check applies is decided once per request from the
// configuration current when it arrives:
//
//	admin.token set          → the token (Bearer, or Basic password), from any address
//	mTLS, no admin.token     → the connection's verified client certificate
//	neither                  → the peer must be a loopback address and Host a loopback name,
//	                           "localhost" or one of admin.allowed_hosts (DNS rebinding guard)
//
// State-changing routes (every admin route that is not a GET) also refuse cross-site browser
// requests (Sec-Fetch-Site, else Origin against Host) and any Content-Type but
// application/json, which a cross-site HTML form or a no-cors fetch cannot send: a web page the
// operator visits cannot purge, replay or flush through the operator's browser.
type adminGate struct {
	cur       atomic.Pointer[adminCreds]
	mtls      bool // every connection carries a verified client certificate
	crossSite *http.CrossOriginProtection
}

// adminCreds is one published admin configuration; never modified once stored.
type adminCreds struct {
	token []byte   // nil: none
	hosts []string // admin.allowed_hosts, lower case
}

func newAdminGate(cfg Config) *adminGate {
	g := &adminGate{mtls: cfg.TLS.mutual(), crossSite: http.NewCrossOriginProtection()}
	g.crossSite.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusForbidden, "cross-site request refused: admin routes that change state answer only "+
			"requests from the agent's own pages or from non-browser clients")
	}))
	g.set(cfg)
	return g
}

// set publishes cfg's admin.token and admin.allowed_hosts.
func (g *adminGate) set(cfg Config) {
	c := &adminCreds{}
	if cfg.Admin.Token != "" {
		c.token = []byte(cfg.Admin.Token)
	}
	for _, h := range cfg.Admin.AllowedHosts {
		c.hosts = append(c.hosts, strings.ToLower(strings.TrimSpace(h)))
	}
	g.cur.Store(c)
}

// mode names the check admin requests get, for the startup log line.
func (g *adminGate) mode() string {
	switch {
	case g.cur.Load().token != nil:
		return adminByToken
	case g.mtls:
		return adminByClientCert
	default:
		return adminByLoopback
	}
}

// adminCredential is the context key of the credential kind an admin request was let in with.
type adminCredential struct{}

// guard returns h behind the admin check; changesState adds the browser checks of a route
// that is not a plain read.
func (g *adminGate) guard(h http.Handler, changesState bool) http.Handler {
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kind, ok := g.admit(w, r)
		if !ok {
			return
		}
		if changesState && !isJSONContentType(r.Header.Get("Content-Type")) {
			writeError(w, http.StatusUnsupportedMediaType, "admin routes that change state need Content-Type: application/json "+
				"(outbox's client commands send it; with curl add -H 'Content-Type: application/json')")
			return
		}
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), adminCredential{}, kind)))
	})
	if changesState {
		return g.crossSite.Handler(inner)
	}
	return inner
}

// admit answers 401 or 403 and returns false unless r carries what the current configuration
// asks of an admin request; it returns the credential kind that let r in.
func (g *adminGate) admit(w http.ResponseWriter, r *http.Request) (string, bool) {
	c := g.cur.Load()
	switch {
	case c.token != nil:
		if presented := adminTokenOf(r); presented != nil && subtle.ConstantTimeCompare(presented, c.token) == 1 {
			return adminByToken, true
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="outbox admin", charset="UTF-8"`)
		writeError(w, http.StatusUnauthorized, "admin routes need admin.token: send Authorization: Bearer <admin.token> "+
			"(outbox's client commands send OUTBOX_ADMIN_TOKEN), or give it as the password when a browser asks; "+
			"ingest write keys and ingest.token do not open admin routes")
		return "", false
	case g.mtls:
		if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
			return adminByClientCert, true
		}
		writeError(w, http.StatusUnauthorized, "admin routes need a client certificate signed by ingest.tls.client_ca_file")
		return "", false
	}
	if !isLoopbackAddr(r.RemoteAddr) {
		writeError(w, http.StatusForbidden, "admin routes answer only loopback clients when admin.token is not set "+
			"(and no mTLS): set admin.token to use them from another host")
		return "", false
	}
	if !c.hostAllowed(r.Host) {
		writeError(w, http.StatusForbidden, fmt.Sprintf("Host %q is not allowed on admin routes without admin.token "+
			"(a guard against DNS rebinding): use 127.0.0.1 or localhost, add the name to admin.allowed_hosts, "+
			"or set admin.token", r.Host))
		return "", false
	}
	return adminByLoopback, true
}

// adminTokenOf returns the token r presents: a Bearer token, or the password of Basic auth.
// nil when r presents neither.
func adminTokenOf(r *http.Request) []byte {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return []byte(strings.TrimSpace(h[7:]))
	}
	if _, pass, ok := r.BasicAuth(); ok && pass != "" {
		return []byte(pass)
	}
	return nil
}

// hostAllowed reports whether a request's Host names the agent as a loopback client reaches
// it: a loopback IP, "localhost" (or a name under .localhost), or one of admin.allowed_hosts
// (matched with or without its port).
func (c *adminCreds) hostAllowed(hostport string) bool {
	hostport = strings.ToLower(hostport)
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return true
	}
	for _, a := range c.hosts {
		if a == host || a == hostport {
			return true
		}
	}
	return false
}

// isLoopbackAddr reports whether a RemoteAddr ("ip:port") is a loopback address.
func isLoopbackAddr(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// isJSONContentType reports whether a Content-Type header is application/json (parameters
// such as charset allowed).
func isJSONContentType(v string) bool {
	mt, _, err := mime.ParseMediaType(v)
	return err == nil && mt == "application/json"
}

// adminCredentialOf returns the credential kind r was let in with, for the audit log.
func adminCredentialOf(r *http.Request) string {
	kind, _ := r.Context().Value(adminCredential{}).(string)
	return kind
}

// LoopbackOnly returns h behind the check admin routes get without an admin credential: the
// peer must be a loopback address and Host a loopback name, "localhost" or one of
// allowedHosts (403 otherwise). outbox run puts its profiling server (debug.pprof_listen)
// behind it, so that a web page cannot read profiles through DNS rebinding.
func LoopbackOnly(h http.Handler, allowedHosts []string) http.Handler {
	g := newAdminGate(Config{Admin: AdminConfig{AllowedHosts: allowedHosts}})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := g.admit(w, r); ok {
			h.ServeHTTP(w, r)
		}
	})
}

package agent

import (
	"context"
	"crypto/subtle"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/outboxhq/outbox/pkg/event"
)

// authenticator checks ingest and admin requests against the configured write keys (Basic
// auth username) and token (Bearer). With neither configured every request passes. The
// credentials can be replaced while requests are served (Agent.Reconfigure): each request is
// checked against the set current when it arrives.
type authenticator struct {
	cur atomic.Pointer[credentials]
	// refused is told of every request refused for its credential, with the credential it
	// presented ("" for none). Set once by New before serving.
	refused func(r *http.Request, presented string)
}

// credentials are one set of accepted credentials; never modified once published.
type credentials struct {
	writeKeys [][]byte
	token     []byte
}

func newAuthenticator(cfg Config) *authenticator {
	a := &authenticator{refused: func(*http.Request, string) {}}
	a.set(cfg)
	return a
}

// set replaces the accepted credentials with cfg's ingest.write_keys and ingest.token.
func (a *authenticator) set(cfg Config) {
	c := &credentials{}
	for _, k := range cfg.credentialKeys() {
		c.writeKeys = append(c.writeKeys, []byte(k))
	}
	if cfg.Token != "" {
		c.token = []byte(cfg.Token)
	}
	a.cur.Store(c)
}

// enabled reports whether any credential is configured.
func (a *authenticator) enabled() bool { return a.cur.Load().enabled() }

func (c *credentials) enabled() bool { return len(c.writeKeys) > 0 || c.token != nil }

// allow reports whether r carries an accepted credential. Comparisons are constant-time and
// every configured key is compared, so timing does not reveal which key (if any) matched.
func (c *credentials) allow(r *http.Request) bool {
	if !c.enabled() {
		return true
	}
	ok := 0
	if user, _, hasBasic := r.BasicAuth(); hasBasic && len(c.writeKeys) > 0 {
		u := []byte(user)
		for _, k := range c.writeKeys {
			ok |= subtle.ConstantTimeCompare(u, k)
		}
	}
	if c.token != nil {
		if h := r.Header.Get("Authorization"); len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
			ok |= subtle.ConstantTimeCompare([]byte(strings.TrimSpace(h[7:])), c.token)
		}
	}
	return ok == 1
}

// wrap returns h guarded by the credential check; a request without an accepted credential
// gets 401 and never reaches h.
func (a *authenticator) wrap(h http.Handler) http.Handler { return a.guard(h, false) }

// wrapBatch is wrap for the batch routes, where Segment's API also takes the write key as the
// body's top-level "writeKey" (analytics-node 2.x sends it only there): a request with no
// Authorization header at all, when write keys are configured, reaches h with the credentials
// in its context, and h checks the body's key once it has read it (bodyKeyAllowed).
func (a *authenticator) wrapBatch(h http.Handler) http.Handler { return a.guard(h, true) }

func (a *authenticator) guard(h http.Handler, bodyKey bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := a.cur.Load()
		if bodyKey && len(c.writeKeys) > 0 && r.Header.Get("Authorization") == "" {
			h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), bodyKeyCheck{}, c)))
			return
		}
		if !c.allow(r) {
			a.refused(r, presentedCredential(r))
			unauthorized(w, c)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// bodyKeyCheck is the context key of the credentials a batch body's writeKey is checked against.
type bodyKeyCheck struct{}

// needsBodyKey reports whether wrapBatch left the check of r's credential to the handler: the
// body's writeKey decides, so the body is read before r is authenticated (ingest bounds that
// read more tightly).
func needsBodyKey(r *http.Request) bool {
	_, check := r.Context().Value(bodyKeyCheck{}).(*credentials)
	return check
}

// bodyKeyAllowed reports whether r may go on given its batch body: true unless wrapBatch left
// the check of the body's writeKey to the handler and that key is missing or not accepted.
// key is the writeKey the body carries ("" for none).
func bodyKeyAllowed(r *http.Request, body []byte) (ok bool, c *credentials, key string) {
	c, check := r.Context().Value(bodyKeyCheck{}).(*credentials)
	if !check {
		return true, nil, ""
	}
	key, found := event.WriteKey(body) // the top level only: the events are parsed once, later
	if !found || key == "" {
		return false, c, ""
	}
	k, match := []byte(key), 0
	for _, want := range c.writeKeys {
		match |= subtle.ConstantTimeCompare(k, want)
	}
	return match == 1, c, key
}

// unauthorized answers 401, asking for Basic auth when write keys are configured.
// The connection is closed after the answer: the server would otherwise read what is left of
// an unauthenticated sender's body before answering, to keep the connection.
func unauthorized(w http.ResponseWriter, c *credentials) {
	w.Header().Set("Connection", "close")
	if len(c.writeKeys) > 0 {
		w.Header().Set("WWW-Authenticate", `Basic realm="outbox"`)
	}
	writeError(w, http.StatusUnauthorized, "missing or unknown write key or token")
}

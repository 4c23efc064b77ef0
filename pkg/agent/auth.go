package agent

import (
	"crypto/subtle"
	"net/http"
	"strings"
)

// authenticator checks ingest and admin requests against the configured write keys (Basic
// auth username) and token (Bearer). With neither configured every request passes.
type authenticator struct {
	writeKeys [][]byte
	token     []byte
}

func newAuthenticator(cfg Config) *authenticator {
	a := &authenticator{}
	for _, k := range cfg.WriteKeys {
		a.writeKeys = append(a.writeKeys, []byte(k))
	}
	if cfg.Token != "" {
		a.token = []byte(cfg.Token)
	}
	return a
}

// enabled reports whether any credential is configured.
func (a *authenticator) enabled() bool { return len(a.writeKeys) > 0 || a.token != nil }

// allow reports whether r carries an accepted credential. Comparisons are constant-time and
// every configured key is compared, so timing does not reveal which key (if any) matched.
func (a *authenticator) allow(r *http.Request) bool {
	if !a.enabled() {
		return true
	}
	ok := 0
	if user, _, hasBasic := r.BasicAuth(); hasBasic && len(a.writeKeys) > 0 {
		u := []byte(user)
		for _, k := range a.writeKeys {
			ok |= subtle.ConstantTimeCompare(u, k)
		}
	}
	if a.token != nil {
		if h := r.Header.Get("Authorization"); len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
			ok |= subtle.ConstantTimeCompare([]byte(strings.TrimSpace(h[7:])), a.token)
		}
	}
	return ok == 1
}

// wrap returns h guarded by the credential check; a request without an accepted credential
// gets 401 and never reaches h.
func (a *authenticator) wrap(h http.Handler) http.Handler {
	if !a.enabled() {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !a.allow(r) {
			if len(a.writeKeys) > 0 {
				w.Header().Set("WWW-Authenticate", `Basic realm="outbox"`)
			}
			writeError(w, http.StatusUnauthorized, "missing or unknown write key or token")
			return
		}
		h.ServeHTTP(w, r)
	})
}

package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Why an ingest request's credential was refused (outbox_ingest_auth_refused_total's reason).
const (
	refusedMissing = "missing" // no credential at all
	refusedUnknown = "unknown" // a credential that is not accepted
)

// refusalLogEvery is how often at most a refused ingest credential is logged at warn; the
// refusals in between are counted in the next line (suppressed), so a flood of wrong keys
// costs one line a second.
const refusalLogEvery = time.Second

// refusals counts and logs refused ingest credentials. The log names the credential by a
// short hash (the same key gives the same hash, so an operator can tell one stale key from a
// scan of many), never by its value.
type refusals struct {
	log     *slog.Logger
	now     func() time.Time
	counter *prometheus.CounterVec

	mu         sync.Mutex // guards the fields below
	last       time.Time  // when the last line was written
	suppressed int        // refusals since then that wrote none
}

// registerRefusals creates outbox_ingest_auth_refused_total{reason}, each reason at 0.
func (m *Metrics) registerRefusals() error {
	m.authRefused = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "ingest_auth_refused_total",
		Help: "Ingest requests refused for their credential, by reason: missing (none sent) or unknown (not accepted)."},
		[]string{"reason"})
	for _, r := range []string{refusedMissing, refusedUnknown} {
		m.authRefused.WithLabelValues(r)
	}
	if err := m.reg.Register(m.authRefused); err != nil {
		return fmt.Errorf("registering agent metrics: %w", err)
	}
	return nil
}

// refused records one refused request; presented is the credential it carried ("" for none).
func (f *refusals) refused(r *http.Request, presented string) {
	reason := refusedUnknown
	if presented == "" {
		reason = refusedMissing
	}
	f.counter.WithLabelValues(reason).Inc()
	now := f.now()
	f.mu.Lock()
	if !f.last.IsZero() && now.Sub(f.last) < refusalLogEvery {
		f.suppressed++
		f.mu.Unlock()
		return
	}
	suppressed := f.suppressed
	f.last, f.suppressed = now, 0
	f.mu.Unlock()
	f.log.Warn("ingest credential refused", "reason", reason, "key_hash", keyHash(presented),
		"route", r.URL.Path, "remote_addr", r.RemoteAddr, "suppressed", suppressed)
}

// keyHash names a credential in logs without revealing it: the first 12 hex digits of its
// SHA-256, "none" for no credential.
func keyHash(key string) string {
	if key == "" {
		return "none"
	}
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:6])
}

// presentedCredential returns the credential r carries in its header: the Basic auth user
// name (a write key) or the Bearer token; "" when it carries neither.
func presentedCredential(r *http.Request) string {
	if user, _, ok := r.BasicAuth(); ok {
		return user
	}
	if h := r.Header.Get("Authorization"); len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return r.Header.Get("Authorization")
}

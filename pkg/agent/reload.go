package agent

import (
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Results of a configuration reload (outbox_config_reloads_total's result label).
const (
	// ReloadApplied: every change took effect.
	ReloadApplied = "applied"
	// ReloadPartial: the changes that can be made live took effect; the others need a restart
	// and kept their old values.
	ReloadPartial = "partial"
	// ReloadRejected: the new configuration is invalid; nothing changed.
	ReloadRejected = "rejected"
)

// Reload is the outcome of one configuration reload, as the process that made it (outbox
// run, on SIGHUP) reports it to RecordReload.
type Reload struct {
	Result  string   // ReloadApplied, ReloadPartial or ReloadRejected
	Message string   // why it was rejected, or what needs a restart; never a secret
	Applied []string // keys whose new value took effect
	Restart []string // keys whose change needs a restart (they kept their old values)
}

// ReloadStatus is the last configuration reload, in /v1/status ("reload"; absent before the
// first).
type ReloadStatus struct {
	// Seq counts the reloads since the agent started: 1 for the first. A client that signals
	// the agent waits for it to grow.
	Seq     int64     `json:"seq"`
	At      time.Time `json:"at"`
	Result  string    `json:"result"` // applied | partial | rejected
	Message string    `json:"message,omitempty"`
	// Applied lists the keys changed live; RestartNeeded those changed that need a restart.
	Applied       []string `json:"applied,omitempty"`
	RestartNeeded []string `json:"restart_needed,omitempty"`
}

// reloadLog holds the last reload for the status.
type reloadLog struct {
	mu   sync.Mutex // guards the fields below
	seq  int64
	last *ReloadStatus
}

// Reconfigure replaces the ingest credentials (ingest.write_keys and ingest.token), the admin
// ones (admin.token, admin.allowed_hosts) and which source each ingest write key selects
// (Sources.Keys: sources.<name>.write_keys, also accepted as credentials outside relay mode) of
// a running agent. cfg is validated whole, as New validates it, against the rule that a
// non-loopback listener needs a credential or mTLS; an invalid one changes nothing and its
// error is returned. The other fields of cfg are not read: the listener, its TLS files (they
// are re-read by ReloadTLS and when they change), the limits and relay mode (Sources.Relay)
// stay as New set them up. Requests are checked and routed with the configuration current
// when they arrive; none is refused or dropped by the swap. Sources.Keys should name only
// sources the uploader client knows: reconfigure the client first.
func (a *Agent) Reconfigure(cfg Config) error {
	cfg.Listen, cfg.TLS = a.cfg.Listen, a.cfg.TLS // the rule between keys is checked on the listener in use
	cfg.Sources.Relay = a.cfg.Sources.Relay
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg = cfg.withDefaults()
	a.auth.set(cfg)
	a.admin.set(cfg)
	a.setSources(cfg.Sources)
	return nil
}

// RecordReload counts r in outbox_config_reloads_total and shows it as the last reload on
// /v1/status, the status page and `outbox status`.
func (a *Agent) RecordReload(r Reload) {
	a.metrics.reloads.WithLabelValues(r.Result).Inc()
	now := time.Now()
	if a.cfg.Clock != nil {
		now = a.cfg.Clock.Now()
	}
	a.reloads.mu.Lock()
	defer a.reloads.mu.Unlock()
	a.reloads.seq++
	a.reloads.last = &ReloadStatus{Seq: a.reloads.seq, At: now.UTC().Truncate(time.Millisecond), Result: r.Result, Message: r.Message,
		Applied: append([]string(nil), r.Applied...), RestartNeeded: append([]string(nil), r.Restart...)}
}

// lastReload returns the last reload, nil before the first.
func (a *Agent) lastReload() *ReloadStatus {
	a.reloads.mu.Lock()
	defer a.reloads.mu.Unlock()
	if a.reloads.last == nil {
		return nil
	}
	cp := *a.reloads.last
	return &cp
}

// registerReloads creates outbox_config_reloads_total, each result at 0 from the start.
func (m *Metrics) registerReloads() error {
	m.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "config_reloads_total",
		Help: "Configuration reloads (SIGHUP, outbox reload), by result: applied, partial (some keys need a restart) or rejected (invalid; nothing changed)."},
		[]string{"result"})
	for _, r := range []string{ReloadApplied, ReloadPartial, ReloadRejected} {
		m.reloads.WithLabelValues(r)
	}
	if err := m.reg.Register(m.reloads); err != nil {
		return fmt.Errorf("registering agent metrics: %w", err)
	}
	return nil
}

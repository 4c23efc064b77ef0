package agent

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/event"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// Several sources: the ingest write key of a request (the Basic auth username Segment SDKs
// send, else a batch body's top-level writeKey) selects the source its events go to. A key that
// a configured source lists (sources.<name>.write_keys) selects that source; in relay mode
// (sources.relay) any other key becomes a source of its own on first use
// (uploader.Client.RelaySource), up to sources.max, past which the request is refused with 429
// and counted (outbox_sources_refused_total); otherwise, and without a key, the events go to
// the default source. Without sources configured every event goes to the default source, as
// with a single source. A reload replaces the key → source mapping (Reconfigure): a removed
// source's keys go where any unlisted key goes from the next request on.

// SourcesConfig is how ingest write keys select sources.
type SourcesConfig struct {
	// Keys maps an ingest write key to the source it selects (sources.<name>.write_keys).
	// The keys are secrets. Outside relay mode they are also accepted as credentials, as
	// ingest.write_keys are.
	Keys map[string]string
	// Relay is sources.relay: an unlisted key becomes a source of its own. In relay mode no
	// write key is a credential (a write key is not a secret): off loopback, ingest.token or
	// mTLS must be set.
	Relay bool
}

// validateSources refuses relay mode on a non-loopback listener without ingest.token or mTLS.
func (c Config) validateSources(host string) error {
	if c.Sources.Relay && !isLoopback(host) && c.Token == "" && !c.TLS.mutual() {
		return &errs.KeyError{Key: "sources.relay", Related: []string{"ingest.listen"}, Err: fmt.Errorf(
			"%w: sources.relay is on and ingest.listen %q is not a loopback address: in relay mode a write key selects a "+
				"source and is not a credential, so set ingest.token or ingest.tls.client_ca_file (mTLS), or listen on 127.0.0.1",
			ErrUnauthenticated, c.Listen)}
	}
	return nil
}

// credentialKeys are the write keys accepted as credentials: ingest.write_keys and the keys
// of the configured sources; none in relay mode.
func (c Config) credentialKeys() []string {
	if c.Sources.Relay {
		return nil
	}
	keys := append([]string(nil), c.WriteKeys...)
	for k := range c.Sources.Keys {
		keys = append(keys, k)
	}
	return keys
}

// setSources publishes the key → source mapping of src (a copy: the caller may change its own).
// Relay mode stays as New set it (sources.relay needs a restart).
func (a *Agent) setSources(src SourcesConfig) {
	next := &SourcesConfig{Keys: maps.Clone(src.Keys), Relay: a.cfg.Sources.Relay}
	a.sources.Store(next)
}

// ingestKey is the request's ingest write key: its Basic auth username, else the body's
// top-level writeKey; "" when it has neither.
func ingestKey(r *http.Request, body []byte, bodyKey string) string {
	if user, _, ok := r.BasicAuth(); ok && user != "" {
		return user
	}
	if bodyKey != "" {
		return bodyKey // already read from the body by the credential check
	}
	key, _ := event.WriteKey(body)
	return key
}

// selectSource returns the source the request's events go to; false when the request was
// answered (429 past sources.max, 503 when the relay source could not be saved).
func (a *Agent) selectSource(w http.ResponseWriter, r *http.Request, body []byte, bodyKey string) (string, bool) {
	src := a.sources.Load()
	if len(src.Keys) == 0 && !src.Relay {
		return uploader.DefaultSource, true
	}
	key := ingestKey(r, body, bodyKey)
	if key == "" {
		return uploader.DefaultSource, true
	}
	if name, ok := src.Keys[key]; ok {
		return name, true
	}
	if !src.Relay {
		return uploader.DefaultSource, true
	}
	name, err := a.client.RelaySource(r.Context(), key)
	switch {
	case err == nil:
		return name, true
	case errors.Is(err, uploader.ErrTooManySources):
		a.metrics.sourcesRefused.Inc()
		a.log.Warn("ingest write key refused: sources.max reached", "error", err)
		w.Header().Set("Retry-After", "60")
		writeError(w, http.StatusTooManyRequests, fmt.Sprintf(
			"this write key would be a new source, and the agent has all the sources it may have (%v); raise sources.max or list the key under a configured source", err))
		return "", false
	}
	a.storeFailed(w, err)
	return "", false
}

// sourceFull answers a request whose source's share of the queue is full: 503 with
// Retry-After, for that source only (the queue is not full for the others, so /readyz stays
// ready).
func sourceFull(w http.ResponseWriter, err error) {
	writeUnavailable(w, fmt.Sprintf("%v; retry later", err))
}

// SourceStatus is one source's row of /v1/status.
type SourceStatus struct {
	Name  string `json:"name"`
	Relay bool   `json:"relay,omitempty"`
	// Removed: a reload removed the source; it drains the events it holds with its last
	// settings, then leaves the list.
	Removed     bool       `json:"removed,omitempty"`
	Events      int64      `json:"events"`
	Bytes       int64      `json:"bytes"`
	OldestAge   float64    `json:"oldest_age_seconds"`
	DeadBatches int64      `json:"dead_batches"`
	DeadEvents  int64      `json:"dead_events"`
	LastSuccess *time.Time `json:"last_success,omitempty"`
	// Paused says that this source's delivery is held while the others go on, and
	// PausedReason why: "retry_after" (the collector asked its write key to wait until
	// PausedUntil), "auth_refused" (the destination refuses its credentials: PausedCode is the
	// refusal, PausedKey the configuration key to fix, PausedUntil the next probe) or
	// "breaker_open" (its endpoint or key is failing: one probe at a time, the next at
	// PausedUntil).
	Paused       bool       `json:"paused"`
	PausedReason string     `json:"paused_reason,omitempty"`
	PausedUntil  *time.Time `json:"paused_until,omitempty"`
	PausedCode   string     `json:"paused_code,omitempty"`
	PausedKey    string     `json:"paused_key,omitempty"`
	// InFlight is how many of its batches are leased and not yet delivered or dead-lettered.
	InFlight int `json:"in_flight"`
}

// sourceRows are the per-source rows of /v1/status, with each source's dead letters counted
// from the dead-letter list (the status route is not a hot path).
func (a *Agent) sourceRows(rows []uploader.SourceStats) []SourceStatus {
	if len(rows) <= 1 {
		return nil // one source: the queue and dead sections say it all
	}
	type dead struct{ batches, events int64 }
	deadBy := map[string]dead{}
	if list, err := a.client.DeadLetters().List(); err == nil {
		for _, d := range list {
			v := deadBy[d.Info.Source]
			v.batches++
			v.events += int64(d.Count)
			deadBy[d.Info.Source] = v
		}
	}
	out := make([]SourceStatus, 0, len(rows))
	for _, r := range rows {
		out = append(out, SourceStatus{Name: r.Name, Relay: r.Relay, Removed: r.Removed, Events: r.Events, Bytes: r.Bytes,
			OldestAge: r.OldestAge.Seconds(), DeadBatches: deadBy[r.Name].batches, DeadEvents: deadBy[r.Name].events,
			LastSuccess: optTime(r.LastSuccess), Paused: r.Paused, PausedReason: r.PausedReason,
			PausedUntil: optTime(r.PausedUntil), PausedCode: r.AuthCode, PausedKey: r.AuthKey, InFlight: r.InFlight})
	}
	return out
}

// sourceMetrics are the per-source series: a source label, bounded by sources.max.
type sourceMetrics struct {
	m                                    *Metrics
	queueEvents, queueBytes, lastSuccess *prometheus.Desc
	paused, inFlight                     *prometheus.Desc
}

// registerSources registers the per-source gauges and outbox_sources_refused_total.
func (m *Metrics) registerSources() error {
	m.sourcesRefused = prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "sources_refused_total",
		Help: "Ingest requests refused because their write key would be a new relay source past sources.max."})
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(namespace+"_"+name, help, []string{"source"}, nil)
	}
	sm := &sourceMetrics{m: m,
		queueEvents: desc("source_queue_events", "Events waiting in the queue, by source."),
		queueBytes:  desc("source_queue_bytes", "Stored bytes of the events waiting, by source."),
		lastSuccess: desc("source_last_upload_success_timestamp_seconds", "Unix time of the source's last delivered batch since start; 0 when none."),
		paused:      desc("source_paused", "1 while the source's delivery is held (a Retry-After, refused credentials, an open breaker; /v1/status says which), else 0."),
		inFlight:    desc("source_in_flight_batches", "The source's batches leased and not yet delivered or dead-lettered."),
	}
	for _, c := range []prometheus.Collector{m.sourcesRefused, sm} {
		if err := m.reg.Register(c); err != nil {
			return fmt.Errorf("registering agent metrics: %w", err)
		}
	}
	return nil
}

// Describe implements prometheus.Collector.
func (s *sourceMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- s.queueEvents
	ch <- s.queueBytes
	ch <- s.lastSuccess
	ch <- s.paused
	ch <- s.inFlight
}

// Collect implements prometheus.Collector: one series per source and gauge.
func (s *sourceMetrics) Collect(ch chan<- prometheus.Metric) {
	src := s.m.source.Load()
	if src == nil {
		return
	}
	for _, r := range (*src)().sources {
		last := 0.0
		if !r.LastSuccess.IsZero() {
			last = float64(r.LastSuccess.UnixNano()) / 1e9
		}
		ch <- prometheus.MustNewConstMetric(s.queueEvents, prometheus.GaugeValue, float64(r.Events), r.Name)
		ch <- prometheus.MustNewConstMetric(s.queueBytes, prometheus.GaugeValue, float64(r.Bytes), r.Name)
		ch <- prometheus.MustNewConstMetric(s.lastSuccess, prometheus.GaugeValue, last, r.Name)
		paused := 0.0
		if r.Paused {
			paused = 1
		}
		ch <- prometheus.MustNewConstMetric(s.paused, prometheus.GaugeValue, paused, r.Name)
		ch <- prometheus.MustNewConstMetric(s.inFlight, prometheus.GaugeValue, float64(r.InFlight), r.Name)
	}
}

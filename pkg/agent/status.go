package agent

import (
	"net/http"
	"time"

	"github.com/outboxhq/outbox/internal/version"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// Status is the JSON answer of GET /v1/status (docs/CONTRACT.md, "Status"). Times are written with
// TimeLayout (RFC 3339, UTC, milliseconds) and absent when not known. cmd/outbox decodes it
// for `outbox status`.
type Status struct {
	Queue  QueueStatus  `json:"queue"`
	Dead   DeadStatus   `json:"dead"`
	Upload UploadStatus `json:"upload"`
	Retry  RetryStatus  `json:"retry"`
	Store  StoreStatus  `json:"store"`
	// AuthPause says whether delivery is paused because the destination refuses our
	// credentials (upload.on_auth_failure: pause), and what to fix.
	AuthPause AuthPauseStatus `json:"auth_pause"`
	// Destination is the kind of destination the worker delivers to: "http" or "kafka".
	Destination string `json:"destination,omitempty"`
	Version     string `json:"version"`
	// Reload is the last configuration reload (reload.go); absent before the first.
	Reload *ReloadStatus `json:"reload,omitempty"`
	// Sources are each source's queued and dead events and last delivery (sources.go);
	// absent with one source.
	Sources []SourceStatus `json:"sources,omitempty"`
}

// QueueStatus describes the events waiting for upload.
type QueueStatus struct {
	Events           int64   `json:"events"`
	Bytes            int64   `json:"bytes"`
	OldestAgeSeconds float64 `json:"oldest_age_seconds"` // 0 when the queue is empty
}

// DeadStatus describes the dead-letter bucket.
type DeadStatus struct {
	Batches int64 `json:"batches"`
	Events  int64 `json:"events"`
	Bytes   int64 `json:"bytes"`
}

// UploadStatus describes the upload history of this process.
type UploadStatus struct {
	LastAttempt  *time.Time `json:"last_attempt,omitempty"`
	LastSuccess  *time.Time `json:"last_success,omitempty"`
	LastResult   string     `json:"last_result,omitempty"`   // HTTP status or network error class
	FailingSince *time.Time `json:"failing_since,omitempty"` // first failure since the last success
	InFlight     int        `json:"in_flight"`               // batches sent and not yet delivered or dead-lettered
	Concurrency  int        `json:"concurrency_limit"`       // how many may be in flight now (upload.concurrency, or auto's limit)
}

// RetryStatus describes the retry state of the head batch.
type RetryStatus struct {
	Path         string     `json:"path"` // none | rate_limit | backoff | auth (held on refused credentials)
	Attempt      int        `json:"attempt"`
	WaitingUntil *time.Time `json:"waiting_until,omitempty"`
}

// AuthPauseStatus describes a pause of delivery on refused credentials (a 401 or 403): the
// queue is kept and the head batch is probed about once a minute until the destination
// accepts us again. Only Paused is set when delivery is not paused.
type AuthPauseStatus struct {
	Paused    bool       `json:"paused"`
	Since     *time.Time `json:"since,omitempty"`
	Code      string     `json:"code,omitempty"` // the last refusal: "401", "403", a Kafka error name
	Key       string     `json:"key,omitempty"`  // the configuration key to fix: upload.write_key, …
	NextProbe *time.Time `json:"next_probe,omitempty"`
	Message   string     `json:"message,omitempty"` // what to do, as the warn log says it
}

// authPauseStatus maps the client's pause on refused credentials onto its status.
func authPauseStatus(a uploader.AuthPauseStats) AuthPauseStatus {
	if !a.Paused {
		return AuthPauseStatus{}
	}
	return AuthPauseStatus{Paused: true, Since: optTime(a.Since), Code: a.Code, Key: a.Key, NextProbe: optTime(a.NextProbe),
		Message: a.Message}
}

// StoreStatus describes the bbolt file.
type StoreStatus struct {
	FileBytes int64  `json:"file_bytes"`
	Sync      string `json:"sync"` // always | none
}

// handleStatus serves GET /v1/status.
func (a *Agent) handleStatus(w http.ResponseWriter, _ *http.Request) {
	stats := a.client.Stats()
	st := statusFromStats(stats)
	st.Reload = a.lastReload()
	st.Sources = a.sourceRows(stats.Sources)
	writeJSON(w, http.StatusOK, st)
}

// optTime returns nil for a zero time, else the time in UTC truncated to milliseconds.
func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC().Truncate(time.Millisecond)
	return &u
}

// statusFromStats maps the client's stats onto the /v1/status shape.
func statusFromStats(s uploader.Stats) Status {
	path := s.Retry.Path
	if path == "" {
		path = uploader.PathNone
	}
	return Status{
		Destination: s.Upload.Destination,
		Queue:       QueueStatus{Events: s.Queue.Events, Bytes: s.Queue.Bytes, OldestAgeSeconds: s.Queue.OldestAge.Seconds()},
		Dead:        DeadStatus{Batches: s.Dead.Batches, Events: s.Dead.Events, Bytes: s.Dead.Bytes},
		Upload: UploadStatus{
			LastAttempt:  optTime(s.Upload.LastAttempt),
			LastSuccess:  optTime(s.Upload.LastSuccess),
			LastResult:   s.Upload.LastResult,
			FailingSince: optTime(s.Upload.FailingSince),
			InFlight:     s.Upload.InFlight,
			Concurrency:  s.Upload.ConcurrencyLimit,
		},
		Retry:     RetryStatus{Path: path, Attempt: s.Retry.Attempt, WaitingUntil: optTime(s.Retry.WaitingUntil)},
		Store:     StoreStatus{FileBytes: s.Store.FileBytes, Sync: s.Store.Sync},
		AuthPause: authPauseStatus(s.AuthPause),
		Version:   version.Version,
	}
}

// gaugesFromStats maps the client's stats onto the scrape-time gauges.
func gaugesFromStats(s uploader.Stats) gaugeValues {
	return gaugeValues{
		queueEvents:   float64(s.Queue.Events),
		queueBytes:    float64(s.Queue.Bytes),
		pendingEvents: float64(s.Queue.PendingEvents),
		pendingBytes:  float64(s.Queue.PendingBytes),
		oldestAge:     s.Queue.OldestAge.Seconds(),
		deadEvents:    float64(s.Dead.Events),
		fileBytes:     float64(s.Store.FileBytes),
		lastSuccess:   s.Upload.LastSuccess,
		inFlight:      float64(s.Upload.InFlight),
		authPaused:    boolGauge(s.AuthPause.Paused),
		limit:         float64(s.Upload.ConcurrencyLimit),
		sources:       s.Sources,
	}
}

// boolGauge is 1 for true, 0 for false.
func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

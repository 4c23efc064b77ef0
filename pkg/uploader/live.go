package uploader

import (
	"time"

	"github.com/outboxhq/outbox/pkg/budget"
	"github.com/outboxhq/outbox/pkg/event"
)

// settings are the values of a Config that Reconfigure changes on a running client. The worker
// reads the current ones once at the start of each lease and of each attempt (and each lease
// gets its retry budget from them), so an attempt in flight finishes with the settings it
// started with and the next one uses the new. They are never modified once published.
type settings struct {
	batch      BatchConfig
	leaseBytes int // batch.max_bytes minus the envelope and commas: what Lease may take
	retry      budget.Config
	timeout    time.Duration // upload.timeout
	split      bool          // upload.split_rejected
	fixed      int           // upload.concurrency as a number; 0 for auto
	onAuth     string        // upload.on_auth_failure
	authKey    string        // the key that holds our credentials: upload.write_key, or upload.headers without one
}

// newSettings takes the live values of cfg (defaults filled).
func newSettings(cfg Config) *settings {
	return &settings{
		batch:      cfg.Batch,
		leaseBytes: max(cfg.Batch.MaxBytes-event.BatchEnvelopeBytes-cfg.Batch.MaxEvents, cfg.Limits.MaxEventBytes),
		retry:      cfg.Retry,
		timeout:    cfg.Upload.Timeout,
		split:      cfg.Upload.SplitRejected,
		fixed:      cfg.Upload.fixedConcurrency(),
		onAuth:     cfg.Upload.OnAuthFailure,
		authKey:    credentialKey(cfg.Upload),
	}
}

// credentialKey is the key that carries our credentials to the collector: upload.write_key, or
// upload.headers when only they can (no write key set).
func credentialKey(u UploadConfig) string {
	if u.WriteKey == "" && len(u.Headers) > 0 {
		return "upload.headers"
	}
	return "upload.write_key"
}

// settings returns the current live settings.
func (w *worker) settings() *settings { return w.live.Load() }

// probePace is the breaker's probe schedule: the n-th probe of an outage goes no sooner than
// one batch failing alone would make its n-th retry, counted from the first failure, under the
// retry.* settings in force.
func (w *worker) probePace(n int) time.Duration { return budget.Unjittered(w.settings().retry, n) }

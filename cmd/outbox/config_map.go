package main

import (
	"errors"
	"log/slog"
	"net/url"

	"github.com/outboxhq/outbox/pkg/agent"
	"github.com/outboxhq/outbox/pkg/store"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// uploaderConfig maps the effective configuration onto the embeddable client's.
func (c *Config) uploaderConfig() uploader.Config {
	u := uploader.DefaultConfig()
	u.DataDir = c.DataDir
	u.Limits = uploader.LimitsConfig{MaxEventBytes: int(c.Limits.MaxEventBytes), MaxRequestBytes: int(c.Limits.MaxRequestBytes)}
	u.Upload = uploader.UploadConfig{
		Endpoint:      c.Upload.Endpoint,
		WriteKey:      c.Upload.WriteKey,
		Format:        c.Upload.Format,
		Gzip:          c.Upload.Gzip,
		Timeout:       c.Upload.Timeout,
		Headers:       c.Upload.Headers,
		CAFile:        c.Upload.CAFile,
		SplitRejected: c.Upload.SplitRejected,
	}
	u.Batch = uploader.BatchConfig{MaxEvents: int(c.Batch.MaxEvents), MaxBytes: int(c.Batch.MaxBytes), Interval: c.Batch.Interval}
	u.Retry.MaxRetries = int(c.Retry.MaxRetries)
	u.Retry.BackoffBase = c.Retry.BackoffBase
	u.Retry.BackoffCap = c.Retry.BackoffCap
	u.Retry.MaxTotalBackoff = c.Retry.MaxTotalBackoff
	u.Retry.RetryAfterCap = c.Retry.RetryAfterCap
	u.Retry.MaxRateLimitDuration = c.Retry.MaxRateLimitDuration
	u.Queue = uploader.QueueConfig{MaxBytes: c.Queue.MaxBytes, WhenFull: c.Queue.WhenFull, Sync: c.Queue.Sync}
	u.Dead = uploader.DeadConfig{MaxBytes: c.Dead.MaxBytes}
	return u
}

// agentConfig maps the effective configuration onto the agent's.
func (c *Config) agentConfig(log *slog.Logger) agent.Config {
	return agent.Config{
		Listen:               c.Ingest.Listen,
		WriteKeys:            c.Ingest.WriteKeys,
		Token:                c.Ingest.Token,
		AllowUnauthenticated: c.Ingest.AllowUnauthenticated,
		MaxRequestBytes:      c.Limits.MaxRequestBytes,
		MaxEventBytes:        int(c.Limits.MaxEventBytes),
		ShutdownTimeout:      c.Shutdown.Timeout,
		Logger:               log,
	}
}

// storeError returns the store's own message for a locked or corrupt data directory (it names
// the fix: stop the other process, or `outbox recover`), without the wrapping layers above it.
func storeError(err error) error {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if _, ok := e.(*store.CorruptError); ok {
			return e
		}
		if errors.Unwrap(e) == store.ErrLocked {
			return e
		}
	}
	return err
}

// redactURL hides credentials embedded in a URL (https://user:pass@host → https://<redacted>@host).
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	u.User = url.User("REDACTED")
	return u.String()
}

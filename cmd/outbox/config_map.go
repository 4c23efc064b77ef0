package main

import (
	"errors"
	"log/slog"
	"net/url"

	"github.com/outboxhq/outbox/pkg/agent"
	"github.com/outboxhq/outbox/pkg/budget"
	"github.com/outboxhq/outbox/pkg/store"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// uploaderConfig maps the effective configuration onto the embeddable client's.
func (c *Config) uploaderConfig() uploader.Config {
	return uploader.Config{
		DataDir: c.DataDir,
		Limits: uploader.LimitsConfig{
			MaxEventBytes:   int(c.Limits.MaxEventBytes),
			MaxRequestBytes: int(c.Limits.MaxRequestBytes),
		},
		Upload: uploader.UploadConfig{
			Endpoint:      c.Upload.Endpoint,
			WriteKey:      c.Upload.WriteKey,
			Format:        c.Upload.Format,
			Gzip:          c.Upload.Gzip,
			Timeout:       c.Upload.Timeout,
			Headers:       c.Upload.Headers,
			CAFile:        c.Upload.CAFile,
			SplitRejected: c.Upload.SplitRejected,
		},
		Batch: uploader.BatchConfig{
			MaxEvents: int(c.Batch.MaxEvents),
			MaxBytes:  int(c.Batch.MaxBytes),
			Interval:  c.Batch.Interval,
		},
		Retry: budget.Config{
			MaxRetries:           int(c.Retry.MaxRetries),
			BackoffBase:          c.Retry.BackoffBase,
			BackoffCap:           c.Retry.BackoffCap,
			MaxTotalBackoff:      c.Retry.MaxTotalBackoff,
			RetryAfterCap:        c.Retry.RetryAfterCap,
			MaxRateLimitDuration: c.Retry.MaxRateLimitDuration,
		},
		Queue: uploader.QueueConfig{MaxBytes: c.Queue.MaxBytes, WhenFull: c.Queue.WhenFull, Sync: c.Queue.Sync,
			MaxPendingBytes: c.Queue.MaxPendingBytes},
		Dead: uploader.DeadConfig{MaxBytes: c.Dead.MaxBytes},
	}
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

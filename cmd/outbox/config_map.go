package main

import (
	"errors"
	"log/slog"

	"github.com/outboxhq/outbox/internal/redact"
	"github.com/outboxhq/outbox/pkg/agent"
	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/store"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// uploaderConfig is the embeddable client's configuration.
func (c *Config) uploaderConfig() uploader.Config { return c.Config }

// agentConfig is the agent's configuration; its limits are the uploader's keys.
func (c *Config) agentConfig(log *slog.Logger) agent.Config {
	a := c.Agent
	a.MaxRequestBytes = int64(c.Limits.MaxRequestBytes)
	a.MaxEventBytes = c.Limits.MaxEventBytes
	a.QueueMaxBytes = c.Queue.MaxBytes
	a.Logger = log
	return a
}

// storeError returns the store's own message for a locked or corrupt data directory (it names
// the fix: stop the other process, or `outbox recover`), without the wrapping layers above it.
func storeError(err error) error {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if _, ok := e.(*store.CorruptError); ok {
			return e
		}
		if errors.Unwrap(e) == errs.ErrLocked {
			return e
		}
	}
	return err
}

// redactURL hides the credentials a URL may carry: its userinfo and its query values
// (https://user:pass@host/x?api_key=k → https://REDACTED@host/x?api_key=REDACTED).
func redactURL(s string) string { return redact.URL(s) }

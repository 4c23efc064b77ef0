package main

import (
	"errors"
	"log/slog"
	"net/url"

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

// redactURL hides credentials embedded in a URL (https://user:pass@host → https://<redacted>@host).
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	u.User = url.User("REDACTED")
	return u.String()
}

package main

import (
	"errors"
	"log/slog"
	"net/url"
	"strings"

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
// A locked directory's message also names the flag that picks another one, which a library
// user does not have.
func storeError(err error) error {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if _, ok := e.(*store.CorruptError); ok {
			return e
		}
		if errors.Unwrap(e) == errs.ErrLocked {
			return &lockedError{e}
		}
	}
	return err
}

// lockedError is the store's errs.ErrLocked message with the command line's way to another
// directory.
type lockedError struct{ err error }

func (l *lockedError) Error() string {
	const fix = "use another data directory"
	msg := l.err.Error()
	if strings.Contains(msg, fix) {
		return strings.Replace(msg, fix, fix+" (--data-dir)", 1)
	}
	return msg + " (another data directory: --data-dir)"
}

func (l *lockedError) Unwrap() error { return l.err }

// redactURL hides credentials embedded in a URL (https://user:pass@host → https://<redacted>@host).
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	u.User = url.User("REDACTED")
	return u.String()
}

package config

import (
	"log/slog"
	"net/url"

	"github.com/outboxhq/outbox/pkg/agent"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// UploaderConfig is the embeddable client's configuration.
func (c *Config) UploaderConfig() uploader.Config { return c.Config }

// AgentConfig is the agent's configuration; its limits are the uploader's keys.
func (c *Config) AgentConfig(log *slog.Logger) agent.Config {
	a := c.Agent
	a.MaxRequestBytes = int64(c.Limits.MaxRequestBytes)
	a.MaxEventBytes = c.Limits.MaxEventBytes
	a.QueueMaxBytes = c.Queue.MaxBytes
	a.Logger = log
	return a
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

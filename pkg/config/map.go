package config

import (
	"log/slog"

	"github.com/outboxhq/outbox/internal/redact"
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
	a.Sources = agent.SourcesConfig{Relay: c.Sources.Relay}
	for name, src := range c.Sources.Named {
		if src == nil {
			continue
		}
		for _, k := range src.WriteKeys {
			if a.Sources.Keys == nil {
				a.Sources.Keys = map[string]string{}
			}
			a.Sources.Keys[k] = name
		}
	}
	a.Logger = log
	return a
}

// redactURL hides the credentials a URL may carry: its userinfo and its query values
// (https://user:pass@host/x?api_key=k → https://REDACTED@host/x?api_key=REDACTED).
func redactURL(s string) string { return redact.URL(s) }

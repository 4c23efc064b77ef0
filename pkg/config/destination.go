package config

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/outboxhq/outbox/pkg/kafka"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// DestinationConfig is where uploads go: upload.destination, and the upload.kafka.* keys of
// the Kafka destination, which point straight at its package's Config.
type DestinationConfig struct {
	Kind  string       // upload.destination: http | kafka
	Kafka kafka.Config // upload.kafka.*, used when Kind is kafka
}

// defaultDestination is the destination keys' defaults: http, and the Kafka package's own.
func defaultDestination() DestinationConfig {
	return DestinationConfig{Kind: "http", Kafka: kafka.DefaultConfig()}
}

// validateDestination checks the chosen destination's keys with its package's own rules; the
// http destination's are the uploader's, checked with the rest.
func (c *Config) validateDestination() error {
	if c.Dest.Kind != "kafka" {
		return nil
	}
	return c.kafkaConfig().Validate()
}

// kafkaConfig is the Kafka destination's configuration: the upload.kafka.* keys, and the
// topic of each source that names its own (sources.<name>.topic).
func (c *Config) kafkaConfig() kafka.Config {
	k := c.Dest.Kafka
	k.Topics = nil
	for name, s := range c.Sources.Named {
		if s != nil && s.Topic != "" {
			if k.Topics == nil {
				k.Topics = map[string]string{}
			}
			k.Topics[name] = s.Topic
		}
	}
	return k
}

// DestinationOptions are the uploader options of the chosen destination: none for http (the
// uploader's default, pkg/httpdest), WithDestination for kafka.
func (c *Config) DestinationOptions(log *slog.Logger) ([]uploader.Option, error) {
	if c.Dest.Kind != "kafka" {
		return nil, nil
	}
	d, err := kafka.New(c.kafkaConfig(), kafka.WithLogger(log))
	if err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	return []uploader.Option{uploader.WithDestination(d)}, nil
}

// DestinationAttrs are the log attributes that say where uploads go (no secret among them).
func (c *Config) DestinationAttrs() []any {
	if c.Dest.Kind == "kafka" {
		k := c.kafkaConfig()
		attrs := []any{"destination", "kafka", "brokers", strings.Join(k.Brokers, ","), "topic", k.Topic}
		if len(k.Topics) > 0 {
			attrs = append(attrs, "source_topics", k.Topics)
		}
		return attrs
	}
	return []any{"destination", "http", "endpoint", redactURL(c.Upload.Endpoint)}
}

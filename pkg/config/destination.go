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
	return c.Dest.Kafka.Validate()
}

// DestinationOptions are the uploader options of the chosen destination: none for http (the
// uploader's default, pkg/httpdest), WithDestination for kafka.
func (c *Config) DestinationOptions(log *slog.Logger) ([]uploader.Option, error) {
	if c.Dest.Kind != "kafka" {
		return nil, nil
	}
	d, err := kafka.New(c.Dest.Kafka, kafka.WithLogger(log))
	if err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	return []uploader.Option{uploader.WithDestination(d)}, nil
}

// DestinationAttrs are the log attributes that say where uploads go (no secret among them).
func (c *Config) DestinationAttrs() []any {
	if c.Dest.Kind == "kafka" {
		k := c.Dest.Kafka
		return []any{"destination", "kafka", "brokers", strings.Join(k.Brokers, ","), "topic", k.Topic}
	}
	return []any{"destination", "http", "endpoint", redactURL(c.Upload.Endpoint)}
}

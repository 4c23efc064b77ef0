package main

import (
	"errors"
	"log/slog"
	"strings"

	"github.com/outboxhq/outbox/pkg/kafka"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// KafkaConfig is the upload.kafka.* section, used when upload.destination is kafka.
type KafkaConfig struct {
	Brokers     []string
	Topic       string
	Key         string // messageId | userId | none
	Compression string // none | gzip | snappy | lz4 | zstd
	ClientID    string
	TLS         bool
	CAFile      string
	SASL        KafkaSASLConfig
}

// KafkaSASLConfig is the upload.kafka.sasl.* section.
type KafkaSASLConfig struct {
	Mechanism string // "" | plain | scram-sha-256 | scram-sha-512
	Username  string
	Password  string // secret: env or file, never a flag
}

// kafkaConfig maps the upload.kafka.* keys onto the Kafka destination's configuration.
func (c *Config) kafkaConfig() kafka.Config {
	k := c.Upload.Kafka
	return kafka.Config{
		Brokers:     k.Brokers,
		Topic:       k.Topic,
		Key:         k.Key,
		Compression: k.Compression,
		ClientID:    k.ClientID,
		TLS:         k.TLS,
		CAFile:      k.CAFile,
		SASL:        kafka.SASLConfig{Mechanism: k.SASL.Mechanism, Username: k.SASL.Username, Password: k.SASL.Password},
	}
}

// validateDestination checks the keys of the chosen destination: for kafka, the Kafka
// package's own rules, each error naming its key and that key's source.
func (lc *loadedConfig) validateDestination() error {
	if lc.Config.Upload.Destination != "kafka" {
		return nil
	}
	err := lc.Config.kafkaConfig().Validate()
	if err == nil {
		return nil
	}
	// Each line is "upload.kafka.<key>: what is wrong"; the error names the key (and every
	// other key the line mentions) with its source, once.
	var errs []error
	for _, line := range strings.Split(strings.TrimPrefix(err.Error(), kafka.ErrInvalidConfig.Error()+": "), "\n") {
		key, why, ok := strings.Cut(line, ": ")
		ks := mentionedKeys(line)
		if !ok || len(ks) == 0 || ks[0] != key {
			errs = append(errs, usageErrorf("configuration: %s", line))
			continue
		}
		errs = append(errs, lc.keysError(errors.New(why), ks...))
	}
	if len(errs) == 1 {
		return errs[0]
	}
	return &usageError{err: errors.Join(errs...)}
}

// destinationOptions are the uploader options of the chosen destination: none for http (the
// uploader's built-in), WithDestination for kafka.
func (c *Config) destinationOptions(log *slog.Logger) ([]uploader.Option, error) {
	if c.Upload.Destination != "kafka" {
		return nil, nil
	}
	d, err := kafka.New(c.kafkaConfig(), kafka.WithLogger(log))
	if err != nil {
		return nil, usageErrorf("configuration: %w", err)
	}
	return []uploader.Option{uploader.WithDestination(d)}, nil
}

// destinationAttrs are the log attributes that say where uploads go (no secret among them).
func (c *Config) destinationAttrs() []any {
	if c.Upload.Destination == "kafka" {
		k := c.Upload.Kafka
		return []any{"destination", "kafka", "brokers", strings.Join(k.Brokers, ","), "topic", k.Topic}
	}
	return []any{"destination", "http", "endpoint", redactURL(c.Upload.Endpoint)}
}

package kafka

import (
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/outboxhq/outbox/pkg/errs"
)

// ErrInvalidConfig is wrapped by Config.Validate's error (and New's, for a bad
// configuration). It is errs.ErrInvalidConfig, the sentinel of every configuration of outbox.
var ErrInvalidConfig = errs.ErrInvalidConfig

// The values of Config.Key.
const (
	KeyMessageID = "messageId" // the event's messageId (the default)
	KeyUserID    = "userId"    // the event's userId, else its anonymousId
	KeyNone      = "none"      // no key: kgo spreads records over the partitions
)

// The values of Config.Compression.
const (
	CompressionNone   = "none"
	CompressionGzip   = "gzip"
	CompressionSnappy = "snappy" // the default
	CompressionLZ4    = "lz4"
	CompressionZstd   = "zstd"
)

// The values of SASLConfig.Mechanism.
const (
	SASLPlain       = "plain"
	SASLScramSHA256 = "scram-sha-256"
	SASLScramSHA512 = "scram-sha-512"
)

// DefaultClientID is the client.id the cluster sees when Config.ClientID is empty.
const DefaultClientID = "outbox"

// Config says where and how to produce. The zero values of Key, Compression and ClientID mean
// their defaults. The configuration keys of the agent are named after the fields
// (upload.kafka.brokers, upload.kafka.sasl.password, ...), and so are Validate's errors.
type Config struct {
	Brokers []string // seed brokers, host:port; required
	Topic   string   // required: the topic of every source without one in Topics
	// Topics are the topics of the sources that have their own (sources.<name>.topic), by
	// source name (delivery.Batch.Source; the default source, whose batches may carry "", is
	// "default" here). A source not in it produces to Topic. New copies the map.
	Topics      map[string]string
	Key         string // KeyMessageID (default), KeyUserID or KeyNone
	Compression string // none, gzip, snappy (default), lz4 or zstd
	ClientID    string // default DefaultClientID
	TLS         bool   // connect with TLS (system roots, or CAFile)
	CAFile      string // PEM file of the CA certificates to trust; needs TLS
	SASL        SASLConfig
}

// SASLConfig is the SASL authentication; an empty Mechanism means none.
type SASLConfig struct {
	Mechanism string // plain, scram-sha-256 or scram-sha-512
	Username  string
	Password  string // a secret: never printed by String, LogValue or any error
}

// DefaultConfig is the configuration with every default filled in; Brokers and Topic are
// left for the caller.
func DefaultConfig() Config {
	return Config{Key: KeyMessageID, Compression: CompressionSnappy, ClientID: DefaultClientID}
}

// String describes the configuration with the password redacted, so that printing a Config
// (%v, %+v) cannot leak it.
func (c Config) String() string {
	s := fmt.Sprintf("kafka{brokers:%s topic:%q key:%s compression:%s client_id:%s tls:%t",
		strings.Join(c.Brokers, ","), c.Topic, c.key(), c.compression(), c.clientID(), c.TLS)
	if len(c.Topics) > 0 {
		s += " topics:" + c.topicList()
	}
	if c.CAFile != "" {
		s += " ca_file:" + c.CAFile
	}
	if c.SASL.Mechanism != "" {
		s += fmt.Sprintf(" sasl:%s user:%q password:%s", c.SASL.Mechanism, c.SASL.Username, redact(c.SASL.Password))
	}
	return s + "}"
}

// LogValue is the configuration as log attributes, the password redacted.
func (c Config) LogValue() slog.Value {
	attrs := []slog.Attr{
		slog.String("brokers", strings.Join(c.Brokers, ",")),
		slog.String("topic", c.Topic),
	}
	if len(c.Topics) > 0 {
		attrs = append(attrs, slog.String("topics", c.topicList()))
	}
	attrs = append(attrs,
		slog.String("key", c.key()),
		slog.String("compression", c.compression()),
		slog.Bool("tls", c.TLS),
	)
	if c.SASL.Mechanism != "" {
		attrs = append(attrs, slog.String("sasl", c.SASL.Mechanism), slog.String("user", c.SASL.Username))
	}
	return slog.GroupValue(attrs...)
}

func redact(secret string) string {
	if secret == "" {
		return `""`
	}
	return "<redacted>"
}

// topicList is Topics as source=topic pairs in the order of the sources' names.
func (c Config) topicList() string {
	pairs := make([]string, 0, len(c.Topics))
	for _, name := range slices.Sorted(maps.Keys(c.Topics)) {
		pairs = append(pairs, name+"="+c.Topics[name])
	}
	return strings.Join(pairs, ",")
}

func (c Config) key() string         { return orDefault(c.Key, KeyMessageID) }
func (c Config) compression() string { return orDefault(c.Compression, CompressionSnappy) }
func (c Config) clientID() string    { return orDefault(c.ClientID, DefaultClientID) }

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Validate checks the configuration. Every problem is an *errs.KeyError naming its key
// (upload.kafka.brokers, ...) and saying what to do, joined and wrapped with ErrInvalidConfig.
// It reads CAFile, which must hold a PEM certificate.
func (c Config) Validate() error {
	var problems []error
	bad := func(key, format string, args ...any) {
		problems = append(problems, errs.KeyErrorf("upload.kafka."+key, "upload.kafka.%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if len(c.Brokers) == 0 {
		bad("brokers", "is required: list the seed brokers as host:port (e.g. kafka-1:9092)")
	}
	for i, b := range c.Brokers {
		if err := checkBroker(b); err != nil {
			bad("brokers", "item %d %q %v", i, b, err)
		}
	}
	if err := checkTopic(c.Topic); err != nil {
		bad("topic", "%v", err)
	}
	for _, name := range slices.Sorted(maps.Keys(c.Topics)) {
		if err := checkTopic(c.Topics[name]); err != nil {
			key := "sources." + name + ".topic"
			problems = append(problems, errs.KeyErrorf(key, "%s: %v; fix it, or remove it to produce the source's events to upload.kafka.topic", key, err))
		}
	}
	if !oneOf(c.key(), KeyMessageID, KeyUserID, KeyNone) {
		bad("key", "%q is not one of messageId, userId, none", c.Key)
	}
	if !oneOf(c.compression(), CompressionNone, CompressionGzip, CompressionSnappy, CompressionLZ4, CompressionZstd) {
		bad("compression", "%q is not one of none, gzip, snappy, lz4, zstd", c.Compression)
	}
	if strings.TrimSpace(c.clientID()) == "" {
		bad("client_id", "must not be blank; remove it for the default %q", DefaultClientID)
	}
	if c.CAFile != "" {
		if !c.TLS {
			problems = append(problems, &errs.KeyError{Key: "upload.kafka.ca_file", Related: []string{"upload.kafka.tls"},
				Err: errors.New("upload.kafka.ca_file is set but upload.kafka.tls is false; set upload.kafka.tls: true, or remove the CA file")})
		} else if _, err := loadCAFile(c.CAFile); err != nil {
			bad("ca_file", "%v", err)
		}
	}
	problems = append(problems, c.SASL.validate()...)
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("kafka: %w: %w", ErrInvalidConfig, errors.Join(problems...))
}

func (s SASLConfig) validate() []error {
	const mech = "upload.kafka.sasl.mechanism"
	switch s.Mechanism {
	case "":
		if s.Username != "" || s.Password != "" {
			return []error{errs.KeyErrorf(mech, "%s: a SASL username or password is set but no mechanism; set plain, scram-sha-256 or scram-sha-512", mech)}
		}
		return nil
	case SASLPlain, SASLScramSHA256, SASLScramSHA512:
	default:
		return []error{errs.KeyErrorf(mech, "%s: %q is not one of plain, scram-sha-256, scram-sha-512", mech, s.Mechanism)}
	}
	var problems []error
	if s.Username == "" {
		problems = append(problems, &errs.KeyError{Key: "upload.kafka.sasl.username", Related: []string{mech},
			Err: fmt.Errorf("upload.kafka.sasl.username: is required with SASL %s", s.Mechanism)})
	}
	if s.Password == "" {
		problems = append(problems, &errs.KeyError{Key: "upload.kafka.sasl.password", Related: []string{mech},
			Err: fmt.Errorf("upload.kafka.sasl.password: is required with SASL %s; set it with OUTBOX_UPLOAD_KAFKA_SASL_PASSWORD or in the config file", s.Mechanism)})
	}
	return problems
}

// checkBroker accepts host:port with a port in 1-65535.
func checkBroker(b string) error {
	host, port, err := net.SplitHostPort(strings.TrimSpace(b))
	if err != nil || host == "" {
		return errors.New("is not host:port (e.g. kafka-1:9092)")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("has port %q; a port is 1-65535", port)
	}
	return nil
}

// checkTopic applies Kafka's rule for topic names: 1-249 of [a-zA-Z0-9._-], not "." or "..".
func checkTopic(t string) error {
	switch {
	case t == "":
		return errors.New("is required: name the topic to produce to")
	case len(t) > 249:
		return fmt.Errorf("is %d characters long; Kafka allows at most 249", len(t))
	case t == "." || t == "..":
		return fmt.Errorf("%q is not a valid topic name", t)
	}
	for _, r := range t {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("%q has %q; a topic name is letters, digits, '.', '_' and '-'", t, r)
		}
	}
	return nil
}

// loadCAFile reads a PEM file of CA certificates into a pool.
func loadCAFile(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", path, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return pool, nil
}

func oneOf(s string, list ...string) bool {
	for _, v := range list {
		if s == v {
			return true
		}
	}
	return false
}

package config

import (
	"github.com/outboxhq/outbox/pkg/agent"
	"github.com/outboxhq/outbox/pkg/uploader"
)

// Config is the effective configuration of every command. It holds the packages' own
// configurations, and the key table below points each key at its one field in them: the
// uploader's (data_dir, limits, upload, batch, retry, queue, dead), the agent's (ingest,
// shutdown) and the log section, the only one that belongs to the binary. Defaults come from the
// packages (Default); nothing is copied field by field.
type Config struct {
	uploader.Config                   // data_dir, limits.*, upload.*, batch.*, retry.*, queue.*, dead.*
	Agent           agent.Config      // ingest.*, shutdown.timeout (limits come from the uploader's)
	Log             LogConfig         // log.*
	Debug           DebugConfig       // debug.*
	Dest            DestinationConfig // upload.destination, upload.kafka.* (destination.go)
}

// LogConfig is the log.* section.
type LogConfig struct {
	Level  string // debug | info | warn | error
	Format string // text | json
}

// Default is every key's default: the packages' defaults, and the log section's.
func Default() Config {
	return Config{Config: uploader.DefaultConfig(), Agent: agent.DefaultConfig(), Log: LogConfig{Level: "info", Format: "text"},
		Dest: defaultDestination()}
}

// DebugConfig is the debug.* section.
type DebugConfig struct {
	PprofListen string // loopback host:port for net/http/pprof; "" = off
}

// kind is how a key's value is parsed.
type kind int

const (
	kindString   kind = iota // any scalar, as text
	kindBool                 // true/false
	kindInt                  // a whole number >= 0
	kindSize                 // bytes, with an optional unit: 512000, 32KiB, 1GiB, 500KB
	kindDuration             // a Go duration: 500ms, 5s, 12h
	kindList                 // a YAML list; in env, comma separated
	kindMap                  // a YAML mapping; in env, comma separated Name=Value pairs
)

// keyDef describes one configuration key: its parser, where it lands in Config (its one field;
// the default is that field's value in Default), and whether its value is a secret.
type keyDef struct {
	key    string
	kind   kind
	enum   []string // allowed values, when the key is an enum
	secret bool     // value never printed
	trim   bool     // surrounding whitespace is removed (a token pasted or read with its newline)
	flag   string   // flag name, for the few keys that have one
	min    int64    // smallest allowed value for int, size and duration keys (durations in ns)
	field  func(c *Config) any
	// named is set, instead of field, on a row of a per-name section: its key holds
	// "<name>" (sources.<name>.endpoint), and named points at the key's field in the section
	// of one name, creating it (names.go).
	named func(c *Config, name string) any
	help  string // one line, used by config.example.yaml and `outbox config --help`
	// live is set on a key whose new value a reload (SIGHUP, outbox reload) applies to the
	// running agent; restart says, for every other key, why a change needs a restart (a reload
	// keeps the old value and logs the key with this reason).
	live    bool
	restart string
}

// Why the keys that share a reason need a restart.
const (
	rQueueOpen = "the queue is opened with it at start"
	rTLS       = "the listener's TLS set-up (HTTPS, mTLS) is fixed at start; the files' contents are re-read on SIGHUP and when they change: replace the files at the same paths"
	rLimits    = "intake buffers and event checks are sized at start"
	rDest      = "the destination and its connections are built at start"
	rRelay     = "relay mode, its sources and their registry are set up at start (the named sources, sources.<name>.*, reload live)"
)

// keys is every configuration key, in the order `outbox config` and config.example.yaml show them.
var keys = []keyDef{
	{key: "data_dir", restart: rQueueOpen, kind: kindString, flag: "data-dir", field: func(c *Config) any { return &c.DataDir },
		help: "directory of the queue file; one outbox process owns it at a time"},
	{key: "log.level", live: true, kind: kindString, flag: "log-level", enum: []string{"debug", "info", "warn", "error"}, field: func(c *Config) any { return &c.Log.Level },
		help: "debug, info, warn or error"},
	{key: "log.format", restart: "the log handler is built at start", kind: kindString, enum: []string{"text", "json"}, field: func(c *Config) any { return &c.Log.Format },
		help: "text or json (logs go to stderr)"},
	{key: "ingest.listen", restart: "the listener is bound at start", kind: kindString, flag: "listen", field: func(c *Config) any { return &c.Agent.Listen },
		help: "host:port of the Segment-compatible ingest and admin API"},
	{key: "ingest.write_keys", live: true, kind: kindList, secret: true, field: func(c *Config) any { return &c.Agent.WriteKeys },
		help: "write keys accepted as the Basic auth username (what Segment SDKs send) or a batch body's writeKey; empty = no key needed"},
	{key: "ingest.token", live: true, kind: kindString, secret: true, trim: true, field: func(c *Config) any { return &c.Agent.Token },
		help: "token accepted as Authorization: Bearer <token> on ingest routes (not admin ones); empty = none"},
	{key: "ingest.allow_unauthenticated", live: true, kind: kindBool, field: func(c *Config) any { return &c.Agent.AllowUnauthenticated },
		help: "allow a non-loopback ingest.listen with no write key, no token and no mTLS"},
	{key: "ingest.tls.cert_file", restart: rTLS, kind: kindString, field: func(c *Config) any { return &c.Agent.TLS.CertFile },
		help: "PEM certificate chain (server's first): serve ingest over HTTPS; needs ingest.tls.key_file; re-read when it changes"},
	{key: "ingest.tls.key_file", restart: rTLS, kind: kindString, field: func(c *Config) any { return &c.Agent.TLS.KeyFile },
		help: "PEM private key of ingest.tls.cert_file"},
	{key: "ingest.tls.client_ca_file", restart: rTLS, kind: kindString, field: func(c *Config) any { return &c.Agent.TLS.ClientCAFile },
		help: "PEM CA certificates: require and verify client certificates (mTLS); counts as auth off loopback, and opens admin routes when admin.token is empty"},
	{key: "ingest.max_connections", restart: "the listener is bound at start", kind: kindInt, min: 1, field: func(c *Config) any { return &c.Agent.MaxConnections },
		help: "most connections served at once; more wait to be accepted until one closes"},
	{key: "admin.token", live: true, kind: kindString, secret: true, trim: true, field: func(c *Config) any { return &c.Agent.Admin.Token },
		help: "token of the admin routes (status, status page, flush, dead letters): Bearer, or a browser's password; empty = admin answers loopback only; set it with OUTBOX_ADMIN_TOKEN"},
	{key: "admin.allowed_hosts", live: true, kind: kindList, field: func(c *Config) any { return &c.Agent.Admin.AllowedHosts },
		help: "Host names admin routes accept besides loopback ones when admin.token is empty (a guard against DNS rebinding)"},
	{key: "limits.max_event_bytes", restart: rLimits, kind: kindSize, min: 1, field: func(c *Config) any { return &c.Limits.MaxEventBytes },
		help: "largest event accepted (32KiB = 32768 bytes, Segment's limit)"},
	{key: "limits.max_request_bytes", restart: rLimits, kind: kindSize, min: 1, field: func(c *Config) any { return &c.Limits.MaxRequestBytes },
		help: "largest ingest request body, measured after gzip decompression"},
	{key: "upload.endpoint", restart: "the batches in flight and their retry states belong to the collector they were sent to", kind: kindString, flag: "endpoint", field: func(c *Config) any { return &c.Upload.Endpoint },
		help: "URL batches are POSTed to"},
	{key: "upload.write_key", live: true, kind: kindString, secret: true, field: func(c *Config) any { return &c.Upload.WriteKey },
		help: "collector write key, sent as Basic auth username; set it with OUTBOX_UPLOAD_WRITE_KEY"},
	{key: "upload.format", restart: "the wire format is fixed at start", kind: kindString, enum: []string{"segment"}, field: func(c *Config) any { return &c.Upload.Format },
		help: "wire format of uploads; segment is the only one for now"},
	{key: "upload.gzip", restart: "the body encoder is built at start", kind: kindBool, field: func(c *Config) any { return &c.Upload.Gzip },
		help: "gzip upload bodies (Content-Encoding: gzip)"},
	{key: "upload.timeout", live: true, kind: kindDuration, min: 1, field: func(c *Config) any { return &c.Upload.Timeout },
		help: "bound on one upload attempt"},
	{key: "upload.headers", live: true, kind: kindMap, field: func(c *Config) any { return &c.Upload.Headers },
		help: "extra HTTP headers on every upload (Authorization-like values are redacted in output)"},
	{key: "upload.ca_file", restart: "the HTTP client's trusted roots are loaded at start", kind: kindString, field: func(c *Config) any { return &c.Upload.CAFile },
		help: "PEM file of CA certificates to trust for the endpoint; empty = system roots"},
	{key: "upload.split_rejected", live: true, kind: kindBool, field: func(c *Config) any { return &c.Upload.SplitRejected },
		help: "split a batch rejected with 400/413/422 in half to isolate bad events"},
	{key: "upload.concurrency", live: true, kind: kindString, field: func(c *Config) any { return &c.Upload.Concurrency },
		help: "batches in flight at once: auto (adapts to the collector, 1 to upload.max_concurrency) or a number; 1 = strict FIFO"},
	{key: "upload.max_concurrency", restart: "the connection pool and the adaptive limit are sized at start", kind: kindInt, min: 1, field: func(c *Config) any { return &c.Upload.MaxConcurrency },
		help: "the most batches upload.concurrency: auto keeps in flight"},
	{key: "upload.on_auth_failure", live: true, kind: kindString, enum: []string{uploader.OnAuthFailurePause, uploader.OnAuthFailureDeadLetter},
		field: func(c *Config) any { return &c.Upload.OnAuthFailure },
		help:  "on a 401/403: pause (keep the queue, probe once a minute, resume on success) or dead_letter"},
	// The destination, and the keys of the Kafka one (destination.go builds it).
	{key: "upload.destination", restart: rDest, kind: kindString, enum: []string{"http", "kafka"}, field: func(c *Config) any { return &c.Dest.Kind },
		help: "http (POST batches to upload.endpoint) or kafka (produce each event to upload.kafka.topic)"},
	{key: "upload.kafka.brokers", restart: rDest, kind: kindList, field: func(c *Config) any { return &c.Dest.Kafka.Brokers },
		help: "Kafka seed brokers as host:port; required with upload.destination: kafka"},
	{key: "upload.kafka.topic", restart: rDest, kind: kindString, field: func(c *Config) any { return &c.Dest.Kafka.Topic },
		help: "topic every event is produced to; required with upload.destination: kafka"},
	{key: "upload.kafka.key", restart: rDest, kind: kindString, enum: []string{"messageId", "userId", "none"}, field: func(c *Config) any { return &c.Dest.Kafka.Key },
		help: "record key: messageId (consumers deduplicate on it), userId (else anonymousId; per-user order) or none"},
	{key: "upload.kafka.compression", restart: rDest, kind: kindString, enum: []string{"none", "gzip", "snappy", "lz4", "zstd"}, field: func(c *Config) any { return &c.Dest.Kafka.Compression },
		help: "record batch compression: none, gzip, snappy, lz4 or zstd"},
	{key: "upload.kafka.client_id", restart: rDest, kind: kindString, field: func(c *Config) any { return &c.Dest.Kafka.ClientID },
		help: "client.id the brokers see (quotas, logs)"},
	{key: "upload.kafka.tls", restart: rDest, kind: kindBool, field: func(c *Config) any { return &c.Dest.Kafka.TLS },
		help: "connect to the brokers with TLS"},
	{key: "upload.kafka.ca_file", restart: rDest, kind: kindString, field: func(c *Config) any { return &c.Dest.Kafka.CAFile },
		help: "PEM file of CA certificates to trust for the brokers (needs upload.kafka.tls); empty = system roots"},
	{key: "upload.kafka.sasl.mechanism", restart: rDest, kind: kindString, field: func(c *Config) any { return &c.Dest.Kafka.SASL.Mechanism },
		help: "SASL mechanism: plain, scram-sha-256 or scram-sha-512; empty = no SASL"},
	{key: "upload.kafka.sasl.username", restart: rDest, kind: kindString, field: func(c *Config) any { return &c.Dest.Kafka.SASL.Username },
		help: "SASL username"},
	{key: "upload.kafka.sasl.password", restart: rDest, kind: kindString, secret: true, field: func(c *Config) any { return &c.Dest.Kafka.SASL.Password },
		help: "SASL password; set it with OUTBOX_UPLOAD_KAFKA_SASL_PASSWORD"},
	{key: "batch.max_events", live: true, kind: kindInt, min: 1, field: func(c *Config) any { return &c.Batch.MaxEvents },
		help: "send when this many events wait"},
	{key: "batch.max_bytes", live: true, kind: kindSize, min: 1, field: func(c *Config) any { return &c.Batch.MaxBytes },
		help: "send when the encoded batch (before gzip) reaches this size"},
	{key: "batch.interval", live: true, kind: kindDuration, min: 1, field: func(c *Config) any { return &c.Batch.Interval },
		help: "send when the oldest waiting event is this old"},
	{key: "retry.max_retries", live: true, kind: kindInt, min: 0, field: func(c *Config) any { return &c.Retry.MaxRetries },
		help: "counted retries of a batch before it is dead-lettered (10 retries = 11 attempts)"},
	{key: "retry.backoff_base", live: true, kind: kindDuration, min: 1, field: func(c *Config) any { return &c.Retry.BackoffBase },
		help: "first counted backoff wait; doubles each retry"},
	{key: "retry.backoff_cap", live: true, kind: kindDuration, min: 1, field: func(c *Config) any { return &c.Retry.BackoffCap },
		help: "longest counted backoff wait (jitter only shortens it)"},
	{key: "retry.max_total_backoff", live: true, kind: kindDuration, min: 1, field: func(c *Config) any { return &c.Retry.MaxTotalBackoff },
		help: "give up on a batch this long after its first counted failure"},
	{key: "retry.retry_after_cap", live: true, kind: kindDuration, min: 1, field: func(c *Config) any { return &c.Retry.RetryAfterCap },
		help: "longest single wait honoured from a Retry-After header"},
	{key: "retry.max_rate_limit_duration", live: true, kind: kindDuration, min: 1, field: func(c *Config) any { return &c.Retry.MaxRateLimitDuration },
		help: "give up on a batch this long after the first Retry-After of a rate-limit episode"},
	{key: "queue.max_bytes", restart: rQueueOpen, kind: kindSize, min: 1, field: func(c *Config) any { return &c.Queue.MaxBytes },
		help: "bound on stored event bytes"},
	{key: "queue.when_full", restart: rQueueOpen, kind: kindString, enum: []string{"reject", "drop_oldest"}, field: func(c *Config) any { return &c.Queue.WhenFull },
		help: "reject (ingest answers 503 + Retry-After) or drop_oldest (evict from the head, counted)"},
	{key: "queue.sync", restart: rQueueOpen, kind: kindString, enum: []string{"always", "none"}, field: func(c *Config) any { return &c.Queue.Sync },
		help: "always = fsync every commit before answering 200; none = faster, loses recent events on power loss"},
	{key: "queue.max_pending_bytes", restart: rQueueOpen, kind: kindSize, min: 1, field: func(c *Config) any { return &c.Queue.MaxPendingBytes },
		help: "library only: bound on the event bytes EnqueueAsync has accepted and not yet committed; past it EnqueueAsync waits"},
	{key: "queue.encryption.key_files", restart: rQueueOpen, kind: kindList, field: func(c *Config) any { return &c.Queue.Encryption.KeyFiles },
		help: "files of 32 random bytes (outbox keygen) that seal queued events and dead letters with AES-256-GCM; the first seals, all open; empty = stored plain"},
	{key: "dead.max_bytes", restart: rQueueOpen, kind: kindSize, min: 1, field: func(c *Config) any { return &c.Dead.MaxBytes },
		help: "bound on dead-letter bytes; past it the oldest dead batches are dropped"},
	{key: "privacy.rules", live: true, kind: kindList, field: func(c *Config) any { return &c.Privacy.Rules },
		help: "scrub fields before events are stored, each path=action: context.ip=mask, traits.email=hash, properties.card=remove"},
	{key: "privacy.hash_key_file", live: true, kind: kindString, field: func(c *Config) any { return &c.Privacy.HashKeyFile },
		help: "file whose contents (at least 16 bytes) key the hash rules and forget's audit hashes; required by a hash rule"},
	{key: "privacy.suppress_file", live: true, kind: kindString, field: func(c *Config) any { return &c.Privacy.SuppressFile },
		help: "user ids whose events are dropped at intake, one per line; outbox forget --suppress adds to it; re-read on SIGHUP"},
	// Several sources (names.go: one row per key of a named source). A reload adds, changes
	// and removes named sources (a removed one drains its queued events with its last settings).
	{key: "sources.<name>.write_keys", live: true, kind: kindList, secret: true, named: func(c *Config, n string) any { return &c.namedSource(n).WriteKeys },
		help: "ingest write keys (the Basic auth username SDKs send) whose events go to source <name>; also accepted as ingest credentials"},
	{key: "sources.<name>.upload_write_key", live: true, kind: kindString, secret: true, named: func(c *Config, n string) any { return &c.namedSource(n).UploadWriteKey },
		help: "write key source <name>'s batches are uploaded with (Basic auth); empty = none; set it with OUTBOX_SOURCES_<NAME>_UPLOAD_WRITE_KEY"},
	{key: "sources.<name>.endpoint", live: true, kind: kindString, named: func(c *Config, n string) any { return &c.namedSource(n).Endpoint },
		help: "URL source <name>'s batches are POSTed to; empty = upload.endpoint (an EU workspace: https://events.eu1.segmentapis.com/v1/batch)"},
	{key: "sources.<name>.headers", live: true, kind: kindMap, named: func(c *Config, n string) any { return &c.namedSource(n).Headers },
		help: "extra HTTP headers on source <name>'s uploads, over upload.headers"},
	{key: "sources.<name>.max_bytes", live: true, kind: kindSize, named: func(c *Config, n string) any { return &c.namedSource(n).MaxBytes },
		help: "source <name>'s share of queue.max_bytes: past it only its events are refused (503, counted as source_full); 0 = none of its own"},
	{key: "sources.<name>.topic", restart: rDest, kind: kindString, named: func(c *Config, n string) any { return &c.namedSource(n).Topic },
		help: "Kafka topic source <name>'s events are produced to (upload.destination: kafka); empty = upload.kafka.topic"},
	{key: "sources.relay", restart: rRelay, kind: kindBool, field: func(c *Config) any { return &c.Sources.Relay },
		help: "relay mode: an ingest write key no source lists becomes a source of its own, uploaded with that key (OUTBOX_SOURCES_RELAY=true)"},
	{key: "sources.relay_endpoint", restart: rRelay, kind: kindString, field: func(c *Config) any { return &c.Sources.RelayEndpoint },
		help: "URL relay sources upload to; empty = upload.endpoint"},
	{key: "sources.max", restart: rRelay, kind: kindInt, min: 1, field: func(c *Config) any { return &c.Sources.Max },
		help: "most sources (the default one, the named ones and relay ones); a new relay key past it gets 429"},
	{key: "shutdown.timeout", live: true, kind: kindDuration, min: 1, field: func(c *Config) any { return &c.Agent.ShutdownTimeout },
		help: "on SIGTERM, how long the last upload pass may take before exiting"},
	{key: "debug.pprof_listen", restart: "the profiling listener is bound at start", kind: kindString, flag: "pprof", field: func(c *Config) any { return &c.Debug.PprofListen },
		help: "loopback host:port serving net/http/pprof under /debug/pprof/ (outbox run --pprof); empty = off"},
}

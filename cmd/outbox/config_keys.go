package main

import "time"

// Config is the agent's effective configuration, one field per key of SPEC section 8. It is
// filled by loadConfig from defaults, the YAML file, OUTBOX_* variables and flags, then mapped to
// the uploader and agent configurations by the commands that need them.
type Config struct {
	DataDir  string
	Log      LogConfig
	Ingest   IngestConfig
	Limits   LimitsConfig
	Upload   UploadConfig
	Batch    BatchConfig
	Retry    RetryConfig
	Queue    QueueConfig
	Dead     DeadConfig
	Shutdown ShutdownConfig
}

// LogConfig is the log.* section.
type LogConfig struct {
	Level  string // debug | info | warn | error
	Format string // text | json
}

// IngestConfig is the ingest.* section.
type IngestConfig struct {
	Listen               string
	WriteKeys            []string // secret
	Token                string   // secret
	AllowUnauthenticated bool
}

// LimitsConfig is the limits.* section (bytes).
type LimitsConfig struct {
	MaxEventBytes   int64
	MaxRequestBytes int64
}

// UploadConfig is the upload.* section.
type UploadConfig struct {
	Endpoint      string
	WriteKey      string // secret
	Format        string
	Gzip          bool
	Timeout       time.Duration
	Headers       map[string]string // Authorization-like values are secret
	CAFile        string
	SplitRejected bool
}

// BatchConfig is the batch.* section.
type BatchConfig struct {
	MaxEvents int64
	MaxBytes  int64
	Interval  time.Duration
}

// RetryConfig is the retry.* section.
type RetryConfig struct {
	MaxRetries           int64
	BackoffBase          time.Duration
	BackoffCap           time.Duration
	MaxTotalBackoff      time.Duration
	RetryAfterCap        time.Duration
	MaxRateLimitDuration time.Duration
}

// QueueConfig is the queue.* section.
type QueueConfig struct {
	MaxBytes int64
	WhenFull string // reject | drop_oldest (block is for the library only)
	Sync     string // always | none
	// MaxPendingBytes bounds what the library's EnqueueAsync holds uncommitted.
	MaxPendingBytes int64
}

// DeadConfig is the dead.* section.
type DeadConfig struct{ MaxBytes int64 }

// ShutdownConfig is the shutdown.* section.
type ShutdownConfig struct{ Timeout time.Duration }

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

// keyDef describes one configuration key: its parser, its default (written as in the YAML file),
// where it lands in Config, and whether its value is a secret.
type keyDef struct {
	key    string
	kind   kind
	def    string   // default, parsed with the key's own parser
	enum   []string // allowed values, when the key is an enum
	secret bool     // value never printed
	flag   string   // flag name, for the few keys that have one
	min    int64    // smallest allowed value for int, size and duration keys (durations in ns)
	field  func(c *Config) any
	help   string // one line, used by config.example.yaml and `outbox config --help`
}

// keys is every configuration key, in the order `outbox config` and config.example.yaml show them.
var keys = []keyDef{
	{key: "data_dir", kind: kindString, def: "./outbox-data", flag: "data-dir", field: func(c *Config) any { return &c.DataDir },
		help: "directory of the queue file; one outbox process owns it at a time"},
	{key: "log.level", kind: kindString, def: "info", flag: "log-level", enum: []string{"debug", "info", "warn", "error"}, field: func(c *Config) any { return &c.Log.Level },
		help: "debug, info, warn or error"},
	{key: "log.format", kind: kindString, def: "text", enum: []string{"text", "json"}, field: func(c *Config) any { return &c.Log.Format },
		help: "text or json (logs go to stderr)"},
	{key: "ingest.listen", kind: kindString, def: "127.0.0.1:8089", flag: "listen", field: func(c *Config) any { return &c.Ingest.Listen },
		help: "host:port of the Segment-compatible ingest and admin API"},
	{key: "ingest.write_keys", kind: kindList, def: "[]", secret: true, field: func(c *Config) any { return &c.Ingest.WriteKeys },
		help: "write keys accepted as the Basic auth username (what Segment SDKs send); empty = no key needed"},
	{key: "ingest.token", kind: kindString, def: "", secret: true, field: func(c *Config) any { return &c.Ingest.Token },
		help: "token accepted as Authorization: Bearer <token>; empty = none"},
	{key: "ingest.allow_unauthenticated", kind: kindBool, def: "false", field: func(c *Config) any { return &c.Ingest.AllowUnauthenticated },
		help: "allow a non-loopback ingest.listen with no write key and no token"},
	{key: "limits.max_event_bytes", kind: kindSize, def: "32KiB", min: 1, field: func(c *Config) any { return &c.Limits.MaxEventBytes },
		help: "largest event accepted (32KiB = 32768 bytes, Segment's limit)"},
	{key: "limits.max_request_bytes", kind: kindSize, def: "512000", min: 1, field: func(c *Config) any { return &c.Limits.MaxRequestBytes },
		help: "largest ingest request body, measured after gzip decompression"},
	{key: "upload.endpoint", kind: kindString, def: "https://api.segment.io/v1/batch", flag: "endpoint", field: func(c *Config) any { return &c.Upload.Endpoint },
		help: "URL batches are POSTed to"},
	{key: "upload.write_key", kind: kindString, def: "", secret: true, field: func(c *Config) any { return &c.Upload.WriteKey },
		help: "collector write key, sent as Basic auth username; set it with OUTBOX_UPLOAD_WRITE_KEY"},
	{key: "upload.format", kind: kindString, def: "segment", enum: []string{"segment"}, field: func(c *Config) any { return &c.Upload.Format },
		help: "wire format of uploads; segment is the only one for now"},
	{key: "upload.gzip", kind: kindBool, def: "true", field: func(c *Config) any { return &c.Upload.Gzip },
		help: "gzip upload bodies (Content-Encoding: gzip)"},
	{key: "upload.timeout", kind: kindDuration, def: "30s", min: 1, field: func(c *Config) any { return &c.Upload.Timeout },
		help: "bound on one upload attempt"},
	{key: "upload.headers", kind: kindMap, def: "{}", field: func(c *Config) any { return &c.Upload.Headers },
		help: "extra HTTP headers on every upload (Authorization-like values are redacted in output)"},
	{key: "upload.ca_file", kind: kindString, def: "", field: func(c *Config) any { return &c.Upload.CAFile },
		help: "PEM file of CA certificates to trust for the endpoint; empty = system roots"},
	{key: "upload.split_rejected", kind: kindBool, def: "true", field: func(c *Config) any { return &c.Upload.SplitRejected },
		help: "split a batch rejected with 400/413/422 in half to isolate bad events"},
	{key: "batch.max_events", kind: kindInt, def: "500", min: 1, field: func(c *Config) any { return &c.Batch.MaxEvents },
		help: "send when this many events wait"},
	{key: "batch.max_bytes", kind: kindSize, def: "500000", min: 1, field: func(c *Config) any { return &c.Batch.MaxBytes },
		help: "send when the encoded batch (before gzip) reaches this size"},
	{key: "batch.interval", kind: kindDuration, def: "5s", min: 1, field: func(c *Config) any { return &c.Batch.Interval },
		help: "send when the oldest waiting event is this old"},
	{key: "retry.max_retries", kind: kindInt, def: "10", min: 0, field: func(c *Config) any { return &c.Retry.MaxRetries },
		help: "counted retries of a batch before it is dead-lettered (10 retries = 11 attempts)"},
	{key: "retry.backoff_base", kind: kindDuration, def: "500ms", min: 1, field: func(c *Config) any { return &c.Retry.BackoffBase },
		help: "first counted backoff wait; doubles each retry"},
	{key: "retry.backoff_cap", kind: kindDuration, def: "60s", min: 1, field: func(c *Config) any { return &c.Retry.BackoffCap },
		help: "longest counted backoff wait (jitter only shortens it)"},
	{key: "retry.max_total_backoff", kind: kindDuration, def: "12h", min: 1, field: func(c *Config) any { return &c.Retry.MaxTotalBackoff },
		help: "give up on a batch this long after its first counted failure"},
	{key: "retry.retry_after_cap", kind: kindDuration, def: "300s", min: 1, field: func(c *Config) any { return &c.Retry.RetryAfterCap },
		help: "longest single wait honoured from a Retry-After header"},
	{key: "retry.max_rate_limit_duration", kind: kindDuration, def: "12h", min: 1, field: func(c *Config) any { return &c.Retry.MaxRateLimitDuration },
		help: "give up on a batch this long after the first Retry-After of a rate-limit episode"},
	{key: "queue.max_bytes", kind: kindSize, def: "1GiB", min: 1, field: func(c *Config) any { return &c.Queue.MaxBytes },
		help: "bound on stored event bytes"},
	{key: "queue.when_full", kind: kindString, def: "reject", enum: []string{"reject", "drop_oldest"}, field: func(c *Config) any { return &c.Queue.WhenFull },
		help: "reject (ingest answers 503 + Retry-After) or drop_oldest (evict from the head, counted)"},
	{key: "queue.sync", kind: kindString, def: "always", enum: []string{"always", "none"}, field: func(c *Config) any { return &c.Queue.Sync },
		help: "always = fsync every commit before answering 200; none = faster, loses recent events on power loss"},
	{key: "queue.max_pending_bytes", kind: kindSize, def: "16MiB", min: 1, field: func(c *Config) any { return &c.Queue.MaxPendingBytes },
		help: "library only: bound on the event bytes EnqueueAsync has accepted and not yet committed; past it EnqueueAsync waits"},
	{key: "dead.max_bytes", kind: kindSize, def: "256MiB", min: 1, field: func(c *Config) any { return &c.Dead.MaxBytes },
		help: "bound on dead-letter bytes; past it the oldest dead batches are dropped"},
	{key: "shutdown.timeout", kind: kindDuration, def: "25s", min: 1, field: func(c *Config) any { return &c.Shutdown.Timeout },
		help: "on SIGTERM, how long the last upload pass may take before exiting"},
}

// lookupKey returns the definition of key, or nil when no such key exists.
func lookupKey(key string) *keyDef {
	for i := range keys {
		if keys[i].key == key {
			return &keys[i]
		}
	}
	return nil
}

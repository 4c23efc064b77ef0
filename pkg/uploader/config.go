package uploader

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/outboxhq/outbox/internal/cafile"
	"github.com/outboxhq/outbox/internal/redact"
	"github.com/outboxhq/outbox/pkg/budget"
	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/event"
	"github.com/outboxhq/outbox/pkg/queue"
	"github.com/outboxhq/outbox/pkg/store/keyring"
)

// Defaults of the configuration keys Config covers. A default that a lower package also applies
// (pkg/event's limits, pkg/queue's bounds and policy) is that package's constant, so each value
// is declared once.
const (
	DefaultDataDir         = "./outbox-data"
	DefaultMaxEventBytes   = event.DefaultMaxEventBytes
	DefaultMaxRequestBytes = event.DefaultMaxRequestBytes
	DefaultEndpoint        = "https://api.segment.io/v1/batch"
	DefaultFormat          = "segment"
	DefaultTimeout         = 30 * time.Second
	DefaultBatchMaxEvents  = 500
	DefaultBatchMaxBytes   = 500000
	DefaultBatchInterval   = 5 * time.Second
	DefaultQueueMaxBytes   = queue.DefaultMaxBytes
	DefaultMaxPendingBytes = 16 << 20
	DefaultWhenFull        = string(queue.Reject)
	DefaultSync            = "always"
	DefaultDeadMaxBytes    = queue.DefaultDeadMaxBytes
	DefaultConcurrency     = "auto"
	DefaultMaxConcurrency  = 32
	DefaultOnAuthFailure   = OnAuthFailurePause
)

// The values of upload.on_auth_failure: what a refusal of our credentials (401, 403) does.
const (
	// OnAuthFailurePause pauses delivery with the batch queued and probes the head batch
	// about once a minute (and at once after a reload) until the destination accepts us.
	OnAuthFailurePause = "pause"
	// OnAuthFailureDeadLetter dead-letters the refused batch, as any other rejection.
	OnAuthFailureDeadLetter = "dead_letter"
)

// Config is the client's configuration. Each section and field maps 1:1 onto a configuration key
// section 8 through its mapstructure tag, so the agent decodes it with viper unchanged.
//
// Start from DefaultConfig: the booleans upload.gzip and upload.split_rejected default to
// true there, which a zero Config cannot express. Open fills other zero values (empty strings,
// zero numbers and durations, and an all-zero Retry) with their defaults before Validate.
type Config struct {
	DataDir string        `mapstructure:"data_dir"` // "" → ./outbox-data
	Limits  LimitsConfig  `mapstructure:"limits"`
	Upload  UploadConfig  `mapstructure:"upload"`
	Batch   BatchConfig   `mapstructure:"batch"`
	Retry   budget.Config `mapstructure:"retry"` // all zero → budget.DefaultConfig()
	Queue   QueueConfig   `mapstructure:"queue"`
	Dead    DeadConfig    `mapstructure:"dead"`
	Privacy PrivacyConfig `mapstructure:"privacy"` // scrub rules and suppress list (privacy.go)
	// Sources are the sources besides the default one, and relay mode (sources.go). Zero →
	// one source, the default one, as upload.* describes it.
	Sources SourcesConfig `mapstructure:"sources"`
}

// LimitsConfig is the limits.* section.
type LimitsConfig struct {
	// MaxEventBytes bounds one normalised event (Enqueue rejects bigger ones). 0 → 32768.
	MaxEventBytes int `mapstructure:"max_event_bytes"`
	// MaxRequestBytes bounds one ingest request; the agent uses it, the library does not. 0 → 512000.
	MaxRequestBytes int `mapstructure:"max_request_bytes"`
}

// UploadConfig is the upload.* section.
type UploadConfig struct {
	Endpoint      string            `mapstructure:"endpoint"`       // "" → https://api.segment.io/v1/batch
	WriteKey      string            `mapstructure:"write_key"`      // Basic auth user when set; never logged
	Format        string            `mapstructure:"format"`         // "segment" (the only one); "" → segment
	Gzip          bool              `mapstructure:"gzip"`           // Content-Encoding: gzip; default true
	Timeout       time.Duration     `mapstructure:"timeout"`        // one attempt, redirects included; 0 → 30s
	Headers       map[string]string `mapstructure:"headers"`        // extra request headers; not the reserved ones (see Validate)
	CAFile        string            `mapstructure:"ca_file"`        // PEM roots added to the system pool
	SplitRejected bool              `mapstructure:"split_rejected"` // bisect 400/422, split 413; default true
	// Concurrency is how many batches may be in flight at once: "auto" (adapt between 1 and
	// MaxConcurrency from what the destination answers; limit.go) or a whole number >= 1
	// fixing it ("1": strict FIFO delivery, one batch at a time). "" → auto.
	Concurrency string `mapstructure:"concurrency"`
	// MaxConcurrency bounds auto's limit. 0 → 32.
	MaxConcurrency int `mapstructure:"max_concurrency"`
	// OnAuthFailure is what a refusal of our credentials does: OnAuthFailurePause or
	// OnAuthFailureDeadLetter. "" → pause.
	OnAuthFailure string `mapstructure:"on_auth_failure"`
}

// fixedConcurrency is upload.concurrency as a number, 0 for auto (or an invalid value, which
// Validate reports).
func (u UploadConfig) fixedConcurrency() int {
	if u.Concurrency == "" || u.Concurrency == DefaultConcurrency {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(u.Concurrency))
	if err != nil || n < 1 {
		return 0
	}
	return n
}

// BatchConfig is the batch.* section: a batch is sent when either size is reached or the
// oldest queued event is Interval old.
type BatchConfig struct {
	MaxEvents int           `mapstructure:"max_events"` // 0 → 500
	MaxBytes  int           `mapstructure:"max_bytes"`  // uncompressed body size; 0 → 500000
	Interval  time.Duration `mapstructure:"interval"`   // 0 → 5s
}

// QueueConfig is the queue.* section.
type QueueConfig struct {
	MaxBytes int64  `mapstructure:"max_bytes"` // stored event bytes; 0 → 1 GiB
	WhenFull string `mapstructure:"when_full"` // reject | block | drop_oldest; "" → reject
	Sync     string `mapstructure:"sync"`      // always | none; "" → always
	// MaxPendingBytes bounds the normalised bytes EnqueueAsync has accepted and not yet
	// handed back through done; past it EnqueueAsync waits for room. 0 → 16 MiB.
	MaxPendingBytes int64 `mapstructure:"max_pending_bytes"`
	// Encryption seals the stored events and dead letters at rest (queue.encryption.*).
	Encryption EncryptionConfig `mapstructure:"encryption"`
}

// EncryptionConfig is the queue.encryption.* section.
type EncryptionConfig struct {
	// KeyFiles are files of 32 random bytes each (outbox keygen): the first seals every record
	// written, every one opens. Empty: records are stored plain.
	KeyFiles []string `mapstructure:"key_files"`
}

// DeadConfig is the dead.* section.
type DeadConfig struct {
	MaxBytes int64 `mapstructure:"max_bytes"` // dead-letter bytes kept; 0 → 256 MiB
}

// DefaultConfig returns every default of the configuration keys.
func DefaultConfig() Config {
	c := Config{
		Upload: UploadConfig{Gzip: true, SplitRejected: true},
		Retry:  budget.DefaultConfig(),
	}
	return c.withDefaults()
}

// WithDefaults returns c with its zero values filled with their defaults, as Open fills them:
// what a key left unset means. The booleans upload.gzip and upload.split_rejected are not
// filled (false is a setting); DefaultConfig has them true.
func (c Config) WithDefaults() Config { return c.withDefaults() }

// withDefaults fills zero values with their defaults.
func (c Config) withDefaults() Config {
	if c.Sources.Max == 0 {
		c.Sources.Max = DefaultMaxSources
	}
	setStr := func(p *string, d string) {
		if *p == "" {
			*p = d
		}
	}
	setStr(&c.DataDir, DefaultDataDir)
	setStr(&c.Upload.Endpoint, DefaultEndpoint)
	setStr(&c.Upload.Format, DefaultFormat)
	setStr(&c.Upload.Concurrency, DefaultConcurrency)
	setStr(&c.Upload.OnAuthFailure, DefaultOnAuthFailure)
	if c.Upload.MaxConcurrency == 0 {
		c.Upload.MaxConcurrency = DefaultMaxConcurrency
	}
	setStr(&c.Queue.WhenFull, DefaultWhenFull)
	setStr(&c.Queue.Sync, DefaultSync)
	if c.Limits.MaxEventBytes == 0 {
		c.Limits.MaxEventBytes = DefaultMaxEventBytes
	}
	if c.Limits.MaxRequestBytes == 0 {
		c.Limits.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if c.Upload.Timeout == 0 {
		c.Upload.Timeout = DefaultTimeout
	}
	if c.Batch.MaxEvents == 0 {
		c.Batch.MaxEvents = DefaultBatchMaxEvents
	}
	if c.Batch.MaxBytes == 0 {
		c.Batch.MaxBytes = DefaultBatchMaxBytes
	}
	if c.Batch.Interval == 0 {
		c.Batch.Interval = DefaultBatchInterval
	}
	if c.Retry == (budget.Config{}) {
		c.Retry = budget.DefaultConfig()
	}
	if c.Queue.MaxBytes == 0 {
		c.Queue.MaxBytes = DefaultQueueMaxBytes
	}
	if c.Queue.MaxPendingBytes == 0 {
		c.Queue.MaxPendingBytes = DefaultMaxPendingBytes
	}
	if c.Dead.MaxBytes == 0 {
		c.Dead.MaxBytes = DefaultDeadMaxBytes
	}
	return c
}

// Validate reports every invalid value in one error wrapping errs.ErrInvalidConfig, each an
// *errs.KeyError that carries its key (errs.KeyErrors lists them) and whose message names it,
// e.g. `upload.endpoint "ftp://x": must be an http or https URL`. Zero values that Open would
// fill are accepted; upload.ca_file must hold a PEM certificate. upload.headers may not set, in any letter case, the
// headers outbox's wire contract owns: X-Retry-Count, Content-Type, Content-Encoding,
// Content-Length, Transfer-Encoding, Host, User-Agent, and Authorization while
// upload.write_key is set (`upload.headers.X-Retry-Count: reserved: …`).
func (c Config) Validate() error {
	c = c.withDefaults()
	var problems []error
	bad := func(key string, v any, why string) {
		problems = append(problems, errs.KeyErrorf(key, "%s %v: %s", key, v, why))
	}
	if u, err := url.Parse(c.Upload.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad("upload.endpoint", fmt.Sprintf("%q", redact.URL(c.Upload.Endpoint)), "must be an http or https URL")
	}
	if c.Upload.Format != DefaultFormat {
		bad("upload.format", fmt.Sprintf("%q", c.Upload.Format), `must be "segment"`)
	}
	if c.Upload.Timeout < 0 {
		bad("upload.timeout", c.Upload.Timeout, "must be greater than zero")
	}
	if c.Upload.Concurrency != DefaultConcurrency && c.Upload.fixedConcurrency() == 0 {
		bad("upload.concurrency", fmt.Sprintf("%q", c.Upload.Concurrency), "must be auto or a whole number of batches in flight, at least 1")
	}
	if a := c.Upload.OnAuthFailure; a != OnAuthFailurePause && a != OnAuthFailureDeadLetter {
		bad("upload.on_auth_failure", fmt.Sprintf("%q", a), "must be pause or dead_letter")
	}
	if c.Upload.MaxConcurrency < 0 || c.Upload.MaxConcurrency > 1024 {
		bad("upload.max_concurrency", c.Upload.MaxConcurrency, "must be between 1 and 1024")
	}
	problems = append(problems, c.Sources.validate()...)
	if c.Upload.CAFile != "" {
		if _, err := cafile.Load(c.Upload.CAFile); err != nil {
			problems = append(problems, &errs.KeyError{Key: "upload.ca_file", Err: err})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(c.Upload.Headers)) {
		if !validHeaderName(k) {
			bad("upload.headers", fmt.Sprintf("%q", k), "is not a valid header name")
		} else if why := reservedHeader(k, c.Upload.WriteKey != ""); why != "" {
			// The value is not shown: it may be a credential.
			problems = append(problems, errs.KeyErrorf("upload.headers", "upload.headers.%s: %s", k, why))
		}
	}
	if c.Limits.MaxEventBytes < 0 {
		bad("limits.max_event_bytes", c.Limits.MaxEventBytes, "must be greater than zero")
	}
	if c.Limits.MaxRequestBytes < 0 {
		bad("limits.max_request_bytes", c.Limits.MaxRequestBytes, "must be greater than zero")
	}
	if c.Limits.MaxEventBytes > c.Limits.MaxRequestBytes {
		problems = append(problems, &errs.KeyError{Key: "limits.max_event_bytes", Related: []string{"limits.max_request_bytes"},
			Err: fmt.Errorf("limits.max_event_bytes (%d) is larger than limits.max_request_bytes (%d); raise the second or lower the first",
				c.Limits.MaxEventBytes, c.Limits.MaxRequestBytes)})
	}
	if c.Batch.MaxEvents < 0 {
		bad("batch.max_events", c.Batch.MaxEvents, "must be greater than zero")
	}
	if minBytes := event.BatchEnvelopeBytes + c.Limits.MaxEventBytes; c.Batch.MaxBytes < minBytes {
		problems = append(problems, &errs.KeyError{Key: "batch.max_bytes", Related: []string{"limits.max_event_bytes"},
			Err: fmt.Errorf("batch.max_bytes %d: must hold one event of limits.max_event_bytes (at least %d)", c.Batch.MaxBytes, minBytes)})
	}
	if c.Batch.Interval < 0 {
		bad("batch.interval", c.Batch.Interval, "must be greater than zero")
	}
	if c.Queue.MaxPendingBytes < 0 {
		bad("queue.max_pending_bytes", c.Queue.MaxPendingBytes, "must be greater than zero")
	}
	// queue.max_bytes, queue.when_full and dead.max_bytes: the queue's own rules.
	qc := queue.Config{MaxBytes: c.Queue.MaxBytes, WhenFull: queue.WhenFull(c.Queue.WhenFull), DeadMaxBytes: c.Dead.MaxBytes}
	if err := qc.Validate(); err != nil {
		problems = append(problems, err)
	}
	if _, err := keyring.Load(c.Queue.Encryption.KeyFiles); err != nil {
		problems = append(problems, &errs.KeyError{Key: "queue.encryption.key_files", Err: err})
	}
	switch c.Queue.Sync {
	case "always", "none":
	default:
		bad("queue.sync", fmt.Sprintf("%q", c.Queue.Sync), "must be always or none")
	}
	if err := c.Retry.Validate(); err != nil {
		problems = append(problems, err)
	}
	problems = append(problems, c.Privacy.validate()...)
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", errs.ErrInvalidConfig, errors.Join(problems...))
}

// reservedHeader says why name (compared case-insensitively) may not be set through
// upload.headers, "" when it may. These headers are the wire contract (docs/CONTRACT.md, "Wire format"), set by
// outbox or by the HTTP client on every attempt; an override would either break the contract
// (a first attempt carrying X-Retry-Count) or be dropped without a word.
func reservedHeader(name string, writeKey bool) string {
	switch http.CanonicalHeaderKey(name) {
	case "X-Retry-Count":
		return "reserved: outbox sets it per attempt (absent on a batch's first attempt, then 1, 2, 3 …)"
	case "Content-Type":
		return "reserved: outbox sends application/json, the only body it builds"
	case "Content-Encoding":
		return "reserved: outbox sets it from upload.gzip"
	case "Content-Length", "Transfer-Encoding":
		return "reserved: the HTTP client sets it from the body"
	case "Host":
		return "reserved: the HTTP client sets it from upload.endpoint"
	case "User-Agent":
		return "reserved: outbox sends outbox/<version> so collectors can tell its traffic apart"
	case "Authorization":
		if writeKey {
			return "reserved while upload.write_key is set (it sends Basic auth); set one or the other"
		}
	}
	return ""
}

// validHeaderName reports whether s is an RFC 9110 token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c < 0x80 && c > ' ' && !isSeparator(c):
		default:
			return false
		}
	}
	return true
}

func isSeparator(c byte) bool {
	for i := 0; i < len(`()<>@,;:\"/[]?={}`); i++ {
		if `()<>@,;:\"/[]?={}`[i] == c {
			return true
		}
	}
	return false
}

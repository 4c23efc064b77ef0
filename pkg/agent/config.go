package agent

import (
	"io"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/outboxhq/outbox/pkg/budget"
	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/event"
)

// Defaults applied by Config for zero values.
const (
	// DefaultListen is ingest.listen when unset: loopback only.
	DefaultListen = "127.0.0.1:8089"
	// DefaultMaxRequestBytes is limits.max_request_bytes when unset (Segment's limit; pkg/event
	// declares it).
	DefaultMaxRequestBytes int64 = event.DefaultMaxRequestBytes
	// DefaultMaxEventBytes is limits.max_event_bytes when unset (Segment's limit; pkg/event
	// declares it).
	DefaultMaxEventBytes = event.DefaultMaxEventBytes
	// DefaultShutdownTimeout is shutdown.timeout when unset.
	DefaultShutdownTimeout = 25 * time.Second
	// DefaultMaxConnections is ingest.max_connections when unset.
	DefaultMaxConnections = 1024
)

// DefaultConfig returns every default of the agent's keys.
func DefaultConfig() Config {
	c := Config{WriteKeys: []string{}, Admin: AdminConfig{AllowedHosts: []string{}}}.withDefaults()
	c.Logger = nil
	return c
}

// Config configures an Agent. Each field maps to one configuration key; the zero value of
// every field is usable and means the documented default.
type Config struct {
	// Listen is ingest.listen, the host:port the HTTP server binds. "" → DefaultListen.
	Listen string
	// WriteKeys is ingest.write_keys. When non-empty, ingest requests must carry
	// one of them as the Basic auth username (what Segment SDKs send); a batch request with no
	// Authorization header may carry it as the body's writeKey instead. nil → no write-key auth.
	WriteKeys []string
	// Token is ingest.token. When set, "Authorization: Bearer <Token>" is accepted on
	// ingest routes. "" → no token auth.
	Token string
	// Admin is admin.*: the credential of the admin routes (admin_auth.go). Ingest
	// credentials never open them; without admin.token and mTLS they answer loopback only.
	Admin AdminConfig
	// MaxConnections is ingest.max_connections: the most connections served at once; past
	// it the listener accepts the next one only when one closes (conn_limit.go).
	// 0 → DefaultMaxConnections.
	MaxConnections int
	// AllowUnauthenticated is ingest.allow_unauthenticated: permit a non-loopback Listen
	// with neither WriteKeys, Token nor mTLS. false → such a Config is refused by Validate.
	AllowUnauthenticated bool
	// TLS is ingest.tls.*: HTTPS, and mTLS, on the listener (tls.go). Zero → plain HTTP.
	TLS TLSConfig
	// MaxRequestBytes is limits.max_request_bytes: the largest request body, measured after
	// decompression. 0 → DefaultMaxRequestBytes.
	MaxRequestBytes int64
	// MaxEventBytes is limits.max_event_bytes: the largest single event. 0 → DefaultMaxEventBytes.
	MaxEventBytes int
	// ShutdownTimeout is shutdown.timeout: the bound Serve gives Shutdown when its context
	// ends. 0 → DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// Logger receives request and lifecycle logs (never secrets). nil → discard.
	Logger *slog.Logger
	// QueueMaxBytes is queue.max_bytes as the uploader was given it. The agent exports it as
	// the outbox_queue_max_bytes gauge (for a "queue near full" alert) and the status page
	// shows the queue's fill against it. 0 → neither.
	QueueMaxBytes int64
	// Sources is how ingest write keys select sources (sources.go). Zero → every event goes to
	// the default source, as with one source.
	Sources SourcesConfig
	// Clock paces the status page's per-second sampler. nil → the system clock; tests pass
	// a fake one to step it.
	Clock budget.Clock
}

// WithDefaults returns c with its zero values filled with their defaults, as New fills them:
// what a key left unset means.
func (c Config) WithDefaults() Config { return c.withDefaults() }

// withDefaults returns a copy of c with zero values replaced by the defaults.
func (c Config) withDefaults() Config {
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.MaxRequestBytes == 0 {
		c.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if c.MaxEventBytes == 0 {
		c.MaxEventBytes = DefaultMaxEventBytes
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.MaxConnections == 0 {
		c.MaxConnections = DefaultMaxConnections
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	c.WriteKeys = append([]string(nil), c.WriteKeys...)
	c.Admin.AllowedHosts = append([]string(nil), c.Admin.AllowedHosts...)
	return c
}

// Validate reports the first invalid field as an *errs.KeyError naming its configuration key. Zero values are
// valid (they mean the defaults). The TLS files are read and checked (a missing file, a key
// that does not match its certificate). A non-loopback Listen with neither WriteKeys, Token nor mTLS is
// refused unless AllowUnauthenticated is set; the error wraps ErrUnauthenticated.
func (c Config) Validate() error {
	c = c.withDefaults()
	host, _, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return errs.KeyErrorf("ingest.listen", "ingest.listen %q: want host:port (for example 127.0.0.1:8089): %w", c.Listen, err)
	}
	for i, k := range c.WriteKeys {
		if strings.TrimSpace(k) == "" {
			return errs.KeyErrorf("ingest.write_keys", "ingest.write_keys[%d]: a write key must not be empty", i)
		}
	}
	if err := checkToken("ingest.token", c.Token); err != nil {
		return err
	}
	if err := checkToken("admin.token", c.Admin.Token); err != nil {
		return err
	}
	for i, h := range c.Admin.AllowedHosts {
		if strings.TrimSpace(h) == "" || strings.ContainsAny(h, "/ ") {
			return errs.KeyErrorf("admin.allowed_hosts", "admin.allowed_hosts[%d] %q: want a host name as clients put it in the URL, "+
				"for example outbox.internal or outbox.internal:8089", i, h)
		}
	}
	if c.MaxConnections < 0 {
		return errs.KeyErrorf("ingest.max_connections", "ingest.max_connections %d: must be positive", c.MaxConnections)
	}
	if c.MaxRequestBytes < 0 {
		return errs.KeyErrorf("limits.max_request_bytes", "limits.max_request_bytes %d: must be positive", c.MaxRequestBytes)
	}
	if c.MaxEventBytes < 0 {
		return errs.KeyErrorf("limits.max_event_bytes", "limits.max_event_bytes %d: must be positive", c.MaxEventBytes)
	}
	if c.QueueMaxBytes < 0 {
		return errs.KeyErrorf("queue.max_bytes", "queue.max_bytes %d: must be positive", c.QueueMaxBytes)
	}
	if c.ShutdownTimeout < 0 {
		return errs.KeyErrorf("shutdown.timeout", "shutdown.timeout %s: must be positive", c.ShutdownTimeout)
	}
	if c.TLS.Enabled() {
		if _, err := loadTLS(c.TLS); err != nil {
			return err
		}
	} else if err := c.TLS.validate(); err != nil {
		return err
	}
	if err := c.validateSources(host); err != nil {
		return err
	}
	if !c.hasAuth() && !c.AllowUnauthenticated && !isLoopback(host) {
		return errs.KeyErrorf("ingest.listen", "%w: ingest.listen %q is not a loopback address and neither ingest.write_keys, "+
			"ingest.token nor ingest.tls.client_ca_file (mTLS) is set; set one of them, listen on 127.0.0.1, or set "+
			"ingest.allow_unauthenticated: true", ErrUnauthenticated, c.Listen)
	}
	return nil
}

// checkToken refuses a token with whitespace at its start or end: a client would send it
// without, and every request would be refused with no hint why. Configuration loading trims
// what it reads (a token file's final newline); a value that still has it came from a caller.
func checkToken(key, tok string) error {
	if tok != strings.TrimSpace(tok) {
		return errs.KeyErrorf(key, "%s has whitespace (a space or newline) at its start or end, which no client sends: remove it", key)
	}
	return nil
}

// hasAuth reports whether any credential is configured; a required client certificate
// (mTLS) is one.
func (c Config) hasAuth() bool {
	return len(c.WriteKeys) > 0 || c.Token != "" || c.TLS.mutual() || (len(c.Sources.Keys) > 0 && !c.Sources.Relay)
}

// isLoopback reports whether host names only the loopback interface. An empty host (":8089")
// binds every interface and is not loopback; names other than "localhost" are not resolved
// and count as non-loopback.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

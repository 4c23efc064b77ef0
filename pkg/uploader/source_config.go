package uploader

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/queue"
)

// The sources.* section: each named source's settings and their validation (the runtime
// registry is sources.go, the library's handle and per-source stats source.go).

// DefaultSource is the source of events enqueued without one, uploaded with upload.write_key to
// upload.endpoint.
const DefaultSource = queue.DefaultSource

// DefaultMaxSources is sources.max's default.
const DefaultMaxSources = 64

// ErrTooManySources is returned by RelaySource when a new source would exceed sources.max.
var ErrTooManySources = errors.New("too many sources")

// SourceConfig is one named source, sources.<name>.*.
type SourceConfig struct {
	// WriteKeys are the ingest write keys (the Basic auth username Segment SDKs send) that
	// select this source at the agent; secrets.
	WriteKeys []string
	// UploadWriteKey is sent as Basic auth with the source's uploads; "" sends none. A secret.
	UploadWriteKey string
	// Endpoint is where the source's batches go; "" → upload.endpoint.
	Endpoint string
	// Headers are set on the source's uploads over upload.headers.
	Headers map[string]string
	// MaxBytes is the source's own share of queue.max_bytes: past it only this source's events
	// are refused (errs.ErrSourceFull). 0 → no share of its own.
	MaxBytes int64
	// Topic is the Kafka topic of the source's events when they go to Kafka (pkg/kafka's
	// Config.Topics, filled from it where the destination is built); "" → upload.kafka.topic.
	// The uploader itself does not read it: the Kafka destination routes each batch by source.
	Topic string
}

// SourcesConfig is the sources.* section. Its zero value is one source, DefaultSource.
type SourcesConfig struct {
	// Named are the configured sources by name (a nil entry is a source with every setting
	// at its zero value). A source named "default" sets the default source's settings over
	// the upload.* keys.
	Named map[string]*SourceConfig
	// Relay (sources.relay) makes an ingest write key that no source lists a source of its
	// own on first use, uploaded with that key.
	Relay bool
	// RelayEndpoint (sources.relay_endpoint) is where relay sources upload; "" →
	// upload.endpoint.
	RelayEndpoint string
	// Max (sources.max) bounds the sources, the default one, the named ones and the relay
	// ones together. 0 → DefaultMaxSources.
	Max int
}

var sourceNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// ValidSourceName reports whether name can name a configured source: 1 to 63 lower-case
// letters, digits, '-' and '_', starting with a letter or a digit; not relay, relay_endpoint
// or max (keys of the sources section), nor starting with "relay-" (relay sources' names).
func ValidSourceName(name string) error {
	if !sourceNameRE.MatchString(name) {
		return fmt.Errorf("source name %q: use 1 to 63 lower-case letters, digits, - and _, starting with a letter or digit", name)
	}
	switch {
	case name == "relay" || name == "relay_endpoint" || name == "max":
		return fmt.Errorf("source name %q is a key of the sources section; choose another name", name)
	case strings.HasPrefix(name, "relay-"):
		return fmt.Errorf("source name %q: names starting with relay- are those of relay sources; choose another name", name)
	}
	return nil
}

// validate reports every problem of the sources.* section as an *errs.KeyError.
func (c SourcesConfig) validate() []error {
	var problems []error
	if c.Max < 0 {
		problems = append(problems, errs.KeyErrorf("sources.max", "sources.max %d: must be at least 1", c.Max))
	}
	max := c.Max
	if max == 0 {
		max = DefaultMaxSources
	}
	named := len(c.Named)
	if _, ok := c.Named[DefaultSource]; !ok {
		named++
	}
	if named > max {
		problems = append(problems, errs.KeyErrorf("sources.max", "%d sources are configured (the default one included), more than sources.max %d: raise sources.max", named, max))
	}
	owner := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(c.Named)) {
		s := c.source(name)
		if err := ValidSourceName(name); err != nil {
			problems = append(problems, errs.KeyErrorf("sources."+name, "%v", err))
			continue
		}
		if s.MaxBytes < 0 {
			problems = append(problems, errs.KeyErrorf("sources."+name+".max_bytes", "sources.%s.max_bytes %d: must be greater than zero", name, s.MaxBytes))
		}
		if s.Endpoint != "" {
			if u, err := url.Parse(s.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				problems = append(problems, errs.KeyErrorf("sources."+name+".endpoint", "sources.%s.endpoint is not an http(s) URL", name))
			}
		}
		for _, h := range slices.Sorted(maps.Keys(s.Headers)) {
			if !validHeaderName(h) {
				problems = append(problems, errs.KeyErrorf("sources."+name+".headers", "sources.%s.headers %q is not a valid header name", name, h))
			} else if why := reservedHeader(h, s.UploadWriteKey != ""); why != "" {
				problems = append(problems, errs.KeyErrorf("sources."+name+".headers", "sources.%s.headers.%s: %s", name, h, why))
			}
		}
		for _, k := range s.WriteKeys {
			if strings.TrimSpace(k) == "" {
				problems = append(problems, errs.KeyErrorf("sources."+name+".write_keys", "sources.%s.write_keys: a write key must not be empty", name))
			}
			if other, dup := owner[k]; dup {
				// The key itself is a secret: name the sources only.
				problems = append(problems, errs.KeyErrorf("sources."+name+".write_keys", "a write key of sources.%s.write_keys is also one of sources.%s.write_keys: a key selects one source", name, other))
			}
			owner[k] = name
		}
	}
	if c.RelayEndpoint != "" {
		if u, err := url.Parse(c.RelayEndpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			problems = append(problems, errs.KeyErrorf("sources.relay_endpoint", "sources.relay_endpoint is not an http(s) URL"))
		}
	}
	return problems
}

// source is the configuration of the named source name (zero for a nil entry).
func (c SourcesConfig) source(name string) SourceConfig {
	if s := c.Named[name]; s != nil {
		return *s
	}
	return SourceConfig{}
}

// sourceMaxBytes is each named source's share, for the queue.
func (c SourcesConfig) sourceMaxBytes() map[string]int64 {
	out := map[string]int64{}
	for name, s := range c.Named {
		if s != nil && s.MaxBytes > 0 {
			out[name] = s.MaxBytes
		}
	}
	return out
}

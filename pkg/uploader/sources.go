package uploader

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/outboxhq/outbox/pkg/errs"
	"github.com/outboxhq/outbox/pkg/httpdest"
	"github.com/outboxhq/outbox/pkg/queue"
)

// Several sources: each source (a Segment source: an app with its own write key, maybe in
// another region) is its own FIFO in the queue, drained in turn, and uploaded with its own
// write key, endpoint and headers. The source named DefaultSource is the one the upload.*
// keys describe; every event enqueued without a source goes there. A relay source is one the
// agent made for an ingest write key no configured source lists (sources.relay): its name is
// "relay-" and a hash of the key, never the key, and the key it uploads with is kept in the
// store's source registry, so that its queued events still go out with it after a restart.

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

// relayRecord is a relay source as the store's registry keeps it (JSON).
type relayRecord struct {
	WriteKey string `json:"write_key"`
	Endpoint string `json:"endpoint,omitempty"`
}

// sources is the client's view of its sources: the configured ones, and the relay ones read
// from the registry at open and added by RelaySource. Its route answers the HTTP destination
// for every attempt.
type sources struct {
	cfg SourcesConfig

	mu      sync.RWMutex // guards the fields below
	relay   map[string]relayRecord
	byKey   map[string]string    // relay write key → source name
	lastOK  map[string]time.Time // when a batch of each source was last delivered
	save    func(ctx context.Context, name string, rec []byte) error
	records func() (map[string][]byte, error)
}

func newSources(cfg SourcesConfig) *sources {
	if cfg.Max == 0 {
		cfg.Max = DefaultMaxSources
	}
	return &sources{cfg: cfg, relay: map[string]relayRecord{}, byKey: map[string]string{}, lastOK: map[string]time.Time{}}
}

// load reads the relay sources of the registry of q.
func (s *sources) load(q *queue.Queue) error {
	s.save, s.records = q.SaveSourceRecord, q.SourceRecords
	recs, err := q.SourceRecords()
	if err != nil {
		return fmt.Errorf("read the source registry: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, raw := range recs {
		var r relayRecord
		if err := json.Unmarshal(raw, &r); err != nil || r.WriteKey == "" {
			return fmt.Errorf("source registry: source %s is unreadable", name)
		}
		s.relay[name] = r
		s.byKey[r.WriteKey] = name
	}
	return nil
}

// route is the HTTP destination's RoutesFunc.
func (s *sources) route(name string) (httpdest.Route, bool) {
	if _, ok := s.cfg.Named[name]; ok {
		c := s.cfg.source(name)
		return httpdest.Route{Endpoint: c.Endpoint, WriteKey: c.UploadWriteKey, Headers: c.Headers}, true
	}
	s.mu.RLock()
	r, ok := s.relay[name]
	s.mu.RUnlock()
	if !ok {
		return httpdest.Route{}, false
	}
	return httpdest.Route{Endpoint: r.Endpoint, WriteKey: r.WriteKey}, true
}

// count is how many sources there are: the default one, the named ones, the relay ones.
func (s *sources) count() int {
	n := len(s.cfg.Named) + len(s.relay)
	if _, ok := s.cfg.Named[DefaultSource]; !ok {
		n++
	}
	return n
}

// known reports whether name is a source of this client.
func (s *sources) known(name string) bool {
	if name == DefaultSource {
		return true
	}
	if _, ok := s.cfg.Named[name]; ok {
		return true
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, ok := s.relay[name]
	return ok
}

// relayName is the name of the relay source of writeKey: "relay-" and 12 hex digits of its
// SHA-256, so that status, metrics and logs can show it without showing the key.
func relayName(writeKey string) string {
	h := sha256.Sum256([]byte(writeKey))
	return "relay-" + hex.EncodeToString(h[:6])
}

// RelaySource returns the source of the ingest write key writeKey in relay mode
// (sources.relay): the relay source made for it on its first use, uploaded with that key to
// sources.relay_endpoint (else upload.endpoint), and kept in the store's source registry
// (durable before RelaySource returns) so that its events are uploaded with it after a
// restart. A new key past sources.max returns an error matching ErrTooManySources; relay mode
// off returns one naming sources.relay.
func (c *Client) RelaySource(ctx context.Context, writeKey string) (string, error) {
	s := c.sources
	if !s.cfg.Relay {
		return "", errors.New("uploader: relay sources need sources.relay: true")
	}
	if writeKey == "" {
		return "", errors.New("uploader: a relay source needs a write key")
	}
	s.mu.RLock()
	name, ok := s.byKey[writeKey]
	s.mu.RUnlock()
	if ok {
		return name, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if name, ok := s.byKey[writeKey]; ok {
		return name, nil
	}
	name = relayName(writeKey)
	if _, taken := s.relay[name]; taken {
		return "", fmt.Errorf("uploader: relay source %s already belongs to another write key", name)
	}
	if n := s.count(); n >= s.cfg.Max {
		return "", fmt.Errorf("%w: %d sources, sources.max is %d", ErrTooManySources, n, s.cfg.Max)
	}
	r := relayRecord{WriteKey: writeKey, Endpoint: s.cfg.RelayEndpoint}
	raw, _ := json.Marshal(r)
	if err := s.save(ctx, name, raw); err != nil {
		return "", fmt.Errorf("uploader: save relay source %s: %w", name, err)
	}
	s.relay[name] = r
	s.byKey[writeKey] = name
	return name, nil
}

// delivered records that a batch of source was delivered at t.
func (s *sources) delivered(source string, t time.Time) {
	s.mu.Lock()
	s.lastOK[source] = t
	s.mu.Unlock()
}

// SourceStats is one source's share of the client's work (Stats().Sources).
type SourceStats struct {
	Name        string
	Events      int64         // queued events of this source
	Bytes       int64         // and their bytes
	OldestAge   time.Duration // age of its oldest queued event; 0 when none
	LastSuccess time.Time     // when a batch of it was last delivered since Open; zero when none
	Relay       bool          // a relay source (made for an ingest write key; its name is not the key)
}

// sourceStats are the rows of Stats().Sources: every configured and relay source, and any
// other source the queue holds events of, by name.
func (c *Client) sourceStats(now time.Time) []SourceStats {
	s := c.sources
	rows := map[string]*SourceStats{DefaultSource: {Name: DefaultSource}}
	for name := range s.cfg.Named {
		rows[name] = &SourceStats{Name: name}
	}
	s.mu.RLock()
	for name := range s.relay {
		rows[name] = &SourceStats{Name: name, Relay: true}
	}
	for name, t := range s.lastOK {
		if r := rows[name]; r != nil {
			r.LastSuccess = t
		}
	}
	s.mu.RUnlock()
	for _, qs := range c.q.Sources() {
		r := rows[qs.Name]
		if r == nil {
			r = &SourceStats{Name: qs.Name}
			rows[qs.Name] = r
		}
		r.Events, r.Bytes = qs.Events, qs.Bytes
		if !qs.Oldest.IsZero() {
			r.OldestAge = max(now.Sub(qs.Oldest), 0)
		}
	}
	out := make([]SourceStats, 0, len(rows))
	for _, name := range slices.Sorted(maps.Keys(rows)) {
		out = append(out, *rows[name])
	}
	return out
}

// Source is a handle on one source of the client: what it enqueues goes into that source's
// FIFO and is uploaded with that source's settings.
type Source struct {
	c    *Client
	name string
}

// Source returns the handle of the source name: DefaultSource, a configured source
// (sources.<name>) or a relay source; an error names the sources to choose from otherwise.
func (c *Client) Source(name string) (*Source, error) {
	if !c.sources.known(name) {
		return nil, fmt.Errorf("uploader: no source named %q; configure it under sources.%s", name, name)
	}
	return &Source{c: c, name: name}, nil
}

// Name returns the source's name.
func (s *Source) Name() string { return s.name }

// Enqueue is Client.Enqueue into this source. Past the source's own share of the queue
// (sources.<name>.max_bytes) it returns an error matching errs.ErrQueueFull (and
// errs.ErrSourceFull), for this source only.
func (s *Source) Enqueue(ctx context.Context, events ...any) error {
	call, err := s.c.normalize(events)
	if err != nil {
		return err
	}
	defer call.release()
	return s.c.EnqueueNormalizedIn(ctx, s.name, call.events...)
}

// EnqueueAsync is Client.EnqueueAsync into this source.
func (s *Source) EnqueueAsync(ctx context.Context, done func(error), events ...any) error {
	call, err := s.c.normalize(events)
	if err != nil {
		return err
	}
	defer call.release()
	return s.c.enqueueNormalized(ctx, s.name, false, done, call.events)
}

// EnqueueNormalizedIn is EnqueueNormalized into source (what the agent calls with the source
// an ingest request's write key selected).
func (c *Client) EnqueueNormalizedIn(ctx context.Context, source string, events ...[]byte) error {
	return c.enqueueNormalizedWait(ctx, source, events)
}

package uploader

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/outboxhq/outbox/pkg/delivery"
	"github.com/outboxhq/outbox/pkg/queue"
)

// Several sources: each source (a Segment source: an app with its own write key, maybe in
// another region) is its own FIFO in the queue, drained in turn, and uploaded with its own
// write key, endpoint and headers. The source named DefaultSource is the one the upload.*
// keys describe; every event enqueued without a source goes there. A relay source is one the
// agent made for an ingest write key no configured source lists (sources.relay): its name is
// "relay-" and a hash of the key, never the key, and the key it uploads with is kept in the
// store's source registry, so that its queued events still go out with it after a restart.

// relayRecord is a relay source as the store's registry keeps it (JSON).
type relayRecord struct {
	WriteKey string `json:"write_key"`
	Endpoint string `json:"endpoint,omitempty"`
}

// sources is the client's view of its sources: the configured ones (replaced by
// Client.Reconfigure), the ones a reconfiguration removed while they still held events (they
// drain with their last settings, then are forgotten: sources_reload.go), and the relay ones
// read from the registry at open and added by RelaySource. Its route answers the HTTP
// destination for every attempt.
type sources struct {
	cfg SourcesConfig // Relay, RelayEndpoint and Max as Open set them; Named is read at Open only

	mu       sync.RWMutex // guards the fields below
	named    map[string]*configuredSource
	draining map[string]*configuredSource // removed by a reconfiguration, events still queued
	relay    map[string]relayRecord
	byKey    map[string]string    // relay write key → source name
	lastOK   map[string]time.Time // when a batch of each source was last delivered
	save     func(ctx context.Context, name string, rec []byte) error
	records  func() (map[string][]byte, error)
	queued   func() []queue.SourceStats
}

// configuredSource is a configured source (sources.<name>) as the client runs it.
type configuredSource struct {
	cfg SourceConfig // replaced under sources.mu
	// entering counts the enqueues into the source between their check (sources.enter) and
	// their commit's answer: a removed source is forgotten only when none is left and its FIFO
	// is empty, so no accepted event lands in a source without settings.
	entering atomic.Int64
}

func newSources(cfg SourcesConfig) *sources {
	if cfg.Max == 0 {
		cfg.Max = DefaultMaxSources
	}
	s := &sources{cfg: cfg, named: map[string]*configuredSource{}, draining: map[string]*configuredSource{},
		relay: map[string]relayRecord{}, byKey: map[string]string{}, lastOK: map[string]time.Time{}}
	for name := range cfg.Named {
		s.named[name] = &configuredSource{cfg: cloneSource(cfg.source(name))}
	}
	return s
}

// load reads the relay sources of the registry of q.
func (s *sources) load(q *queue.Queue) error {
	s.save, s.records, s.queued = q.SaveSourceRecord, q.SourceRecords, q.Sources
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

// route is the HTTP destination's RoutesFunc: a configured source's settings, a removed one's
// last settings while it drains, a relay source's key.
func (s *sources) route(name string) (delivery.Route, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	cs, ok := s.named[name]
	if !ok {
		cs, ok = s.draining[name]
	}
	if ok {
		return delivery.Route{Endpoint: cs.cfg.Endpoint, WriteKey: cs.cfg.UploadWriteKey, Headers: cs.cfg.Headers}, true
	}
	r, ok := s.relay[name]
	if !ok {
		return delivery.Route{}, false
	}
	return delivery.Route{Endpoint: r.Endpoint, WriteKey: r.WriteKey}, true
}

// count is how many sources there are: the default one, the named ones, the relay ones (a
// removed source that drains is not counted: it takes no new ingest key). The caller holds mu.
func (s *sources) count() int {
	n := len(s.named) + len(s.relay)
	if _, ok := s.named[DefaultSource]; !ok {
		n++
	}
	return n
}

// known reports whether name is a source of this client (a removed one is not).
func (s *sources) known(name string) bool {
	if name == DefaultSource {
		return true
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, ok := s.named[name]
	if !ok {
		_, ok = s.relay[name]
	}
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
	defer s.mu.Unlock()
	s.lastOK[source] = t
	if s.draining[source] != nil {
		s.sweepLocked() // a removed source is forgotten once its last batch is delivered
	}
}

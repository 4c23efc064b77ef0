package uploader

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
)

// Sources changed by a reconfiguration (a reload of sources.<name>.*): a new source is routed
// at once; a changed one's next attempts use its new settings; a removed one stops taking new
// events and drains the events it holds with its last settings, then is forgotten. Nothing
// queued is dropped: a removed source stays, shown as removed in Stats, for as long as its FIFO
// holds an event or an enqueue into it that began before the removal is still on its way.

// ErrSourceRemoved is returned by an enqueue into a source that a reconfiguration removed and
// that has drained since, so that the client no longer has its settings.
var ErrSourceRemoved = errors.New("source not configured")

// sourceChanges are the names a reconfiguration of the sources touched, sorted; never keys.
type sourceChanges struct {
	added, changed, removed []string
	// credentials lists the sources whose write key, endpoint or headers changed (a pause on
	// refused credentials probes at once).
	credentials []string
}

func (sc sourceChanges) any() bool { return len(sc.added)+len(sc.changed)+len(sc.removed) > 0 }

// reconfigure replaces the configured sources with named (already validated). A source no
// longer named keeps its last settings and drains while it holds events.
func (s *sources) reconfigure(named map[string]*SourceConfig) sourceChanges {
	next := SourcesConfig{Named: named}
	var sc sourceChanges
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, name := range slices.Sorted(maps.Keys(named)) {
		cfg := next.source(name)
		cs, ok := s.named[name]
		switch {
		case ok:
			if reflect.DeepEqual(cs.cfg, cfg) {
				continue
			}
			sc.changed = append(sc.changed, name)
			if routeChanged(cs.cfg, cfg) {
				sc.credentials = append(sc.credentials, name)
			}
		case s.draining[name] != nil:
			// Named again before it drained: its events go with the new settings.
			cs = s.draining[name]
			delete(s.draining, name)
			sc.added = append(sc.added, name)
			sc.credentials = append(sc.credentials, name)
		default:
			cs = &configuredSource{}
			sc.added = append(sc.added, name)
		}
		cs.cfg = cloneSource(cfg)
		s.named[name] = cs
	}
	for _, name := range slices.Sorted(maps.Keys(s.named)) {
		if _, ok := named[name]; ok {
			continue
		}
		sc.removed = append(sc.removed, name)
		cs := s.named[name]
		delete(s.named, name)
		if name == DefaultSource {
			continue // sources.default unset: the default source goes on with upload.*
		}
		s.draining[name] = cs
	}
	s.sweepLocked()
	return sc
}

// routeChanged reports whether a source's uploads change: its write key, endpoint or headers.
func routeChanged(a, b SourceConfig) bool {
	return a.UploadWriteKey != b.UploadWriteKey || a.Endpoint != b.Endpoint || !maps.Equal(a.Headers, b.Headers)
}

// cloneSource is c with its own list and map: the client keeps it past the caller's changes.
func cloneSource(c SourceConfig) SourceConfig {
	c.WriteKeys = slices.Clone(c.WriteKeys)
	c.Headers = maps.Clone(c.Headers)
	return c
}

// enter admits one enqueue into source: the default source, a relay source, a configured one,
// or a removed one that has not drained yet (a request that chose it as it was removed). The
// returned leave, nil when nothing is counted, must be called once the enqueue's commit has
// answered (or the enqueue failed before the queue took it).
func (s *sources) enter(source string) (leave func(), err error) {
	if source == DefaultSource {
		return nil, nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	cs, ok := s.named[source]
	if !ok {
		cs, ok = s.draining[source]
	}
	if ok {
		cs.entering.Add(1)
		return func() { cs.entering.Add(-1) }, nil
	}
	if _, ok := s.relay[source]; ok {
		return nil, nil
	}
	return nil, fmt.Errorf("uploader: source %q: %w (removed by a reconfiguration, or never configured)", source, ErrSourceRemoved)
}

// sweep forgets the removed sources that have drained.
func (s *sources) sweep() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweepLocked()
}

// sweepLocked is sweep; the caller holds mu.
func (s *sources) sweepLocked() {
	if len(s.draining) == 0 || s.queued == nil {
		return
	}
	held := map[string]bool{}
	for _, q := range s.queued() {
		if q.Events > 0 {
			held[q.Name] = true
		}
	}
	for name, cs := range s.draining {
		if !held[name] && cs.entering.Load() == 0 {
			delete(s.draining, name)
			delete(s.lastOK, name)
		}
	}
}

// isDraining reports whether name is a removed source that still drains.
func (s *sources) isDraining(name string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.draining[name] != nil
}

// shares is each configured and draining source's own share of the queue.
func (s *sources) shares() map[string]int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := map[string]int64{}
	for _, m := range []map[string]*configuredSource{s.draining, s.named} {
		for name, cs := range m {
			if cs.cfg.MaxBytes > 0 {
				out[name] = cs.cfg.MaxBytes
			}
		}
	}
	return out
}

// reconfigureSources applies a new sources.<name>.* to the running client (Reconfigure) and
// logs the sources it added, changed and removed by name.
func (c *Client) reconfigureSources(named map[string]*SourceConfig) sourceChanges {
	sc := c.sources.reconfigure(named)
	if !sc.any() {
		return sc
	}
	c.q.SetSourceMaxBytes(c.sources.shares())
	var draining []string
	for _, name := range sc.removed {
		if c.sources.isDraining(name) {
			draining = append(draining, name)
		}
	}
	c.log.Info("sources reconfigured", "added", sc.added, "changed", sc.changed, "removed", sc.removed,
		"removed_draining", draining)
	return sc
}

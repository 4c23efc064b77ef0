package uploader

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"
)

// A source as the library sees it: the handle that enqueues into one source, and the
// per-source rows of Stats.

// SourceStats is one source's share of the client's work (Stats().Sources).
type SourceStats struct {
	Name        string
	Events      int64         // queued events of this source
	Bytes       int64         // and their bytes
	OldestAge   time.Duration // age of its oldest queued event; 0 when none
	LastSuccess time.Time     // when a batch of it was last delivered since Open; zero when none
	Relay       bool          // a relay source (made for an ingest write key; its name is not the key)
	// Removed is set on a source a reconfiguration removed that still holds events: it takes
	// no new ones and drains these with its last settings, then leaves Stats.
	Removed bool
	// Paused says that delivery of this source is held, and PausedReason why, while the other
	// sources go on: PausedRetryAfter (the collector asked its write key to wait until
	// PausedUntil), PausedAuthRefused (the destination refuses its credentials: AuthCode is the
	// last refusal, AuthKey the key to fix; its head batch probes at PausedUntil) or
	// PausedBreakerOpen (its endpoint or key failed every attempt in flight: one probe at a
	// time, the next no sooner than PausedUntil; zero when it may go at once).
	Paused       bool
	PausedReason string
	PausedUntil  time.Time
	AuthCode     string
	AuthKey      string
	// InFlight is how many of its batches are leased and not yet delivered or dead-lettered
	// (during a Retry-After, those leased ahead of its end included).
	InFlight int
}

// sourceStats are the rows of Stats().Sources: every configured and relay source, and any
// other source the queue holds events of, by name.
func (c *Client) sourceStats(now time.Time) []SourceStats {
	s := c.sources
	s.sweep()
	rows := map[string]*SourceStats{DefaultSource: {Name: DefaultSource}}
	s.mu.RLock()
	for name := range s.named {
		rows[name] = &SourceStats{Name: name}
	}
	for name := range s.draining {
		rows[name] = &SourceStats{Name: name, Removed: true}
	}
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
		if r == nil && qs.Events == 0 {
			continue // a source forgotten since, which the store still lists
		}
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
		r := rows[name]
		p := c.w.gate.sourceStatus(name)
		r.Paused, r.PausedReason, r.PausedUntil = p.reason != "", p.reason, p.until
		r.AuthCode, r.AuthKey, r.InFlight = p.code, p.key, p.inFlight
		out = append(out, *r)
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
// A handle of a source that a reconfiguration removes goes on enqueueing into it while it
// drains, and its enqueues fail with ErrSourceRemoved once it has drained.
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

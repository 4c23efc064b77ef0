package uploader

import (
	"slices"
	"time"

	"github.com/outboxhq/outbox/pkg/queue"
)

// Isolation of sources: each source owns a hold and a breaker in the gate (gate.go), so a
// Retry-After, refused credentials or an outage of one source's key or endpoint hold that
// source alone. The dispatcher leases no batch of a held source (skip), its batches already
// leased take no place among the others' (gate.countsLocked), and waitDue does not count its
// events as due, so the other sources' batches go on as if it had none.

// Why a source is paused (SourceStats.PausedReason).
const (
	PausedRetryAfter  = "retry_after"  // the collector asked the source's write key to wait (Retry-After)
	PausedAuthRefused = "auth_refused" // the destination refuses the source's credentials
	PausedBreakerOpen = "breaker_open" // an outage of the source's endpoint or key: one probe at a time
)

// sourcePause is what the gate says of one source for Stats.
type sourcePause struct {
	reason   string    // "" when not paused, else a Paused* constant
	until    time.Time // the Retry-After's end, the next probe of refused credentials or of an outage
	code     string    // refused credentials: the last refusal
	key      string    // refused credentials: the configuration key to fix
	inFlight int       // its batches leased and not yet delivered or dead-lettered
}

// sourceStatus returns source's pause and batches in flight.
func (g *gate) sourceStatus(source string) sourcePause {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.clock.Now()
	var p sourcePause
	p.inFlight, _ = g.slots.liveOf(source)
	sg := g.sources[source]
	switch {
	case sg == nil:
	case sg.hold.auth.on:
		p.reason, p.until, p.code, p.key = PausedAuthRefused, sg.hold.auth.probeAt, sg.hold.auth.code, sg.hold.auth.key
	case sg.hold.until.After(now):
		p.reason, p.until = PausedRetryAfter, sg.hold.until
	case sg.brk.open:
		p.reason = PausedBreakerOpen
		if sg.brk.probes > 0 && sg.brk.pace != nil { // the first probe goes at once
			p.until = sg.brk.since.Add(sg.brk.pace(sg.brk.probes))
		}
	}
	return p
}

// anyHeld reports whether a source with batches in flight is held: then the dispatcher may
// stay busy long (its batches wait out the hold), and it minds the other sources' tails itself.
func (g *gate) anyHeld() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.clock.Now()
	for name := range g.sources {
		if live, _ := g.slots.liveOf(name); live > 0 && g.heldLocked(name, now) {
			return true
		}
	}
	return false
}

// heldSources returns the sources whose events are not due at now although queued: those
// whose Retry-After runs (until is the earliest end among them), and, once the worker is
// stopping, those whose credentials are refused (Close waits for no probe). nil when none.
func (g *gate) heldSources(stopping bool) (held map[string]bool, until time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.clock.Now()
	for name, sg := range g.sources {
		switch {
		case sg.hold.until.After(now):
			if until.IsZero() || sg.hold.until.Before(until) {
				until = sg.hold.until
			}
		case stopping && sg.hold.auth.on:
		default:
			continue
		}
		if held == nil {
			held = map[string]bool{}
		}
		held[name] = true
	}
	return held, until
}

// skipper is the queue's skip predicate for one pass of the dispatcher: the sources the gate
// says not to lease now, and the earliest end of a Retry-After among them (zero: none), when
// the dispatcher must look again even if nothing else changes.
type skipper struct {
	g        *gate
	stopping bool
	until    time.Time
}

// skip reports whether source is not to be leased now (gate.leasable).
func (s *skipper) skip(source string) bool {
	ok, until := s.g.leasable(source, s.stopping)
	if !until.IsZero() && (s.until.IsZero() || until.Before(s.until)) {
		s.until = until
	}
	return !ok
}

// pendingDue is what waitDue counts as due: the queued events, bytes and oldest intake time
// of the sources not in held (every source when held is empty), and whether a source in held
// has events queued (then the worker waits for its hold rather than idles).
func (w *worker) pendingDue(held map[string]bool) (events, bytes int64, oldest time.Time, heldQueued bool) {
	if len(held) == 0 {
		events, bytes, oldest = w.q.Pending()
		return events, bytes, oldest, false
	}
	for _, st := range w.q.Sources() {
		if st.Events == 0 {
			continue
		}
		if held[st.Name] {
			heldQueued = true
			continue
		}
		events += st.Events
		bytes += st.Bytes
		if !st.Oldest.IsZero() && (oldest.IsZero() || st.Oldest.Before(oldest)) {
			oldest = st.Oldest
		}
	}
	return events, bytes, oldest, heldQueued
}

// heldQueued reports whether every queued event is of a source in held.
func heldQueued(q *queue.Queue, held []string) bool {
	for _, st := range q.Sources() {
		if st.Events > 0 && !slices.Contains(held, st.Name) {
			return false
		}
	}
	return true
}

// credentialKey is the configuration key that carries source's credentials, for the message
// of a refusal: sources.<name>.upload_write_key (or .headers when only they can), or for a
// relay source the write key its apps send (it uploads with that key).
func (s *sources) credentialKey(name string) string {
	s.mu.RLock()
	cs, ok := s.named[name]
	if !ok {
		cs, ok = s.draining[name]
	}
	var c SourceConfig
	if ok {
		c = cs.cfg
	}
	s.mu.RUnlock()
	if ok {
		if c.UploadWriteKey == "" && len(c.Headers) > 0 {
			return "sources." + name + ".headers"
		}
		return "sources." + name + ".upload_write_key"
	}
	return "the write key its apps send (a relay source uploads with it)"
}

// endpointOf returns the function that names where a source's batches go, for the gate's
// limits: its route's endpoint, else upload.endpoint (def).
func (s *sources) endpointOf(def string) func(string) string {
	return func(name string) string {
		if r, ok := s.route(name); ok && r.Endpoint != "" {
			return r.Endpoint
		}
		return def
	}
}

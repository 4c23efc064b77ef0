package uploader

import (
	"sync"
	"time"

	"github.com/outboxhq/outbox/pkg/budget"
	"github.com/outboxhq/outbox/pkg/delivery"
	"github.com/outboxhq/outbox/pkg/queue"
)

// gate admits every attempt, in every mode, by composing four policies under one lock:
//
//   - a hold per source (hold.go): a Retry-After holds every new attempt of that source (it
//     speaks of a write key) until it has passed; refused credentials hold every batch of the
//     source but its head, which probes once per authProbeInterval;
//   - a breaker per source (breaker.go): after a failure nothing new of the source starts
//     while an answer of it is pending, and during an outage one probe at a time, on the
//     probe schedule;
//   - a limit per endpoint (limit.go): a fixed upload.concurrency, or auto's adaptive one,
//     never above the destination's own bound; sources that post to the same endpoint share
//     it (it speaks of the collector);
//   - the slots (slots.go): the batches in flight, and their rank among those not waiting.
//
// An attempt starts when its source's hold has passed, its source's breaker allows it and
// its rank among the batches of its endpoint is below the endpoint's limit; with
// upload.concurrency: 1 that is a limit of one with acks in order (each source's head first).
// A batch waiting out a backoff of its own sends nothing, and neither does one whose source
// is held (a hold, refused credentials, an open breaker): their places go to the next, so a
// held source delays no other. At most twice the most that may be in flight are leased at
// once per endpoint, not counting the batches of held sources; those of sources on a
// Retry-After are leased ahead of its end up to the endpoint's limit (leasable).
type gate struct {
	mu       sync.Mutex                // guards the fields below
	fixed    int                       // upload.concurrency as a number; 0 for auto (setFixed changes it)
	bound    int                       // the destination's own bound; 0 for none
	ceil     int                       // upload.max_concurrency: auto's ceiling
	sources  map[string]*sourceGate    // each source's hold and breaker, made on first use
	autos    map[string]*aimdLimit     // each endpoint's auto limit, made on first use; kept while fixed, so that auto can come back
	pace     func(n int) time.Duration // every breaker's probe schedule (see breaker)
	endpoint func(source string) string
	slots    slots         // the batches in flight
	changed  chan struct{} // closed and replaced on every change
	clock    budget.Clock
}

// sourceGate is what one source owns of the gate: its hold and its breaker.
type sourceGate struct {
	hold hold
	brk  breaker
}

// lease is one batch in flight under the gate.
type lease struct {
	seq uint64
	b   *queue.Lease
}

// newGate returns the gate of a client. pace is the breaker's probe schedule (see breaker);
// endpoint names where a source's batches go (nil: every source shares one endpoint, as with
// a destination that has no endpoints).
func newGate(cfg UploadConfig, bound int, clock budget.Clock, pace func(n int) time.Duration, endpoint func(source string) string) *gate {
	if endpoint == nil {
		endpoint = func(string) string { return "" }
	}
	return &gate{fixed: cfg.fixedConcurrency(), bound: bound, changed: make(chan struct{}), clock: clock, pace: pace,
		ceil: max(cfg.MaxConcurrency, 1), sources: map[string]*sourceGate{}, autos: map[string]*aimdLimit{}, endpoint: endpoint}
}

// setFixed changes upload.concurrency (0: auto). Batches in flight above a smaller limit
// finish the attempt they are in and wait for their rank before the next; switching back to
// auto resumes each endpoint's limit where it was.
func (g *gate) setFixed(fixed int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fixed != fixed {
		g.fixed = fixed
		g.notifyLocked()
	}
}

// sourceLocked returns source's hold and breaker, made on first use.
func (g *gate) sourceLocked(source string) *sourceGate {
	sg := g.sources[source]
	if sg == nil {
		sg = &sourceGate{brk: breaker{pace: g.pace}}
		g.sources[source] = sg
	}
	return sg
}

// metaLocked is where id belongs (the one batch of upload.concurrency: 1, id 0, is the
// default source's).
func (g *gate) metaLocked(id uint64) slotMeta {
	if m, ok := g.slots.meta[id]; ok {
		return m
	}
	return slotMeta{source: DefaultSource, endpoint: g.endpoint(DefaultSource)}
}

// setWaiting marks l as waiting out a retry wait of its own (or no longer).
func (g *gate) setWaiting(l *lease, on bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.slots.setWaiting(l.seq, on)
	g.notifyLocked()
}

// inFlight returns the number of batches in flight: not waiting out a retry wait, of a
// source not held, and within their endpoint's limit (the one prepared ahead of its turn is
// not yet in flight).
func (g *gate) inFlight() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	now, n := g.clock.Now(), 0
	for _, e := range g.endpointsLocked() {
		_, inflight := g.loadLocked(e, now)
		n += min(inflight, g.limitLocked(e))
	}
	return n
}

// add registers a newly leased batch (of the default source when b is nil), the newest in
// flight.
func (g *gate) add(b *queue.Lease) *lease {
	source := DefaultSource
	if b != nil && b.Source != "" {
		source = b.Source
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	id := g.slots.add(slotMeta{source: source, endpoint: g.endpoint(source)})
	g.notifyLocked()
	return &lease{seq: id, b: b}
}

// remove unregisters a lease that has left flight (delivered, dead-lettered, or given up).
func (g *gate) remove(l *lease) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.slots.remove(l.seq)
	g.notifyLocked()
}

// pauseUntil holds every new attempt of source until t (a usable Retry-After); the latest
// deadline wins.
func (g *gate) pauseUntil(source string, t time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.sourceLocked(source).hold.retryAfter(t) {
		g.notifyLocked()
	}
}

func (g *gate) notifyLocked() {
	close(g.changed)
	g.changed = make(chan struct{})
}

// next returns the channel closed at the gate's next change.
func (g *gate) next() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.changed
}

// verdict is what the gate says of one attempt.
type verdict struct {
	pause    time.Duration // wait this long first (0: none): a Retry-After, a probe of refused credentials
	path     string        // what the pause is: PathRateLimit or PathAuth
	admitted bool          // the attempt has begun (the caller calls finish once it has ended)
	refused  bool          // the destination refuses our credentials
	changed  <-chan struct{}
}

// tryBegin begins an attempt of id when every policy of its source and endpoint lets it, and
// else says what it waits for. (id 0 is no lease: the default source's policies alone, as a
// test drives them.)
func (g *gate) tryBegin(id uint64) verdict {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.clock.Now()
	m := g.metaLocked(id)
	sg := g.sourceLocked(m.source)
	head := id == 0 || g.slots.head(id)
	wait, path, ok := sg.hold.check(now, head)
	v := verdict{pause: wait, path: path, refused: sg.hold.auth.on, changed: g.changed}
	if !ok || wait > 0 {
		return v
	}
	if wait, ok := sg.brk.allow(now, g.slots.sendingOf(m.source)); !ok {
		if wait > 0 {
			v.pause, v.path = wait, PathBackoff
		}
		return v
	}
	if id != 0 && !g.ranked(id, m, sg, now) {
		return v
	}
	g.slots.begin(id)
	sg.brk.begin()
	v.admitted = true
	return v
}

// finish records the end of an attempt begun with tryBegin, what it answered (nil: the
// request was not made) and how long it took: its source's breaker and its endpoint's limit
// learn from it.
func (g *gate) finish(id uint64, o *delivery.Outcome, rtt time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	m := g.metaLocked(id)
	sent := g.slots.end(id)
	now := g.clock.Now()
	h := healthNone
	if o != nil {
		h = healthOf(*o)
		leased, _ := g.loadLocked(m.endpoint, now)
		g.limiter(m.endpoint).Observe(sample{answer: answerOf(*o), rtt: rtt, inflight: max(leased, 1), now: now,
			sent: sent, latest: g.slots.attempt})
	}
	g.sourceLocked(m.source).brk.observe(h, sent, g.slots.sendingOf(m.source), now)
	g.notifyLocked()
}

// ranked reports whether id's place among the batches in flight to its endpoint lets it
// start; the batches of held sources that are not sending take no place. With acks in order
// (upload.concurrency: 1, or a destination that takes one batch at a time) only the head of
// its source may, and only when no batch of the endpoint is being sent and no other source's
// head that takes a place was leased before it: a batch waiting out its backoff is overtaken
// by none of its own source, and a source on hold holds up no other. Otherwise its rank must be below the endpoint's limit,
// except while its source's breaker is open: its one probe is the limit then, and may be any
// batch of the source ready to go.
func (g *gate) ranked(id uint64, m slotMeta, sg *sourceGate, now time.Time) bool {
	counts := func(o uint64) bool { return g.slots.meta[o].endpoint == m.endpoint && g.countsLocked(o, now) }
	switch {
	case g.fixed == 1 || g.bound == 1:
		heads := func(o uint64) bool { return counts(o) && g.slots.head(o) } // the others wait for their own head
		return g.slots.head(id) && g.sendingOnLocked(m.endpoint) == 0 && g.slots.rank(id, heads) == 0
	case sg.brk.open:
		return true
	}
	return g.slots.rank(id, counts) < g.limitLocked(m.endpoint)
}

// sendingOnLocked is how many attempts to endpoint are in flight.
func (g *gate) sendingOnLocked(endpoint string) int {
	n := 0
	for id := range g.slots.began {
		if g.metaLocked(id).endpoint == endpoint {
			n++
		}
	}
	return n
}

// healthOf is what an outcome tells the breaker: a retryable failure may be an outage; any
// answer of the destination says it is up; a request not made says nothing.
func healthOf(o delivery.Outcome) health {
	switch o.Class {
	case delivery.ClassRetryable:
		return healthDown
	case delivery.ClassAborted:
		return healthNone
	}
	return healthUp
}

package uploader

import (
	"slices"
	"time"
)

// An endpoint's limit and load: each endpoint (the batch URL of the sources that post to it;
// one for a destination without endpoints) has its own Limit, fixed or auto, and the batches
// leased to it take places under it unless their source is held. leasable says from them
// whether the dispatcher may lease one more batch of a source.

// autoLocked returns endpoint's auto limit, made on first use.
func (g *gate) autoLocked(endpoint string) *aimdLimit {
	l := g.autos[endpoint]
	if l == nil {
		l = newAIMDLimit(g.ceil)
		g.autos[endpoint] = l
	}
	return l
}

// limiter is the Limit in force for endpoint: upload.concurrency as a constant, or its auto.
func (g *gate) limiter(endpoint string) Limit {
	if g.fixed != 0 {
		return fixedLimit(g.fixed)
	}
	return g.autoLocked(endpoint)
}

// limit returns how many batches may be in flight now: the sum of each endpoint's limit.
func (g *gate) limit() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, e := range g.endpointsLocked() {
		n += g.limitLocked(e)
	}
	return n
}

// endpointsLocked are the endpoints of the default source and of the batches in flight.
func (g *gate) endpointsLocked() []string {
	out := []string{g.endpoint(DefaultSource)}
	for _, id := range g.slots.live {
		if e := g.slots.meta[id].endpoint; !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out
}

func (g *gate) limitLocked(endpoint string) int {
	n := g.limiter(endpoint).Limit()
	if g.bound > 0 {
		n = min(n, g.bound)
	}
	return max(n, 1)
}

// mostLocked is the most batches that may ever be in flight to one endpoint.
func (g *gate) mostLocked() int {
	most := g.fixed
	if most == 0 {
		most = g.ceil
	}
	if g.bound > 0 {
		most = min(most, g.bound)
	}
	return max(most, 1)
}

// heldLocked reports whether source is held at now: a Retry-After not yet passed, refused
// credentials, or a breaker that is not closed. Its batches that are not sending then take
// no place among their endpoint's (parked).
func (g *gate) heldLocked(source string, now time.Time) bool {
	sg := g.sources[source]
	return sg != nil && (sg.hold.until.After(now) || sg.hold.auth.on || sg.brk.state() != "closed")
}

// countsLocked reports whether id takes a place among its endpoint's batches at now: it is
// sending, or its source is not held.
func (g *gate) countsLocked(id uint64, now time.Time) bool {
	return g.slots.isSending(id) || !g.heldLocked(g.slots.sourceOf(id), now)
}

// loadLocked is endpoint's batches that take a place at now: leased, and of those not
// waiting out a retry wait (in flight).
func (g *gate) loadLocked(endpoint string, now time.Time) (leased, inflight int) {
	for _, id := range g.slots.live {
		if g.slots.meta[id].endpoint != endpoint || !g.countsLocked(id, now) {
			continue
		}
		leased++
		if !g.slots.waiting[id] {
			inflight++
		}
	}
	return leased, inflight
}

// leasable says whether the dispatcher may lease a batch of source now, and when it is held
// by a Retry-After, until when (zero otherwise: a change of the gate ends what holds it).
//
// A source on a Retry-After is leased ahead of the hold's end, while the batches of sources
// on a Retry-After leased to its endpoint are fewer than the endpoint's limit (and not once
// the worker is stopping): their payloads are built during the hold and they wait at the gate
// for its end, so that when it ends they start together instead of one lease and one build
// at a time. Under a collector that rate-limits a share of requests each Retry-After then
// costs one hold for a full round of batches, where a trickle would meet the next
// Retry-After after a few. Their number is bounded per endpoint, however many sources are
// held.
//
// A source is not leased while its credentials are refused and a batch of it is in flight
// (the head probes) or the worker is stopping (no probe is waited for), or while its breaker
// is not closed and a batch of it not waiting may still answer: its answer says whether the
// destination is up, and without this rule each failure, freeing its place while it waits,
// would lease a fresh batch into what may be an outage. Otherwise its endpoint must have
// room: fewer than twice the most that may be in flight leased, no more than the limit in
// flight (one more than the limit is leased so that its payload is prepared ahead of its
// turn).
func (g *gate) leasable(source string, stopping bool) (ok bool, until time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.clock.Now()
	e := g.endpoint(source)
	if sg := g.sources[source]; sg != nil {
		if sg.hold.until.After(now) {
			// Leased ahead of the hold's end, within the endpoint's limit.
			return !stopping && !sg.hold.auth.on && sg.brk.state() == "closed" &&
				g.aheadLocked(e, now) < g.limitLocked(e), sg.hold.until
		}
		live, notWaiting := g.slots.liveOf(source)
		if sg.hold.auth.on && (live > 0 || stopping) {
			return false, time.Time{}
		}
		if sg.brk.state() != "closed" && notWaiting > 0 {
			return false, time.Time{}
		}
	}
	leased, inflight := g.loadLocked(e, now)
	return leased < 2*g.mostLocked() && inflight <= g.limitLocked(e), time.Time{}
}

// aheadLocked is how many batches of sources on a Retry-After at now are leased to endpoint
// and not sending: those leased ahead of their hold's end, and those that were in flight when
// it began.
func (g *gate) aheadLocked(endpoint string, now time.Time) int {
	n := 0
	for _, id := range g.slots.live {
		m := g.slots.meta[id]
		if m.endpoint != endpoint || g.slots.isSending(id) {
			continue
		}
		if sg := g.sources[m.source]; sg != nil && sg.hold.until.After(now) {
			n++
		}
	}
	return n
}

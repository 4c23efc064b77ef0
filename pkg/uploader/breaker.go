package uploader

import "time"

// breakerThreshold is how many failures in a row, with no success between them, open the
// breaker while other attempts are still in flight. Under 20% of failures six in a row come
// about once in 15,000 attempts; fewer would open it on bad luck, more would let an outage
// that began with many batches in flight send more of them before it opens.
const breakerThreshold = 6

// breaker keeps an outage from costing more requests than one batch in flight would, in every
// mode (upload.concurrency 1, a fixed N, auto). It is a value the gate owns under its lock,
// and a source of its own can own another.
//
//	closed     no failure since the last success: every attempt may start
//	suspect    the last answer was a failure: no attempt starts while another is in flight,
//	           since that one's answer says whether the destination is up
//	open       every attempt in flight failed (or breakerThreshold in a row did): one attempt,
//	           the probe, may start once nothing else is in flight, on the probe schedule
//	half-open  the probe is in flight: nothing else starts
//
// The probe schedule: the first probe goes at once (one failure with nothing else in flight
// cannot tell a random fault from an outage, and a check costs one request where waiting
// costs a backoff), then the n-th one no sooner than pace(n) after the streak's first
// failure, pace being one batch's backoff schedule without jitter (budget.Unjittered): so an
// outage costs, after the requests in flight when it began, one check and then no more
// requests than one batch retrying alone. Any batch ready to go may probe: a fresh one, or
// one whose own backoff has passed.
//
// A success closes it, unless its request was sent before the first failure of the streak
// was (an answer to a request the destination took just before it went down says nothing of
// now) and was not the probe. Answers that are neither (a Retry-After, a rejection, refused
// credentials) say the destination is up: they close it too; a request that was never made
// (a hook error, Close) says nothing.
type breaker struct {
	pace     func(n int) time.Duration // when the n-th paced probe may start, after since
	streak   int                       // failures since the last success
	failSent uint64                    // the earliest-begun of them, in the order attempts begin
	since    time.Time                 // when the streak's first failure was answered
	open     bool                      // open or half-open
	probing  bool                      // half-open: the probe's attempt is in flight
	probes   int                       // probes begun since it opened
}

// verdicts of an answer for the breaker.
type health int

const (
	healthNone health = iota // the request was not made: nothing learnt
	healthUp                 // the destination answered
	healthDown               // a retryable failure: the destination may be down
)

// allow reports whether an attempt may start at now with sending attempts in flight, and
// when it may not only because of the probe schedule, how long until it may.
func (b *breaker) allow(now time.Time, sending int) (wait time.Duration, ok bool) {
	switch {
	case !b.open && b.streak == 0:
		return 0, true
	case !b.open:
		return 0, sending == 0
	case b.probing || sending > 0:
		return 0, false
	case b.probes == 0 || b.pace == nil:
		return 0, true
	}
	if at := b.since.Add(b.pace(b.probes)); now.Before(at) {
		return at.Sub(now), false
	}
	return 0, true
}

// begin records that an attempt, allowed by allow, has started.
func (b *breaker) begin() {
	if b.open {
		b.probing = true
		b.probes++
	}
}

// observe records an answer at now; sent numbers its attempt in the order attempts began (an
// order, not a time: a test's clock may not move between them), and sending is how many
// attempts are still in flight after it. While half-open the answer is the probe's: nothing
// else is in flight.
func (b *breaker) observe(h health, sent uint64, sending int, now time.Time) {
	wasProbe := b.probing
	b.probing = false
	switch h {
	case healthNone:
		if wasProbe {
			b.probes-- // not made: it keeps its place in the schedule
		}
	case healthUp:
		if b.streak > 0 && !wasProbe && sent < b.failSent {
			return // older news than the failures
		}
		*b = breaker{pace: b.pace}
	case healthDown:
		if b.streak == 0 {
			b.since = now
		}
		if b.streak == 0 || sent < b.failSent {
			b.failSent = sent
		}
		b.streak++
		if !b.open && (sending == 0 || b.streak >= breakerThreshold) {
			b.open = true
		}
	}
}

// state names the breaker's state, for tests and logs.
func (b *breaker) state() string {
	switch {
	case b.probing:
		return "half-open"
	case b.open:
		return "open"
	case b.streak > 0:
		return "suspect"
	}
	return "closed"
}

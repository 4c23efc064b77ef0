package uploader

// breakerThreshold is how many failures in a row, with no success between them, open the
// breaker while other attempts are still in flight. Under 20% of failures six in a row come
// about once in 15,000 attempts; fewer would open it on bad luck, more would let an outage
// that began with many batches in flight send more of them before it opens.
const breakerThreshold = 6

// breaker keeps an outage from costing more requests than one batch in flight would, in every
// mode (upload.concurrency 1, a fixed N, auto). It is a value the gate owns under its lock,
// and a source of its own can own another; ids name the batches in flight (0: the one batch
// of upload.concurrency: 1).
//
//	closed     no failure since the last success: every attempt may start
//	suspect    the last answer was a failure: no attempt starts while another is in flight,
//	           since that one's answer says whether the destination is up
//	open       every attempt in flight failed (or breakerThreshold in a row did): one batch,
//	           the probe, may start, and only once nothing else is in flight
//	half-open  the probe's attempt is in flight: nothing else starts
//
// The probe is the first batch ready to go that failed during this episode (a fresh batch
// only when none of those is left in flight), and it stays the probe until a success or until
// it leaves flight, so the probe's own backoff paces the outage as it paces the one batch of
// upload.concurrency: 1. A success closes it, unless its request was sent before the first
// failure of the streak was: an answer to a request the destination took just before it went
// down says nothing of now. Answers that are neither (a Retry-After, a rejection, refused
// credentials) say the destination is up: they close it too; a request that was never made
// (a hook error, Close) says nothing.
type breaker struct {
	streak   int    // failures since the last success
	failSent uint64 // the earliest-begun of them, in the order attempts begin
	open     bool   // open or half-open
	probe    uint64 // the probe while open; 0 for none chosen
	probing  bool   // half-open: the probe's attempt is in flight
	haveProb bool   // probe is set (0 is the one batch's id)
}

// verdicts of an answer for the breaker.
type health int

const (
	healthNone health = iota // the request was not made: nothing learnt
	healthUp                 // the destination answered
	healthDown               // a retryable failure: the destination may be down
)

// allow reports whether the batch id may start an attempt now. sending is how many attempts
// are in flight; eligible says id may be the probe (see breaker).
func (b *breaker) allow(id uint64, eligible bool, sending int) bool {
	switch {
	case !b.open && b.streak == 0:
		return true
	case !b.open:
		return sending == 0
	case b.probing || sending > 0:
		return false
	case b.haveProb:
		return b.probe == id
	}
	return eligible
}

// begin records that id's attempt, allowed by allow, has started.
func (b *breaker) begin(id uint64) {
	if b.open {
		b.probe, b.haveProb, b.probing = id, true, true
	}
}

// observe records the answer to id's attempt; sent numbers the attempt in the order attempts
// began (an order, not a time: a test's clock may not move between them), and sending is how
// many attempts are still in flight after it.
func (b *breaker) observe(id uint64, h health, sent uint64, sending int) {
	wasProbe := b.probing && b.haveProb && b.probe == id
	if wasProbe {
		b.probing = false
	}
	switch h {
	case healthUp:
		if b.streak > 0 && !wasProbe && sent < b.failSent {
			return // older news than the failures
		}
		*b = breaker{}
	case healthDown:
		if b.streak == 0 || sent < b.failSent {
			b.failSent = sent
		}
		b.streak++
		if !b.open && (sending == 0 || b.streak >= breakerThreshold) {
			b.open = true
		}
	}
}

// left forgets id when its batch has left flight (delivered, dead-lettered, or given up): the
// next eligible batch becomes the probe.
func (b *breaker) left(id uint64) {
	if b.haveProb && b.probe == id {
		b.haveProb, b.probing, b.probe = false, false, 0
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

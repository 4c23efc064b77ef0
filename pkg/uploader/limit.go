package uploader

import (
	"time"

	"github.com/outboxhq/outbox/pkg/delivery"
)

// Limit is how many batches may be in flight to one destination: a fixed number
// (upload.concurrency: N) or one that adapts from the answers (auto). Observe is given every
// attempt's sample; a Limit is not safe for concurrent use (the gate owns it under its lock).
type Limit interface {
	Limit() int
	Observe(s sample)
}

// sample is what a Limit learns from one attempt.
type sample struct {
	answer   answer
	rtt      time.Duration // from sending to the answer
	inflight int           // batches in flight when it ended, the attempt's included
	now      time.Time     // when it ended
	sent     uint64        // the attempt's number, in the order attempts began
	latest   uint64        // the number of the latest attempt begun when it ended
}

// answer is what an attempt says about the destination's capacity, as its classifier said
// it (Outcome.BackPressure, Outcome.RetryAfter): the uploader reads no status.
type answer int

const (
	answerGood         answer = iota // a success
	answerSlowed                     // a success with back-pressure (a throttled Kafka produce)
	answerFailed                     // a retryable failure that says nothing of load (a 503, a reset)
	answerBackPressure               // a failure with back-pressure (a 429 without Retry-After, a timeout)
	answerNeutral                    // a Retry-After, rejected, too large, refused, aborted: nothing about capacity
)

// answerOf is what an outcome tells a Limit.
func answerOf(o delivery.Outcome) answer {
	switch o.Class {
	case delivery.ClassSuccess:
		if o.BackPressure {
			return answerSlowed
		}
		return answerGood
	case delivery.ClassRetryable:
		if o.BackPressure {
			return answerBackPressure
		}
		return answerFailed
	}
	return answerNeutral
}

// fixedLimit is upload.concurrency: N. It learns nothing.
type fixedLimit int

// Limit returns N.
func (f fixedLimit) Limit() int { return max(int(f), 1) }

// Observe ignores the sample.
func (fixedLimit) Observe(sample) {}

// aimdLimit is upload.concurrency: auto, between 1 and upload.max_concurrency. It starts at
// 1 and grows as TCP's congestion window does: by one per good answer below its threshold
// (slow start: it doubles every round trip), then by 1/limit per good answer (about one per
// round trip), and only while the batches in flight fill more than half of it (a client with
// less to send learns nothing from its answers). It halves, with its threshold, on
// back-pressure: a failure or a success the destination marked so, a smoothed round trip
// more than twice its baseline and at least aimdMinInflation above it, or a window of
// attempts most of which failed; once per round of attempts: an answer to an attempt begun
// before the last cut says the same thing again (TCP's recovery point). A Retry-After says
// nothing to it: it describes a write key, and its source's hold waits it out, while the limit
// describes the endpoint that every source on it shares. Isolated failures among successes (one sick backend behind a load balancer)
// neither grow nor shrink it; an outage is the breaker's.
type aimdLimit struct {
	ceil           int
	limit          float64
	ssthresh       float64
	base           time.Duration // baseline round trip: the smallest good one, drifting up slowly
	srtt           time.Duration // smoothed round trip of the good answers
	cutAt          uint64        // the latest attempt begun when it last shrank
	winOK, winFail int           // answers in the current window
}

// Tuning of aimdLimit.
const (
	aimdMinWindow    = 8                     // attempts in the smallest failure window
	aimdMinInflation = 50 * time.Millisecond // a round trip inflated by less is the host's own load
	aimdBaseDrift    = 64                    // the baseline moves 1/64 of the way up per answer
	aimdSmoothing    = 4                     // the smoothed round trip moves 1/4 of the way per answer
)

// newAIMDLimit returns an adaptive limit between 1 and ceil (at least 1).
func newAIMDLimit(ceil int) *aimdLimit {
	ceil = max(ceil, 1)
	return &aimdLimit{ceil: ceil, limit: 1, ssthresh: float64(ceil)}
}

// Limit returns the batches that may be in flight now.
func (l *aimdLimit) Limit() int { return min(max(int(l.limit), 1), l.ceil) }

// Observe records one attempt's sample.
func (l *aimdLimit) Observe(s sample) {
	switch s.answer {
	case answerNeutral:
		return
	case answerGood:
		l.winOK++
		if l.srtt == 0 {
			l.srtt = s.rtt
		} else {
			l.srtt += (s.rtt - l.srtt) / aimdSmoothing
		}
		inflated := l.base > 0 && l.srtt > 2*l.base && l.srtt-l.base >= aimdMinInflation
		l.track(s.rtt)
		if inflated {
			l.cut(s)
		} else if 2*s.inflight > l.Limit() {
			if l.limit < l.ssthresh {
				l.limit++
			} else {
				l.limit += 1 / l.limit
			}
			l.limit = min(l.limit, float64(l.ceil))
		}
	case answerSlowed:
		l.winOK++
		l.cut(s)
	case answerFailed:
		l.winFail++
	case answerBackPressure:
		l.winFail++
		l.cut(s)
	}
	if n := l.winOK + l.winFail; n >= max(aimdMinWindow, l.Limit()) {
		if 2*l.winFail > n {
			l.cut(s)
		}
		l.winOK, l.winFail = 0, 0
	}
}

// cut halves the limit and its threshold, unless s's attempt began before the last cut.
func (l *aimdLimit) cut(s sample) {
	if l.cutAt > 0 && s.sent <= l.cutAt {
		return
	}
	l.limit = max(l.limit/2, 1)
	l.ssthresh = l.limit
	l.cutAt = max(s.latest, 1)
}

// track moves the baseline round trip: down at once to a faster answer, up by a small step
// towards a slower one, so a lasting change of path is learnt and a burst is not.
func (l *aimdLimit) track(rtt time.Duration) {
	if l.base == 0 || rtt < l.base {
		l.base = rtt
		return
	}
	l.base += (rtt - l.base) / aimdBaseDrift
}

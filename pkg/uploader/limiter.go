package uploader

import (
	"time"

	"github.com/outboxhq/outbox/pkg/budget"
)

// limiter is the adaptive limit of batches in flight behind upload.concurrency: auto. It is
// pure (its clock is passed in with every answer) and not safe for concurrent use; the gate
// owns it under its lock.
//
// The limit starts at 1 (a fresh start is a probe) and grows as TCP's congestion window does:
// while below its threshold (slow start) by one per good answer, so it doubles every round
// trip, then by 1/limit per good answer, about one per round trip (additive increase). It
// grows only while the batches in flight fill more than half of it: a client that has less to
// send than its limit learns nothing about the destination from that.
//
// It shrinks multiplicatively (halves, and the threshold with it) on back-pressure: a 429,
// a timeout, a smoothed round trip more than twice its baseline (and at least
// limiterMinInflation above it), or a window of attempts in which most failed. Answers
// already in flight when it shrank say the same thing again, so it shrinks at most once per
// baseline round trip. Retryable failures among successes (one sick backend behind a load
// balancer) neither shrink nor grow it. A usable Retry-After halves it at most once a second,
// keeping the threshold, so that it climbs back by slow start once the pause is over.
//
// limiterOutage failed attempts in a row, with no success between them, are an outage: the
// limit falls to 1 at once, so an outage costs the requests one batch in flight costs, and the
// first success starts slow start again (up to half the limit it had, at least
// limiterOutage). Under 20% of failures six in a row begin at about one attempt in 15,000, and
// cost a probe half a backoff base later and a slow start; fewer would come often enough to
// keep a low limit from climbing, and a count that grew with the limit would let an outage
// that began with few batches in flight send that many first. A success ends the streak only
// when its request was sent no earlier than the first sent of the streak's failures: when the
// destination goes down with many batches in flight, answers to requests it took just before
// come in among the first failures, and they say nothing of now.
//
// The outage's one probe waits at least half a backoff base from the streak's first failure,
// the soonest one batch could retry, so that a blip costs little. Once the streak also spans
// that much, the probe is paced as one batch that failed from the first failure of the streak
// on would be (probeAt): its next attempt is no earlier than that batch's next one without
// jitter, counting as its attempts every failed attempt begun since the streak's first
// failure answered. When that first round trip (the requests already on their way) failed
// limiterOutage times or more, limiterFirstRound of its other failures count too: that
// round trip is what many batches in flight cost an outage beyond one batch, and counting a
// few of its requests gives them back over the outage's first seconds, while counting every
// one would push the probe, and the destination's return, minutes out. So an outage costs
// about as many requests as upload.concurrency: 1 sends, and the probe finds the destination
// back within seconds of when that batch would.
//
// Vector's adaptive request concurrency and Netflix's concurrency-limits grow by one per
// window from the start, which takes minutes to find 32 on a WAN; slow start finds it in
// five round trips. The round trip is smoothed (srtt, as TCP's) before it is compared: one slow
// answer is a scheduling hiccup of a busy host (a GC, an fsync, another process on the core),
// not a queue at the destination; and an inflation under limiterMinInflation is the host's own
// load (a 2-core host writing events at full speed answers a loopback collector 15–25 ms late
// for seconds on end), which fewer batches in flight would not relieve. Neither treats
// Retry-After as a statement about the client; here it pauses every new attempt (gate.go) as
// well as shrinking the limit.
type limiter struct {
	ceil           int // upload.max_concurrency
	limit          float64
	ssthresh       float64
	base           time.Duration // baseline round trip: the smallest good one, drifting up slowly
	srtt           time.Duration // smoothed round trip of the good answers (1/limiterSmoothing of each)
	lastCut        time.Time     // when the limit last shrank
	lastRetryAfter time.Time     // when a Retry-After answer last shrank it
	streak         int           // failed attempts since the last success
	streakStart    time.Time     // when the first of them answered
	streakSent     int           // those of them begun after streakStart: sent knowing of the failure
	firstRound     int           // those of them on their way before the first answered (it included)
	lastFail       time.Time     // when the last of them answered
	failSent       time.Time     // when the first sent of them was sent: a success sent before says nothing newer
	down           bool          // an outage (see limiter); until a success
	winOK          int           // answers in the current window
	winFail        int
}

// Tuning of the limiter; see limiter.
const (
	limiterOutage        = 6                     // consecutive failures that make an outage
	limiterMinWindow     = 8                     // attempts in the smallest failure window
	limiterMinInflation  = 50 * time.Millisecond // round trip inflation below this is noise
	limiterBaseDrift     = 64                    // the baseline moves 1/64 of the way up per answer
	limiterSmoothing     = 4                     // the smoothed round trip moves 1/4 of the way per answer
	limiterRetryAfterGap = time.Second           // Retry-After answers shrink the limit at most once per gap
	limiterFirstRound    = 2                     // of a large first round trip, the failures beyond its first that pace the probe (< limiterOutage)
)

// answer is what the limiter learns from one attempt.
type answer int

const (
	answerGood         answer = iota // a success
	answerFailed                     // a retryable failure that says nothing of load (5xx, reset)
	answerBackPressure               // a 429 without a usable Retry-After, a timeout
	answerRetryAfter                 // a usable Retry-After (the gate pauses every attempt)
	answerNeutral                    // rejected, too large, aborted: nothing about capacity
)

// newLimiter returns a limiter between 1 and max (at least 1).
func newLimiter(ceil int) *limiter {
	ceil = max(ceil, 1)
	return &limiter{ceil: ceil, limit: 1, ssthresh: float64(ceil)}
}

// Limit returns the batches that may be in flight now.
func (l *limiter) Limit() int {
	return min(max(int(l.limit), 1), l.ceil)
}

// observe records one attempt's answer, which took rtt and ended at now, with inflight
// batches in flight (the attempt's included).
func (l *limiter) observe(a answer, rtt time.Duration, inflight int, now time.Time) {
	switch a {
	case answerNeutral:
		return
	case answerGood:
		if l.streak > 0 && now.Add(-rtt).Before(l.failSent) {
			return // sent before every failure of the streak: older news than they are
		}
		l.streak, l.down = 0, false
		l.winOK++
		if l.srtt == 0 {
			l.srtt = rtt
		} else {
			l.srtt += (rtt - l.srtt) / limiterSmoothing
		}
		inflated := l.base > 0 && l.srtt > 2*l.base && l.srtt-l.base >= limiterMinInflation
		l.track(rtt)
		if inflated {
			l.cut(now)
		} else if 2*inflight > l.Limit() {
			if l.limit < l.ssthresh {
				l.limit++
			} else {
				l.limit += 1 / l.limit
			}
			l.limit = min(l.limit, float64(l.ceil))
		}
	case answerRetryAfter:
		// The gate already holds every attempt until the Retry-After has passed; the answers
		// of the requests in flight meanwhile say the same thing again. So they shrink the
		// limit once per limiterRetryAfterGap, and slow start regains the limit it had once
		// the pause is over: a Retry-After says when, not how many. Nor is it an outage: the
		// destination is up and answering.
		if l.lastRetryAfter.IsZero() || now.Sub(l.lastRetryAfter) >= limiterRetryAfterGap {
			l.ssthresh = max(l.ssthresh, l.limit)
			l.limit = max(l.limit/2, 1)
			l.lastRetryAfter, l.lastCut = now, now
		}
		return
	case answerFailed, answerBackPressure:
		sent := now.Add(-rtt)
		if l.streak == 0 {
			l.streakStart, l.firstRound, l.streakSent, l.failSent = now, 0, 0, sent
		}
		if sent.After(l.streakStart) {
			l.streakSent++
		} else {
			l.firstRound++
		}
		if sent.Before(l.failSent) {
			l.failSent = sent
		}
		l.streak++
		l.lastFail = now
		l.winFail++
		if l.down || l.streak >= limiterOutage {
			if !l.down {
				// Slow start climbs back to half the limit, and at least to limiterOutage: an
				// outage called at a low limit (early in slow start, or bad luck there) would
				// otherwise leave only additive growth.
				l.ssthresh = max(l.limit/2, limiterOutage)
			}
			l.limit, l.lastCut, l.down = 1, now, true
			l.resetWindow()
			return
		}
		if a == answerBackPressure {
			l.cut(now)
		}
	}
	if n := l.winOK + l.winFail; n >= max(limiterMinWindow, l.Limit()) {
		if 2*l.winFail > n {
			l.cut(now)
		}
		l.resetWindow()
	}
}

// cut halves the limit (and the slow-start threshold), at most once per baseline round trip.
func (l *limiter) cut(now time.Time) {
	if !l.lastCut.IsZero() && now.Sub(l.lastCut) < l.base {
		return
	}
	l.limit = max(l.limit/2, 1)
	l.ssthresh = l.limit
	l.lastCut = now
}

// track moves the baseline round trip: down at once to a faster answer, up by a small step
// towards a slower one, so that a lasting change of path is learnt and a burst is not.
func (l *limiter) track(rtt time.Duration) {
	switch {
	case l.base == 0 || rtt < l.base:
		l.base = rtt
	default:
		l.base += (rtt - l.base) / limiterBaseDrift
	}
}

// probeAt returns when the probe of an outage may start its next attempt (zero when there is
// no outage): as long after the streak's first failure as one batch that failed there, at
// every attempt begun since and, after a first round trip of limiterOutage failures or more,
// at limiterFirstRound of them would wait, without jitter (budget.Unjittered). While the
// streak spans less than half a backoff base (it may be a blip) only that much: the soonest
// one batch's first retry may go.
func (l *limiter) probeAt(retry budget.Config) time.Time {
	if !l.down {
		return time.Time{}
	}
	if l.lastFail.Sub(l.streakStart) < retry.BackoffBase/2 {
		return l.streakStart.Add(retry.BackoffBase / 2)
	}
	n := 1 + l.streakSent
	if l.firstRound >= limiterOutage {
		n += limiterFirstRound
	}
	return l.streakStart.Add(budget.Unjittered(retry, n))
}

// outage reports whether the recent attempts all failed (see limiter), until a success.
func (l *limiter) outage() bool { return l.down }

// failing reports whether the last attempt that said anything of the destination failed.
func (l *limiter) failing() bool { return l.streak > 0 }

func (l *limiter) resetWindow() { l.winOK, l.winFail = 0, 0 }

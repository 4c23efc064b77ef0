package budget

import (
	"math/rand/v2"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// RandFunc returns a uniformly distributed value in [0, 1). It drives the jitter; tests inject a
// deterministic one. nil means math/rand/v2's Float64.
type RandFunc func() float64

// Backoff is the counted budget: backoff/v4's exponential curve (base, factor 2),
// clamped to the cap first, then jittered by subtracting up to half, so a wait d of retry n is
// min(base·2ⁿ, cap)·(1 − r/2) for r in [0, 1): never above the cap, never below half the clamped
// value, and two budgets started together diverge.
//
// It is bounded by MaxRetries (Next answers a wait at most MaxRetries times) and by
// MaxTotalBackoff from the first counted failure. Choice: a wait is never granted when it would
// end after start+MaxTotalBackoff; the budget is spent at that failure instead. So no retry of a
// batch ever starts after its total bound, which may spend the budget up to one wait (≤ cap) early.
//
// Backoff is not safe for concurrent use; one worker owns it.
type Backoff struct {
	cfg     Config
	clock   Clock
	rnd     RandFunc
	curve   *backoff.ExponentialBackOff
	retries int       // counted retries granted
	start   time.Time // first counted failure; zero when none
}

// NewBackoff returns an empty counted budget. cfg should have passed Validate; rnd may be nil.
func NewBackoff(cfg Config, c Clock, rnd RandFunc) *Backoff {
	if rnd == nil {
		rnd = rand.Float64
	}
	b := &Backoff{cfg: cfg, clock: c, rnd: rnd}
	b.Reset()
	return b
}

// Next is called after a counted failure (a retryable status without a usable Retry-After, or
// a network error). It returns the wait before the next attempt, or a *SpentError (errors.Is
// ErrSpent) naming the bound. The first call starts the total-time clock.
func (b *Backoff) Next() (time.Duration, error) {
	now := b.clock.Now()
	if b.start.IsZero() {
		b.start = now
	}
	elapsed := max(now.Sub(b.start), 0) // a wall clock that went back across a restart counts as 0
	if b.retries >= b.cfg.MaxRetries {
		return 0, &SpentError{Bound: BoundMaxRetries, Retries: b.retries, Elapsed: elapsed}
	}
	curve := *b.curve // advance a copy: the curve moves only when a wait is granted
	d := Jitter(min(curve.NextBackOff(), b.cfg.BackoffCap), b.rnd())
	if elapsed > b.cfg.MaxTotalBackoff-d { // elapsed+d > max, without overflow
		return 0, &SpentError{Bound: BoundMaxTotalBackoff, Retries: b.retries, Elapsed: elapsed, Wait: d}
	}
	*b.curve = curve
	b.retries++
	return d, nil
}

// Retries returns the counted retries granted so far.
func (b *Backoff) Retries() int { return b.retries }

// Start returns the time of the first counted failure, zero when none.
func (b *Backoff) Start() time.Time { return b.start }

// Reset empties the budget (a batch succeeded or left the queue).
func (b *Backoff) Reset() { b.restore(0, time.Time{}) }

// restore sets the count and start, and moves the curve to retry n.
func (b *Backoff) restore(retries int, start time.Time) {
	b.curve = backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(b.cfg.BackoffBase),
		backoff.WithMultiplier(2),
		backoff.WithRandomizationFactor(0),
		backoff.WithMaxInterval(b.cfg.BackoffCap),
		backoff.WithMaxElapsedTime(0), // the total bound is ours: it runs from the first failure
		backoff.WithClockProvider(b.clock),
	)
	b.retries, b.start = max(retries, 0), start
	// The curve reaches the cap within 64 doublings; past that every step is the cap.
	for i := 0; i < min(b.retries, 64); i++ {
		b.curve.NextBackOff()
	}
}

// Jitter subtracts up to half of d: d − ⌊r·d/2⌋, with r clamped to [0, 1]. The result is in
// [d/2, d] for d >= 0 (0 for d <= 0).
func Jitter(d time.Duration, r float64) time.Duration {
	if d <= 0 {
		return 0
	}
	if !(r >= 0) { // also NaN
		r = 0
	}
	r = min(r, 1)
	return d - time.Duration(r*float64(d)/2)
}

// Unjittered returns when one batch that failed n times in a row makes its next attempt,
// counted from its first failure, without jitter: the sum of its first n waits,
// min(base·2ⁱ, cap) for i < n (0 for n < 1). Jitter only shortens waits, so no batch retries
// later than this. The uploader paces the probe of an outage with it, so that many batches
// that failed together send no more requests than one batch that failed as often.
func Unjittered(cfg Config, n int) time.Duration {
	b := NewBackoff(cfg, SystemClock{}, nil)
	var total time.Duration
	for range max(n, 0) {
		total += min(b.curve.NextBackOff(), cfg.BackoffCap)
	}
	return total
}

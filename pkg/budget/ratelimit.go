package budget

import "time"

// RateLimit is the rate-limit budget. Each wait is the collector's Retry-After
// capped at RetryAfterCap; the episode runs from its first Retry-After and is bounded by
// MaxRateLimitDuration. As with Backoff, a wait is never granted when it would end after
// start+MaxRateLimitDuration: the budget is spent then, so it is spent exactly when the next wait
// would exceed the duration (a wait ending exactly at the bound is granted).
// It never touches the counted retries. The episode lasts until Reset (the batch succeeded or
// left the queue); counted failures in between do not end it.
//
// RateLimit is not safe for concurrent use; one worker owns it.
type RateLimit struct {
	cfg   Config
	clock Clock
	start time.Time // first Retry-After of the episode; zero when none
}

// NewRateLimit returns an empty rate-limit budget. cfg should have passed Validate.
func NewRateLimit(cfg Config, c Clock) *RateLimit { return &RateLimit{cfg: cfg, clock: c} }

// Next is called after a rate-limited attempt with the parsed Retry-After (> 0). It returns
// min(retryAfter, RetryAfterCap), or a *SpentError with BoundMaxRateLimitDuration. The first
// call starts the episode.
func (r *RateLimit) Next(retryAfter time.Duration) (time.Duration, error) {
	now := r.clock.Now()
	if r.start.IsZero() {
		r.start = now
	}
	d := min(max(retryAfter, 0), r.cfg.RetryAfterCap)
	elapsed := max(now.Sub(r.start), 0)
	if elapsed > r.cfg.MaxRateLimitDuration-d { // elapsed+d > max, without overflow
		return 0, &SpentError{Bound: BoundMaxRateLimitDuration, Elapsed: elapsed, Wait: d}
	}
	return d, nil
}

// Start returns the time of the episode's first Retry-After, zero when none.
func (r *RateLimit) Start() time.Time { return r.start }

// Reset ends the episode.
func (r *RateLimit) Reset() { r.start = time.Time{} }

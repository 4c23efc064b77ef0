package budget

import "time"

// State is a batch's retry state as persisted with it (queue.Lease.Retry; pkg/queue encodes
// it as JSON, which pkg/store keeps beside the batch). Times are wall-clock readings without a monotonic part, so after a restart
// elapsed time is measured on the wall clock; within a process the budget keeps the monotonic
// reading of the times it took itself.
type State struct {
	Attempts       int       // failed attempts so far: the next attempt's X-Retry-Count (0: absent)
	Retries        int       // counted retries granted
	BackoffStart   time.Time // first counted failure; zero when none
	RateLimitStart time.Time // first Retry-After of the episode; zero when none
}

// Budget is the retry state of the batch at the head of the queue: the counted Backoff, the
// RateLimit episode, and the attempt count that feeds X-Retry-Count (every retry, rate-limited
// ones included). Reset it when the batch succeeds or leaves the queue; a new batch (or a half
// of a split batch) starts from Reset.
//
// Budget is not safe for concurrent use; one worker owns it.
type Budget struct {
	attempts int
	backoff  *Backoff
	rate     *RateLimit
}

// New returns an empty budget. cfg should have passed Validate; rnd may be nil (math/rand/v2).
func New(cfg Config, c Clock, rnd RandFunc) *Budget {
	return &Budget{backoff: NewBackoff(cfg, c, rnd), rate: NewRateLimit(cfg, c)}
}

// Failed records a counted failure (retryable status without usable Retry-After, network error)
// and returns the wait before the next attempt, or a *SpentError. The attempt is counted either way.
func (b *Budget) Failed() (time.Duration, error) {
	b.attempts++
	return b.backoff.Next()
}

// RateLimited records a rate-limited attempt with its Retry-After and returns the wait, or a
// *SpentError. The attempt is counted; the counted retries are not touched.
func (b *Budget) RateLimited(retryAfter time.Duration) (time.Duration, error) {
	b.attempts++
	return b.rate.Next(retryAfter)
}

// Attempts returns the failed attempts recorded so far: the X-Retry-Count of the next attempt.
func (b *Budget) Attempts() int { return b.attempts }

// Retries returns the counted retries granted so far.
func (b *Budget) Retries() int { return b.backoff.Retries() }

// State exports the state for persistence, with the monotonic readings stripped.
func (b *Budget) State() State {
	return State{
		Attempts:       b.attempts,
		Retries:        b.backoff.retries,
		BackoffStart:   b.backoff.start.Round(0),
		RateLimitStart: b.rate.start.Round(0),
	}
}

// Restore replaces the state with one exported by State (typically after a restart). The
// backoff curve continues at retry st.Retries. Negative counts are taken as 0.
func (b *Budget) Restore(st State) {
	b.attempts = max(st.Attempts, 0)
	b.backoff.restore(st.Retries, st.BackoffStart)
	b.rate.start = st.RateLimitStart
}

// Reset empties the budget: the batch succeeded or left the queue.
func (b *Budget) Reset() {
	b.attempts = 0
	b.backoff.Reset()
	b.rate.Reset()
}

// Postpone moves the start of the open episodes (counted backoff, rate limit) d later: d was
// spent held by something that is not the batch's failure (a pause on refused credentials), so
// it does not count against retry.max_total_backoff nor retry.max_rate_limit_duration.
func (b *Budget) Postpone(d time.Duration) {
	if d <= 0 {
		return
	}
	if !b.backoff.start.IsZero() {
		b.backoff.start = b.backoff.start.Add(d)
	}
	if !b.rate.start.IsZero() {
		b.rate.start = b.rate.start.Add(d)
	}
}

package budget

import (
	"fmt"
	"time"
)

// Bound names the limit that spent a budget, as its configuration key. It is a stable,
// low-cardinality string, fit for a metric label or a dead-letter reason.
type Bound string

// The bounds a budget can run out on.
const (
	BoundMaxRetries           Bound = "retry.max_retries"
	BoundMaxTotalBackoff      Bound = "retry.max_total_backoff"
	BoundMaxRateLimitDuration Bound = "retry.max_rate_limit_duration"
)

// SpentError says which bound spent a budget. It matches ErrSpent with errors.Is.
type SpentError struct {
	Bound   Bound         // the limit that was reached
	Retries int           // counted retries granted before this answer
	Elapsed time.Duration // time since the budget's start (first counted failure / first Retry-After)
	Wait    time.Duration // the wait that was refused (0 for BoundMaxRetries)
}

// Error describes the bound, e.g. "retry budget spent: retry.max_retries reached after 10 retries".
func (e *SpentError) Error() string {
	switch e.Bound {
	case BoundMaxRetries:
		return fmt.Sprintf("%s: %s reached after %d retries", ErrSpent, e.Bound, e.Retries)
	default:
		return fmt.Sprintf("%s: %s would be exceeded (%s elapsed, next wait %s, %d retries)",
			ErrSpent, e.Bound, e.Elapsed, e.Wait, e.Retries)
	}
}

// Unwrap returns ErrSpent.
func (e *SpentError) Unwrap() error { return ErrSpent }

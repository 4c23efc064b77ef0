// Package budget holds the two retry budgets (docs/CONTRACT.md, "Retry envelope") and the clock they run on. It is
// pure time arithmetic: it imports nothing of outbox, sends nothing and stores nothing.
//
// # The two paths
//
// Every failed attempt of a batch takes one of two paths (the classifier in pkg/uploader decides):
//
//	retryable status without usable Retry-After,   rate-limited: retryable status
//	or a network error                              with a usable Retry-After
//	        │                                               │
//	        ▼                                               ▼
//	Backoff (counted)                               RateLimit (episode)
//	wait = jitter(min(base·2ⁿ, cap))                wait = min(Retry-After, retry_after_cap)
//	spent after max_retries retries, or when a      spent when a wait would end after
//	wait would end after max_total_backoff from     max_rate_limit_duration from the first
//	the first counted failure                       Retry-After; never touches the count
//
// Budget bundles both with the attempt count that becomes X-Retry-Count (every retry, rate-limited
// ones included), and exports/restores a State that the queue stores with the head batch, so a
// crash loop neither retries a poison batch forever nor resets its budget. Reset it when the batch
// succeeds or leaves the queue.
//
// # Curve and jitter
//
// The curve is cenkalti/backoff/v4's ExponentialBackOff with multiplier 2, no randomization and
// MaxInterval = cap, so the value is clamped to the cap first. Jitter then subtracts r·d/2 with
// r in [0, 1) from an injected RandFunc: a wait is in (d/2, d], the cap is a hard ceiling, and a
// fleet does not retry in lockstep. With the defaults (500ms, 60s, 10 retries) the waits are at
// most 0.5, 1, 2, 4, 8, 16, 32, 60, 60, 60 s: at most 243.5 s of counted waiting per batch.
//
// # Deadlines
//
// Neither budget grants a wait that would end after its bound: it answers spent instead (a
// *SpentError matching ErrSpent that names the bound). Sleep likewise never starts a wait that
// would end after its context's deadline.
//
// # Time
//
// Time comes from a Clock: System in production, budgettest.Clock in tests. Within a process,
// elapsed time is measured on the monotonic clock (time.Time's monotonic reading). State carries
// wall-clock times only (t.Round(0)), so across a restart elapsed time is wall-clock time;
// a wall clock that went backwards counts as no time elapsed.
package budget

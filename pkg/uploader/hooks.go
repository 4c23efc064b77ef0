package uploader

import "time"

// Retry paths, as in Stats().Retry.Path, AttemptInfo.Path and Hooks.OnRetry.
const (
	PathNone      = "none"       // not waiting, or the batch's last attempt was its first
	PathRateLimit = "rate_limit" // a Retry-After wait; does not spend the retry count
	PathBackoff   = "backoff"    // a counted exponential-backoff wait
)

// BatchInfo describes a batch when it leaves the queue.
type BatchInfo struct {
	Events   int    // events in the batch
	Bytes    int    // uncompressed body size
	Attempts int    // attempts made, the last one included
	Status   int    // last HTTP status, 0 when the last attempt got none
	Error    string // last network error class ("never_sent", "maybe_sent"), if any
}

// AttemptInfo describes one upload attempt.
type AttemptInfo struct {
	Events   int           // events in the batch
	Code     string        // HTTP status ("200", "503") or network error class ("never_sent", "maybe_sent")
	Duration time.Duration // time from sending to the end of the response
	Retry    int           // X-Retry-Count sent (0: absent, the batch's first attempt)
	Path     string        // path the outcome takes: PathNone (delivered or final), PathRateLimit, PathBackoff
}

// Hooks are optional callbacks; a nil func is skipped. They run on the worker goroutine (or
// the committing goroutine for OnCommit) and must return quickly. The agent uses them for its
// Prometheus metrics; applications for delivery callbacks.
type Hooks struct {
	// OnDelivered runs when the collector accepted a batch (it left the queue).
	OnDelivered func(BatchInfo)
	// OnDeadLetter runs when a batch was moved to the dead letters; reason says why.
	OnDeadLetter func(b BatchInfo, reason string)
	// OnAttempt runs after every attempt that reached the HTTP client.
	OnAttempt func(AttemptInfo)
	// OnRetry runs before every retry wait with its path and length.
	OnRetry func(path string, wait time.Duration)
	// OnDrop runs when events are dropped by the queue's when_full policy (drop_oldest).
	OnDrop func(reason string, events int)
	// OnCommit runs after each store commit with its event count and duration.
	OnCommit func(events int, d time.Duration)
	// OnEnqueued runs after Enqueue/EnqueueNormalized stored events.
	OnEnqueued func(events int)
}

package uploader

import "time"

// Retry paths, as in Stats().Retry.Path, AttemptInfo.Path and Hooks.OnRetry.
const (
	PathNone      = "none"       // not waiting, or the batch's last attempt was its first
	PathRateLimit = "rate_limit" // a Retry-After wait; does not spend the retry count
	PathBackoff   = "backoff"    // a counted exponential-backoff wait
	PathAuth      = "auth"       // the destination refuses our credentials: held until a probe is accepted; spends no budget
)

// BatchInfo describes a batch when it leaves the queue.
type BatchInfo struct {
	Events   int    // events in the batch
	Bytes    int    // uncompressed body size
	Attempts int    // attempts made, the last one included
	Status   int    // last HTTP status, 0 when the last attempt got none
	Code     string // the last attempt's result code, as AttemptInfo.Code
	Error    string // last network error class ("never_sent", "maybe_sent"), if any
	Source   string // the source the batch's events belong to
}

// AttemptInfo describes one upload attempt.
type AttemptInfo struct {
	Events   int           // events in the batch
	Code     string        // HTTP status ("200", "503"), a destination's own code (Kafka: "ok", "NOT_ENOUGH_REPLICAS") or network error class ("never_sent", "maybe_sent")
	Duration time.Duration // time from sending to the end of the response
	Retry    int           // X-Retry-Count sent (0: absent, the batch's first attempt)
	Path     string        // path the outcome takes: PathNone (delivered or final), PathRateLimit, PathBackoff, PathAuth
}

// Hooks are optional callbacks; a nil func is skipped. They must return quickly, and since
// they run on different goroutines (each field says which), hooks that share state must
// synchronise. The agent uses them for its Prometheus metrics; applications for delivery
// callbacks. With several batches in flight (upload.concurrency other than 1) the hooks said to
// run on the worker or acker goroutine run instead on the goroutine of the batch concerned,
// several at once, and OnDelivered follows the order in which acks commit.
type Hooks struct {
	// OnDelivered runs when the collector accepted a batch and its ack has committed (it left
	// the queue). It runs on the acker goroutine as soon as the ack commits, in delivery
	// order, possibly while the worker goroutine runs the other hooks for a later batch.
	// Flush returning nil and Close returning imply that it has returned for every batch
	// acked before.
	OnDelivered func(BatchInfo)
	// OnDeadLetter runs on the worker goroutine when a batch was moved to the dead letters;
	// reason says why in a sentence (the dead letter's DeadInfo.Detail; its DeadInfo.Reason is
	// one of DeadReasons).
	OnDeadLetter func(b BatchInfo, reason string)
	// OnAttempt runs on the worker goroutine after every attempt that reached the HTTP client.
	OnAttempt func(AttemptInfo)
	// OnRetry runs on the worker goroutine before every retry wait with its path and length.
	OnRetry func(path string, wait time.Duration)
	// OnDrop runs on the store's committing goroutine when events are dropped (by reason:
	// the queue's when_full policy drop_oldest, dead letters past dead.max_bytes, …).
	OnDrop func(reason string, events int)
	// OnCommit runs on the store's committing goroutine after each commit with its event
	// count and duration.
	OnCommit func(events int, d time.Duration)
	// OnCorrupt runs once, on the store's goroutine that found it, when damage shows after Open:
	// the consistency check that runs in the background on a large file failed, or a read or
	// write reached a damaged page. Intake has stopped (Enqueue fails with the same
	// *queue.CorruptError), the file is left as it is, and the application should close the
	// client and have the file recovered (outbox recover).
	OnCorrupt func(err error)
	// OnEnqueued runs on the calling goroutine after Enqueue/EnqueueNormalized stored events,
	// and for EnqueueAsync on the goroutine that calls done, once per commit's calls.
	OnEnqueued func(events int)
}

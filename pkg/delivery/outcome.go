package delivery

import "time"

// Class is the outcome of one upload attempt (docs/CONTRACT.md, "Classification"). Its zero
// value is not a class: a destination (or a replacement classifier) must always set one.
type Class int

// The classes. Each attempt ends in exactly one.
const (
	// ClassSuccess: 2xx. The batch is acknowledged and leaves the queue.
	ClassSuccess Class = iota + 1
	// ClassRateLimited: a retryable status with a usable Retry-After (Outcome.RetryAfter > 0).
	// The rate-limit budget decides the wait; the counted retries are not spent.
	ClassRateLimited
	// ClassRetryable: a retryable status without a usable Retry-After, or a network error
	// (Outcome.NetError says which kind). The counted backoff budget decides the wait.
	ClassRetryable
	// ClassTooLarge: 413. The batch is split in half, or dead-lettered.
	ClassTooLarge
	// ClassRejected: any other status (1xx, 3xx, 4xx, 501, 505, 511…). Split to isolate bad
	// events, or dead-lettered.
	ClassRejected
	// ClassAborted: not an outcome of the attempt at all. Our own context was canceled, or the
	// request could not be made because of us (a request hook's error, a *ConfigError).
	// Outcome.Err is that error, as itself. No budget is spent and the batch stays queued.
	ClassAborted
	// ClassAuthRefused: the destination refused our credentials (401, 403; a Kafka SASL or
	// authorization failure): our configuration, not the events. With upload.on_auth_failure:
	// pause (the default) delivery pauses with the batch queued and the head batch is probed
	// until the destination accepts us again, spending no budget; with dead_letter the batch
	// takes the rejected way.
	ClassAuthRefused
)

var classNames = [...]string{
	ClassSuccess:     "success",
	ClassRateLimited: "rate_limited",
	ClassRetryable:   "retryable",
	ClassTooLarge:    "too_large",
	ClassRejected:    "rejected",
	ClassAborted:     "aborted",
	ClassAuthRefused: "auth_refused",
}

// String returns the lower_snake name, fit for a metric label or a log field ("rate_limited").
func (c Class) String() string {
	if c > 0 && int(c) < len(classNames) {
		return classNames[c]
	}
	return "unknown"
}

// Outcome is what a destination says about one attempt.
type Outcome struct {
	Class      Class
	Status     int           // the HTTP status; 0 when no response arrived
	RetryAfter time.Duration // > 0 only for ClassRateLimited
	NetError   NetErrorClass // set only for a network error (ClassRetryable without Status)
	Err        error         // the transport error, for network errors and ClassAborted; else nil
	// Code, when set, is the result's label in metrics, logs and status (a Kafka error name);
	// empty means the Status, else the NetError class.
	Code string
	// Detail is what the destination answered (a snippet of the response body, an error
	// message); a dead letter keeps it.
	Detail []byte
	// Written reports that the batch may have reached the destination, so an attempt cut
	// short by Close's deadline still counts as a try at the next start.
	Written bool
	// Bytes is the size of what was sent before compression, for logs and BatchInfo.
	Bytes int
	// BackPressure says the destination is overloaded or asks us to slow down (an HTTP 429,
	// a timeout, Kafka's throttling or a request timeout), whatever the class: a throttled
	// Kafka produce that succeeded is a success with back-pressure. The uploader lowers the
	// limit of batches in flight on it; a plain retryable failure (a 503, a reset) does not.
	BackPressure bool
	// Splittable says a rejected batch may hold a few bad events among good ones (an HTTP
	// 400 or 422): with upload.split_rejected a batch of more than one event is split in half
	// to isolate them, where any other rejection dead-letters it whole.
	Splittable bool
}

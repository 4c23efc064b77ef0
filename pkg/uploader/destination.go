package uploader

import (
	"net/http"
	"time"

	"github.com/outboxhq/outbox/pkg/delivery"
	"github.com/outboxhq/outbox/pkg/httpdest"
)

// The destination seam is pkg/delivery's, and the HTTP destination's policy pieces are
// pkg/httpdest's; these aliases keep the names an application of the uploader uses in this
// package, so it can pass a destination or wrap the classifier without importing either.
type (
	// Destination is where the worker delivers batches (delivery.Destination).
	Destination = delivery.Destination
	// BoundedDestination is a destination that takes several batches at once
	// (delivery.BoundedDestination).
	BoundedDestination = delivery.BoundedDestination
	// PreparingDestination is a destination that builds a batch's payload ahead of its first
	// attempt (delivery.PreparingDestination).
	PreparingDestination = delivery.PreparingDestination
	// Batch is one batch as a destination sees it (delivery.Batch).
	Batch = delivery.Batch
	// Outcome is what a destination says about one attempt (delivery.Outcome).
	Outcome = delivery.Outcome
	// Class is the outcome of one attempt (delivery.Class).
	Class = delivery.Class
	// NetErrorClass says whether a failed attempt may have reached the destination
	// (delivery.NetErrorClass).
	NetErrorClass = delivery.NetErrorClass
	// ConfigError is a failure caused by our own configuration before anything was sent
	// (delivery.ConfigError).
	ConfigError = delivery.ConfigError

	// ClassifyFunc classifies one HTTP attempt (httpdest.ClassifyFunc); WithClassifier takes one.
	ClassifyFunc = httpdest.ClassifyFunc
	// RequestHook is called on every HTTP attempt's request (httpdest.RequestHook);
	// WithRequestHook takes one.
	RequestHook = httpdest.RequestHook
	// HookError wraps an error returned by the RequestHook (httpdest.HookError).
	HookError = httpdest.HookError
)

// The classes, as delivery names them.
const (
	ClassSuccess     = delivery.ClassSuccess
	ClassRateLimited = delivery.ClassRateLimited
	ClassRetryable   = delivery.ClassRetryable
	ClassTooLarge    = delivery.ClassTooLarge
	ClassRejected    = delivery.ClassRejected
	ClassAborted     = delivery.ClassAborted
	ClassAuthRefused = delivery.ClassAuthRefused
)

// The network error classes, as delivery names them.
const (
	NeverSent = delivery.NeverSent
	MaybeSent = delivery.MaybeSent
)

// Classify is the HTTP destination's default classifier, httpdest.Classify: wrap it to change
// part of the policy and pass the result to WithClassifier.
func Classify(resp *http.Response, err error, now time.Time) Outcome {
	return httpdest.Classify(resp, err, now)
}

// IsRetryableStatus reports whether an HTTP status is worth retrying (httpdest.IsRetryableStatus),
// for a classifier of one's own.
func IsRetryableStatus(code int) bool { return httpdest.IsRetryableStatus(code) }

// ParseRetryAfter parses a Retry-After header value relative to now (httpdest.ParseRetryAfter),
// for a classifier of one's own.
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	return httpdest.ParseRetryAfter(v, now)
}

package uploader

import (
	"net/http"
	"time"

	"github.com/outboxhq/outbox/pkg/delivery"
	"github.com/outboxhq/outbox/pkg/httpdest"
)

// The destination seam (Destination, Batch, Outcome and its classes) is pkg/delivery's, and
// an application uses it from there. These names are the HTTP destination's policy pieces
// (pkg/httpdest) that WithClassifier and WithRequestHook take, so an application can wrap
// the classifier or sign requests without importing it.
type (
	// ClassifyFunc classifies one HTTP attempt (httpdest.ClassifyFunc); WithClassifier takes one.
	ClassifyFunc = httpdest.ClassifyFunc
	// RequestHook is called on every HTTP attempt's request (httpdest.RequestHook);
	// WithRequestHook takes one.
	RequestHook = httpdest.RequestHook
	// HookError wraps an error returned by the RequestHook (httpdest.HookError).
	HookError = httpdest.HookError
)

// Classify is the HTTP destination's default classifier, httpdest.Classify: wrap it to change
// part of the policy and pass the result to WithClassifier.
func Classify(resp *http.Response, err error, now time.Time) delivery.Outcome {
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

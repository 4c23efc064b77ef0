package uploader

import (
	"net/http"
	"time"
)

// verdict is an Outcome as the worker routes it.
type verdict struct {
	kind       Class
	retryAfter time.Duration
	status     int
	errClass   string // network error class, "" when a status arrived
	err        error
}

// Aliases that keep route's switch readable.
const (
	vSuccess     = ClassSuccess
	vRateLimited = ClassRateLimited
	vRetryable   = ClassRetryable
	vTooLarge    = ClassTooLarge
	vRejected    = ClassRejected
	vAborted     = ClassAborted
)

// toVerdict converts a classifier's Outcome. A replacement classifier that answers
// ClassRateLimited without a positive RetryAfter gets the counted path, as SPEC section 5 says
// of an unusable Retry-After; an unknown class is treated as rejected.
func toVerdict(o Outcome, resp *http.Response, err error) verdict {
	v := verdict{kind: o.Class, retryAfter: o.RetryAfter, status: o.Status, errClass: string(o.NetError), err: o.Err}
	if v.status == 0 && resp != nil && o.Class != ClassAborted {
		v.status = resp.StatusCode
	}
	if v.err == nil && v.status == 0 {
		v.err = err
	}
	if v.kind == ClassRateLimited && v.retryAfter <= 0 {
		v.kind = ClassRetryable
	}
	if v.kind == ClassRetryable && v.status == 0 && v.errClass == "" {
		v.errClass = string(MaybeSent)
	}
	if v.kind < ClassSuccess || v.kind > ClassAborted {
		v.kind = ClassRejected
	}
	return v
}

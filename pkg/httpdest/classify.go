package httpdest

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/outboxhq/outbox/pkg/delivery"
)

// ClassifyFunc classifies one attempt. resp and err are what http.Client.Do returned (the body
// may already be consumed: only StatusCode and Header are read), now is the time the response
// arrived, against which a Retry-After date is measured. A replacement goes in Config.Classify
// (uploader.WithClassifier); wrap Classify to change part of the policy.
type ClassifyFunc func(resp *http.Response, err error, now time.Time) delivery.Outcome

var _ ClassifyFunc = Classify

// Classify is the default classifier (the classes are delivery's):
//
//	err is or wraps context.Canceled, *HookError, *ConfigError  → ClassAborted (Err: err)
//	other err, no response                                      → ClassRetryable, NetError from NetworkErrorClass
//	2xx                                                         → ClassSuccess
//	IsRetryableStatus and a usable Retry-After                  → ClassRateLimited
//	IsRetryableStatus otherwise                                 → ClassRetryable
//	413                                                         → ClassTooLarge
//	401, 403                                                    → ClassAuthRefused
//	anything else (1xx, 3xx, other 4xx and 5xx)                 → ClassRejected
//
// BackPressure is set for a 429 (with or without a Retry-After) and a timeout; Splittable for
// a 400 or 422, the rejections a few bad events cause.
//
// A response together with an error (http.Client's CheckRedirect failure) is classified by its
// status, with the error in Err. A context deadline is a timeout, hence a network error: the
// uploader checks its own shutdown before calling Classify. No response and no error is aborted.
func Classify(resp *http.Response, err error, now time.Time) delivery.Outcome {
	if err != nil {
		var hookErr *HookError
		var cfgErr *delivery.ConfigError
		if errors.As(err, &hookErr) {
			return delivery.Outcome{Class: delivery.ClassAborted, Err: err, Code: "hook_error"}
		}
		if errors.Is(err, context.Canceled) || errors.As(err, &cfgErr) {
			return delivery.Outcome{Class: delivery.ClassAborted, Err: err}
		}
		if resp == nil {
			return delivery.Outcome{Class: delivery.ClassRetryable, NetError: delivery.NetworkErrorClass(err), Err: err,
				BackPressure: isTimeout(err)}
		}
	}
	if resp == nil {
		return delivery.Outcome{Class: delivery.ClassAborted, Err: errNoResponse}
	}
	o := delivery.Outcome{Status: resp.StatusCode, Err: err}
	switch code := resp.StatusCode; {
	case code >= 200 && code <= 299:
		o.Class = delivery.ClassSuccess
	case IsRetryableStatus(code):
		o.Class = delivery.ClassRetryable
		if d, ok := ParseRetryAfter(resp.Header.Get("Retry-After"), now); ok {
			o.Class, o.RetryAfter = delivery.ClassRateLimited, d
		}
		o.BackPressure = code == http.StatusTooManyRequests
	case code == http.StatusRequestEntityTooLarge:
		o.Class = delivery.ClassTooLarge
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		o.Class = delivery.ClassAuthRefused
	default:
		o.Class = delivery.ClassRejected
		o.Splittable = code == http.StatusBadRequest || code == http.StatusUnprocessableEntity
	}
	return o
}

// isTimeout reports whether an attempt's error is a timeout (upload.timeout, or the
// network's): back-pressure, as a queue at the collector shows itself.
func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// errNoResponse is the Err of the outcome of a (resp, err) pair that are both nil: a
// replacement transport broke its contract.
var errNoResponse = errors.New("uploader: no response and no error from the HTTP client")

// IsRetryableStatus reports whether a status is worth retrying: 408, 410, 429,
// 460, and 500–599 except 501 (Not Implemented), 505 (HTTP Version Not Supported) and 511
// (Network Authentication Required), which will not change on their own.
func IsRetryableStatus(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusGone, http.StatusTooManyRequests, 460:
		return true
	case http.StatusNotImplemented, http.StatusHTTPVersionNotSupported, http.StatusNetworkAuthenticationRequired:
		return false
	}
	return code >= 500 && code <= 599
}

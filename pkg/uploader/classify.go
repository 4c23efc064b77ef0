package uploader

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Class is the outcome of one upload attempt (docs/CONTRACT.md, "Classification"). Its zero value is not a class:
// a ClassifyFunc must always set one.
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
	// request could not be made because of us (a *HookError, a *ConfigError). Outcome.Err is that
	// error, as itself. No budget is spent and the batch stays queued.
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

// Outcome is what a ClassifyFunc says about one attempt.
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
}

// ClassifyFunc classifies one attempt. resp and err are what http.Client.Do returned (the body
// may already be consumed: only StatusCode and Header are read), now is the time the response
// arrived, against which a Retry-After date is measured. The uploader accepts a replacement
// (WithClassifier); wrap Classify to change part of the policy.
type ClassifyFunc func(resp *http.Response, err error, now time.Time) Outcome

var _ ClassifyFunc = Classify

// Classify is the default classifier:
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
// A response together with an error (http.Client's CheckRedirect failure) is classified by its
// status, with the error in Err. A context deadline is a timeout, hence a network error: the
// uploader checks its own shutdown before calling Classify. No response and no error is aborted.
func Classify(resp *http.Response, err error, now time.Time) Outcome {
	if err != nil {
		var hookErr *HookError
		var cfgErr *ConfigError
		if errors.Is(err, context.Canceled) || errors.As(err, &hookErr) || errors.As(err, &cfgErr) {
			return Outcome{Class: ClassAborted, Err: err}
		}
		if resp == nil {
			return Outcome{Class: ClassRetryable, NetError: NetworkErrorClass(err), Err: err}
		}
	}
	if resp == nil {
		return Outcome{Class: ClassAborted, Err: errNoResponse}
	}
	o := Outcome{Status: resp.StatusCode, Err: err}
	switch code := resp.StatusCode; {
	case code >= 200 && code <= 299:
		o.Class = ClassSuccess
	case IsRetryableStatus(code):
		o.Class = ClassRetryable
		if d, ok := ParseRetryAfter(resp.Header.Get("Retry-After"), now); ok {
			o.Class, o.RetryAfter = ClassRateLimited, d
		}
	case code == http.StatusRequestEntityTooLarge:
		o.Class = ClassTooLarge
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		o.Class = ClassAuthRefused
	default:
		o.Class = ClassRejected
	}
	return o
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

// normalized is o as the worker routes it. A destination (or a replacement classifier) that
// answers ClassRateLimited without a positive RetryAfter gets the counted path, as an unusable
// Retry-After does; a retryable failure with neither a status nor a code is a network error
// that may have reached the destination (maybe_sent); an unknown class is treated as rejected.
func (o Outcome) normalized() Outcome {
	if o.Class == ClassRateLimited && o.RetryAfter <= 0 {
		o.Class = ClassRetryable
	}
	if o.Class == ClassRetryable && o.Status == 0 && o.NetError == "" && o.Code == "" {
		o.NetError = MaybeSent
	}
	if o.Class < ClassSuccess || o.Class > ClassAuthRefused {
		o.Class = ClassRejected
	}
	return o
}

// code is the result's label in metrics, logs and status (AttemptInfo.Code,
// UploadStats.LastResult): Code when set, else the HTTP status, the network error class, or
// why nothing was sent ("hook_error", "config_error", "aborted").
func (o Outcome) code() string {
	switch {
	case o.Code != "":
		return o.Code
	case o.Status != 0:
		return strconv.Itoa(o.Status)
	case o.NetError != "":
		return string(o.NetError)
	case o.Class == ClassAborted:
		return abortedCode(o.Err)
	}
	return "error"
}

// describe says what the destination or the network answered, for logs and dead-letter
// reasons.
func (o Outcome) describe() string {
	switch {
	case o.Status != 0:
		return (&StatusError{Status: o.Status, Body: o.Detail}).Error()
	case o.NetError != "":
		return fmt.Sprintf("%s network error: %v", o.NetError, o.Err)
	case o.Err != nil:
		return o.Err.Error()
	}
	return o.code()
}

// asError is the failure as an error value, for WaitingError.
func (o Outcome) asError() error {
	if o.Status != 0 {
		return &StatusError{Status: o.Status, Body: o.Detail}
	}
	return o.Err
}

package uploader

import (
	"fmt"
	"strconv"

	"github.com/outboxhq/outbox/pkg/delivery"
)

// normalized is o as the worker routes it. A destination (or a replacement classifier) that
// answers ClassRateLimited without a positive RetryAfter gets the counted path, as an unusable
// Retry-After does; a retryable failure with neither a status nor a code is a network error
// that may have reached the destination (maybe_sent); an unknown class is treated as rejected.
func normalized(o delivery.Outcome) delivery.Outcome {
	if o.Class == delivery.ClassRateLimited && o.RetryAfter <= 0 {
		o.Class = delivery.ClassRetryable
	}
	if o.Class == delivery.ClassRetryable && o.Status == 0 && o.NetError == "" && o.Code == "" {
		o.NetError = delivery.MaybeSent
	}
	if o.Class < delivery.ClassSuccess || o.Class > delivery.ClassAuthRefused {
		o.Class = delivery.ClassRejected
	}
	return o
}

// resultCode is the result's label in metrics, logs and status (AttemptInfo.Code,
// UploadStats.LastResult): Code when set, else the HTTP status, the network error class, why
// nothing was sent ("hook_error", "config_error", "aborted"), or else the class's name
// ("success", "retryable"…): what the destination said, never a guess.
func resultCode(o delivery.Outcome) string {
	switch {
	case o.Code != "":
		return o.Code
	case o.Status != 0:
		return strconv.Itoa(o.Status)
	case o.NetError != "":
		return string(o.NetError)
	case o.Class == delivery.ClassAborted:
		return abortedCode(o.Err)
	}
	return o.Class.String()
}

// describe says what the destination or the network answered, for logs and dead-letter
// reasons.
func describe(o delivery.Outcome) string {
	switch {
	case o.Status != 0:
		return asError(o).Error()
	case o.NetError != "":
		return fmt.Sprintf("%s network error: %v", o.NetError, o.Err)
	case o.Err != nil:
		return o.Err.Error()
	}
	return resultCode(o)
}

// asError is the failure as an error value, for WaitingError.
func asError(o delivery.Outcome) error {
	if o.Status != 0 {
		return &StatusError{Status: o.Status, Body: o.Detail}
	}
	return o.Err
}
